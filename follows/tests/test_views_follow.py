"""Following a topic: the services, the POST view and the button on the topic page."""

import re

import pytest
from django.test import Client

from accounts.tests.factories import PASSWORD as READER_PASSWORD
from accounts.tests.factories import UserFactory as ReaderFactory
from follows.models import Follow
from follows.services import follow_create, follow_delete
from topics.tests.factories import TopicFactory, UserFactory

pytestmark = pytest.mark.django_db


def follow_url(topic):
    return f"/follows/topics/{topic.slug}/"


def test_follow_create_is_idempotent():
    user, topic = UserFactory(), TopicFactory()

    first = follow_create(user=user, topic=topic)
    second = follow_create(user=user, topic=topic)

    assert first.pk == second.pk
    assert list(Follow.objects.values_list("user_id", "topic_id")) == [(user.pk, topic.pk)]


def test_follow_delete_removes_only_that_follow_and_tolerates_none():
    user, other_user = UserFactory(), UserFactory()
    topic, other_topic = TopicFactory(), TopicFactory()
    follow_create(user=user, topic=topic)
    follow_create(user=user, topic=other_topic)
    follow_create(user=other_user, topic=topic)

    follow_delete(user=user, topic=topic)
    follow_delete(user=user, topic=topic)

    assert set(Follow.objects.values_list("user_id", "topic_id")) == {
        (user.pk, other_topic.pk),
        (other_user.pk, topic.pk),
    }


def test_anonymous_post_goes_to_login_with_next_and_changes_nothing(client):
    topic = TopicFactory()

    response = client.post(follow_url(topic), {"action": "follow"})

    assert response.status_code == 302
    confirm = f"/follows/topics/{topic.slug}/confirm/"
    assert response["Location"] == f"/accounts/login/?next={confirm}"
    assert not Follow.objects.exists()
    login_page = client.get(response["Location"]).content.decode()
    assert f'name="next" value="{confirm}"' in login_page


def test_follow_and_unfollow_then_back_to_the_topic_page(client):
    user, topic = UserFactory(), TopicFactory()
    client.force_login(user)

    response = client.post(follow_url(topic), {"action": "follow"})
    assert response.status_code == 302
    assert response["Location"] == topic.get_absolute_url()
    assert Follow.objects.filter(user=user, topic=topic).count() == 1
    page = client.get(response["Location"]).content.decode()
    assert f"You now follow {topic.name}." in page
    assert "Unfollow this topic" in page

    # A repeated submission of the same form leaves the same state.
    client.post(follow_url(topic), {"action": "follow"})
    assert Follow.objects.filter(user=user, topic=topic).count() == 1

    response = client.post(follow_url(topic), {"action": "unfollow"})
    assert response["Location"] == topic.get_absolute_url()
    assert not Follow.objects.exists()


def test_post_without_action_toggles(client):
    user, topic = UserFactory(), TopicFactory()
    client.force_login(user)

    client.post(follow_url(topic))
    assert Follow.objects.filter(user=user, topic=topic).exists()
    client.post(follow_url(topic))
    assert not Follow.objects.exists()


def test_get_unknown_inactive_and_bad_action_change_nothing(client):
    user, topic = UserFactory(), TopicFactory()
    inactive = TopicFactory(active=False)
    follow_create(user=user, topic=topic)
    client.force_login(user)

    assert client.get(follow_url(topic)).status_code == 405
    assert client.post("/follows/topics/no-such-topic/", {"action": "follow"}).status_code == 404
    assert client.post(follow_url(inactive), {"action": "follow"}).status_code == 404
    assert client.post(follow_url(topic), {"action": "delete-all"}).status_code == 400
    assert list(Follow.objects.values_list("user_id", "topic_id")) == [(user.pk, topic.pk)]


def test_button_and_follower_count_on_the_topic_page(client):
    topic = TopicFactory()
    follower, other = UserFactory(), UserFactory()

    page = client.get(topic.get_absolute_url()).content.decode()
    assert "Follow this topic" in page and "0 followers" in page

    follow_create(user=follower, topic=topic)
    page = client.get(topic.get_absolute_url()).content.decode()
    assert "1 follower<" in page

    follow_create(user=other, topic=topic)
    client.force_login(follower)
    page = client.get(topic.get_absolute_url()).content.decode()
    assert "2 followers" in page
    assert "Unfollow this topic" in page and ">Follow this topic<" not in page
    assert '<input type="hidden" name="action" value="unfollow">' in page


def test_the_rendered_form_posts_with_its_csrf_token():
    user, topic = UserFactory(), TopicFactory()
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)

    assert client.post(follow_url(topic), {"action": "follow"}).status_code == 403
    assert not Follow.objects.exists()

    page = client.get(topic.get_absolute_url()).content.decode()
    form = re.search(
        r'(?s)<form method="post" action="([^"]+)" class="follow-form">.*?</form>', page
    )
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.group(0)).group(1)
    response = client.post(form.group(1), {"csrfmiddlewaretoken": token, "action": "follow"})

    assert response.status_code == 302
    assert Follow.objects.filter(user=user, topic=topic).exists()


