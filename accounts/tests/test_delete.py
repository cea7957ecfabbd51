"""Deleting an account: the service and the password-confirmed page."""

import re

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from accounts.services import user_delete
from accounts.tests.factories import PASSWORD, UserFactory
from accounts.tests.mail import signed_in_user_id
from follows.models import Follow
from topics.tests.factories import TopicFactory

pytestmark = pytest.mark.django_db

User = get_user_model()


def test_user_delete_removes_the_user_with_their_addresses_and_follows_only():
    user, other = UserFactory(), UserFactory()
    topic = TopicFactory()
    Follow.objects.create(user=user, kind="topic", topic=topic)
    Follow.objects.create(user=user, kind="search", query="agent AND reinforcement")
    kept = Follow.objects.create(user=other, kind="topic", topic=topic)

    deleted = user_delete(user=user)

    assert deleted["follows.Follow"] == 2
    assert deleted["account.EmailAddress"] == 1
    assert list(User.objects.values_list("pk", flat=True)) == [other.pk]
    assert list(Follow.objects.all()) == [kept]
    assert list(EmailAddress.objects.values_list("user_id", flat=True)) == [other.pk]
    assert topic.__class__.objects.filter(pk=topic.pk).exists()


def log_in(client, email, password=PASSWORD):
    return client.post("/accounts/login/", {"login": email, "password": password})


def test_delete_page_asks_for_the_password_and_a_wrong_one_deletes_nothing():
    user = UserFactory()
    Follow.objects.create(user=user, kind="topic", topic=TopicFactory())
    client = Client()
    log_in(client, user.email)

    page = client.get("/accounts/delete/").content.decode()
    assert '<label for="id_password">' in page
    assert 'type="password"' in page

    response = client.post("/accounts/delete/", {"password": "not my password"})

    assert response.status_code == 200
    assert "Incorrect password." in response.content.decode()
    assert User.objects.filter(pk=user.pk).exists()
    assert Follow.objects.filter(user=user).count() == 1
    assert signed_in_user_id(client) == str(user.pk)


def test_delete_with_the_password_removes_everything_logs_out_and_login_fails_after():
    user = UserFactory(email="ada@example.org")
    other = UserFactory()
    topic = TopicFactory()
    Follow.objects.create(user=user, kind="topic", topic=topic)
    Follow.objects.create(user=other, kind="topic", topic=topic)
    client = Client()
    log_in(client, "ada@example.org")

    response = client.post("/accounts/delete/", {"password": PASSWORD})

    assert response.status_code == 302
    assert response["Location"] == reverse("topics:index")
    assert signed_in_user_id(client) is None
    assert not User.objects.filter(pk=user.pk).exists()
    assert not EmailAddress.objects.filter(email="ada@example.org").exists()
    assert list(Follow.objects.values_list("user_id", flat=True)) == [other.pk]
    page = client.get(response["Location"]).content.decode()
    assert "Your account and all its data have been deleted." in page
    assert "Log in" in page

    response = log_in(Client(), "ada@example.org")
    assert response.status_code == 200
    assert (
        "The email address and/or password you specified are not correct."
        in response.content.decode()
    )


def test_delete_needs_a_signed_in_user_and_a_post():
    user = UserFactory()
    client = Client()

    response = client.post("/accounts/delete/", {"password": PASSWORD})
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/accounts/delete/"
    assert User.objects.filter(pk=user.pk).exists()

    client.force_login(user)
    assert client.put("/accounts/delete/").status_code == 405
    assert client.get("/accounts/delete/").status_code == 200
    assert User.objects.filter(pk=user.pk).exists()


def test_the_delete_form_carries_a_csrf_token_that_is_enforced():
    user = UserFactory()
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)

    assert client.post("/accounts/delete/", {"password": PASSWORD}).status_code == 403
    assert User.objects.filter(pk=user.pk).exists()

    page = client.get("/accounts/delete/").content.decode()
    form = re.search(
        r'(?s)<form class="account-form" method="post" action="([^"]+)">.*?</form>', page
    )
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.group(0)).group(1)
    response = client.post(form.group(1), {"csrfmiddlewaretoken": token, "password": PASSWORD})
    assert response.status_code == 302
    assert not User.objects.filter(pk=user.pk).exists()