def test_login_keeps_the_follow_intent_and_logout_comes_back(client):
    # allauth logs in by email, and only once the address is verified.
    reader = ReaderFactory(email="reader@example.org")
    topic = TopicFactory()
    login_url = client.post(follow_url(topic), {"action": "follow"})["Location"]
    confirm = f"/follows/topics/{topic.slug}/confirm/"

    response = client.post(
        login_url,
        {"login": "reader@example.org", "password": READER_PASSWORD, "next": confirm},
    )
    assert response.status_code == 302
    assert response["Location"] == confirm
    assert not Follow.objects.exists()  # logging in alone follows nothing (no GET writes)
    page = client.get(confirm).content.decode()
    assert f"Follow {topic.display_name}?" in page and 'value="follow"' in page
    response = client.post(follow_url(topic), {"action": "follow"})
    assert response["Location"] == topic.get_absolute_url()
    assert Follow.objects.filter(user=reader, topic=topic).exists()
    assert "You follow" in client.get(confirm).content.decode()
    page = client.get(topic.get_absolute_url()).content.decode()
    assert "reader@example.org" in page and "Unfollow this topic" in page

    response = client.post("/accounts/logout/", {"next": topic.get_absolute_url()})
    assert response["Location"] == topic.get_absolute_url()
    assert "Log in" in client.get(topic.get_absolute_url()).content.decode()


def test_confirm_page_needs_a_login_and_a_known_topic(client):
    topic = TopicFactory()
    confirm = f"/follows/topics/{topic.slug}/confirm/"
    response = client.get(confirm)
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={confirm}"
    client.force_login(UserFactory())
    assert client.get("/follows/topics/no-such-topic/confirm/").status_code == 404
    assert client.post(confirm).status_code == 405
    assert not Follow.objects.exists()


# --- in place, for static/js/follow.js --------------------------------------------------------

JSON = {"HTTP_ACCEPT": "application/json"}
BROWSER = {"HTTP_ACCEPT": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


def test_a_json_request_gets_the_state_and_the_count(client):
    user, topic = UserFactory(), TopicFactory()
    follow_create(user=UserFactory(), topic=topic)
    client.force_login(user)

    response = client.post(follow_url(topic), {"action": "follow"}, **JSON)
    assert response.status_code == 200
    assert response.json() == {"following": True, "follower_count": 2}
    # No flash message is left for the next page load.
    assert "You now follow" not in client.get(topic.get_absolute_url()).content.decode()

    response = client.post(follow_url(topic), {"action": "unfollow"}, **JSON)
    assert response.json() == {"following": False, "follower_count": 1}
    assert not Follow.objects.filter(user=user).exists()

    response = client.post(follow_url(topic), {"action": "nonsense"}, **JSON)
    assert response.status_code == 400 and "action" in response.json()["error"]


def test_a_browser_accept_header_still_gets_the_redirect(client):
    user, topic = UserFactory(), TopicFactory()
    client.force_login(user)
    response = client.post(follow_url(topic), {"action": "follow"}, **BROWSER)
    assert response.status_code == 302
    assert response["Location"] == topic.get_absolute_url()


def test_an_anonymous_json_request_gets_401_with_the_login_url(client):
    topic = TopicFactory()
    response = client.post(follow_url(topic), {"action": "follow"}, **JSON)
    assert response.status_code == 401
    assert (
        response.json()["login_url"]
        == f"/accounts/login/?next=/follows/topics/{topic.slug}/confirm/"
    )
    assert not Follow.objects.exists()


def test_the_topic_page_loads_the_script_and_shows_no_follower_names(client):
    topic = TopicFactory()
    follow_create(user=UserFactory(username="secret-follower"), topic=topic)
    client.force_login(UserFactory())
    page = client.get(topic.get_absolute_url()).content.decode()
    assert '<script src="/static/js/follow.js" defer></script>' in page
    assert "1 follower<" in page
    assert "secret-follower" not in page


def test_anonymous_readers_get_a_link_to_log_in_and_come_back_not_a_form(client):
    topic = TopicFactory(slug="graph-learning")
    page = client.get(topic.get_absolute_url()).content.decode()

    link = re.search(r'<a class="button-link" href="([^"]+)">Follow this topic', page)
    assert link.group(1) == "/accounts/login/?next=/follows/topics/graph-learning/confirm/"
    assert "0 followers" in page
    # No form that posts, so nothing personal: one copy serves every anonymous reader.
    assert 'method="post"' not in page and "csrfmiddlewaretoken" not in page
    assert "follow.js" not in page
    assert client.get(link.group(1)).status_code == 200
