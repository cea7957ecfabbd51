"""The personal feed page ``/feed/``: papers of every follow, grouped by day, labelled with
the follows that matched, seen marking across visits, pagination, privacy and query count."""

import datetime as dt
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from follows.feed_services import feed_visit, private_feed_token
from follows.models import FeedState, Follow, SearchMatch
from papers.models import Paper
from papers.tests.factories import (
    AuthorshipFactory,
    PaperAffiliationFactory,
    PaperFactory,
)
from topics.models import Assignment
from topics.tests.factories import AssignmentFactory, TopicFactory, UserFactory

pytestmark = pytest.mark.django_db

FEED = "/feed/"


def paper_in(topic, **kwargs) -> Paper:
    paper = PaperFactory(**kwargs)
    AssignmentFactory(paper=paper, topic=topic)
    return paper


def search_follow(user, query, papers) -> Follow:
    """A saved-search follow with its matches stored, as the matching service leaves them."""
    follow = Follow.objects.create(user=user, kind=Follow.Kind.SEARCH, query=query)
    SearchMatch.objects.bulk_create(SearchMatch(follow=follow, paper=p) for p in papers)
    return follow


def titles_in(html: str) -> list[str]:
    return re.findall(r'<h3 class="card-title"><a href="[^"]*">([^<]*)</a></h3>', html)


def test_anonymous_visitor_goes_to_login():
    from django.test import Client

    response = Client().get(FEED)

    assert response.status_code == 302
    assert response["Location"] == f"{reverse('account_login')}?next=/feed/"
    assert not FeedState.objects.exists()


def test_newest_first_grouped_by_day_with_matched_follow_labels(client):
    user = UserFactory()
    agents = TopicFactory(name="LLM Agent Training", short_name="LLM")
    parent = TopicFactory(name="Robotics")
    child = TopicFactory(name="Grasping", parent=parent)
    oct2 = paper_in(agents, title="Agents on Oct 2", submitted=dt.date(2026, 10, 2))
    both = paper_in(agents, title="Agents and search on Sep 30", submitted=dt.date(2026, 9, 30))
    grasp = paper_in(child, title="Grasping on Sep 30", submitted=dt.date(2026, 9, 30))
    only_search = PaperFactory(title="Search only on Sep 29", submitted=dt.date(2026, 9, 29))
    PaperFactory(title="Not followed", submitted=dt.date(2026, 10, 3))
    rejected = paper_in(agents, title="Rejected", submitted=dt.date(2026, 10, 3))
    Assignment.objects.filter(paper=rejected).update(state=Assignment.State.REJECTED)
    Follow.objects.create(user=user, topic=agents)
    Follow.objects.create(user=user, topic=parent)
    search_follow(user, "reward shaping", [both, only_search])
    client.force_login(user)

    response = client.get(FEED)

    assert response.status_code == 200
    html = response.content.decode()
    # Newest first by submitted date; within a day, the paper matching more follows first.
    assert titles_in(html) == [
        oct2.title,
        both.title,
        grasp.title,
        only_search.title,
    ]
    days = re.findall(r'<h2 id="feed-day-([\d-]+)">', html)
    assert days == ["2026-10-02", "2026-09-30", "2026-09-29"]
    assert "Fri, Oct 2, 2026" in html
    sections = html.split('<section class="feed-day"')[1:]
    assert titles_in(sections[1]) == [both.title, grasp.title]

    def labels(title):
        item = html[: html.index(f">{title}<")].rsplit('<div class="feed-item', 1)[1]
        return re.sub(
            r"<[^>]+>", "", " ".join(re.findall(r'<span class="matched">(.*?)</span>', item))
        )

    assert labels(oct2.title) == "Topic: LLM: LLM Agent Training"
    assert labels(both.title) == "Topic: LLM: LLM Agent Training Search: “reward shaping”"
    # A parent topic's follow matches its descendants' papers.
    assert labels(grasp.title) == "Topic: Robotics"
    assert labels(only_search.title) == "Search: “reward shaping”"
    assert f'href="{agents.get_absolute_url()}"' in html


def test_seen_marking_across_two_visits(client):
    user = UserFactory()
    topic = TopicFactory()
    Follow.objects.create(user=user, topic=topic)
    now = timezone.now()
    old = paper_in(topic, title="Stored before the first visit", submitted=dt.date(2026, 9, 1))
    new = paper_in(topic, title="Stored after the first visit", submitted=dt.date(2026, 8, 1))
    Paper.objects.filter(pk=old.pk).update(created_at=now - dt.timedelta(hours=3))
    Paper.objects.filter(pk=new.pk).update(created_at=now - dt.timedelta(hours=1))
    # The first visit, two hours ago (time passed into the service, not slept).
    feed_visit(user=user, now=now - dt.timedelta(hours=2))
    client.force_login(user)

    def seen_titles():
        html = client.get(FEED).content.decode()
        items = html.split('<div class="feed-item')[1:]
        return {titles_in(item)[0]: item.startswith(' seen"') for item in items}

    # This request starts a second visit: what was stored before the first one is seen.
    assert seen_titles() == {old.title: True, new.title: False}
    assert 'class="seen-badge"' in client.get(FEED).content.decode()
    # Further requests belong to the same visit: nothing more becomes seen.
    assert seen_titles() == {old.title: True, new.title: False}
    state = FeedState.objects.get(user=user)
    assert state.seen_before == now - dt.timedelta(hours=2)


def test_first_visit_marks_nothing_seen(client):
    user = UserFactory()
    topic = TopicFactory()
    Follow.objects.create(user=user, topic=topic)
    paper_in(topic)
    client.force_login(user)

    html = client.get(FEED).content.decode()

    assert "seen-badge" not in html
    assert FeedState.objects.get(user=user).seen_before is None


def test_pagination_thirty_a_page(client):
    user = UserFactory()
    topic = TopicFactory()
    Follow.objects.create(user=user, topic=topic)
    papers = [
        paper_in(topic, submitted=dt.date(2026, 9, 1) + dt.timedelta(days=i)) for i in range(31)
    ]
    client.force_login(user)

    first = client.get(FEED).content.decode()
    second = client.get(FEED, {"page": 2}).content.decode()

    assert len(titles_in(first)) == 30
    assert titles_in(first)[0] == papers[-1].title
    assert titles_in(second) == [papers[0].title]
    assert "Page 1 of 2" in first and 'rel="next" href="?page=2"' in first
    assert "Page 2 of 2" in second and 'rel="prev" href="?page=1"' in second
    # Out-of-range and junk page numbers fall back as the topic page does.
    assert titles_in(client.get(FEED, {"page": 99}).content.decode()) == [papers[0].title]
    assert len(titles_in(client.get(FEED, {"page": "x"}).content.decode())) == 30


def _rich_papers(topic, other_topic, follow, count):
    for i in range(count):
        paper = paper_in(topic, submitted=dt.date(2026, 9, 1) + dt.timedelta(days=i % 5))
        AssignmentFactory(paper=paper, topic=other_topic)
        for position in range(5):
            AuthorshipFactory(paper=paper, position=position)
        for position in range(4):
            PaperAffiliationFactory(paper=paper, position=position)
        SearchMatch.objects.create(follow=follow, paper=paper)


def test_query_count_does_not_grow_with_the_papers(client, django_assert_max_num_queries):
    user = UserFactory()
    topic, other_topic = TopicFactory(), TopicFactory()
    Follow.objects.create(user=user, topic=topic)
    Follow.objects.create(user=user, topic=other_topic)
    follow = search_follow(user, "agents", [])
    client.force_login(user)
    client.get(FEED)  # the feed state exists from here on, as for any returning user

    _rich_papers(topic, other_topic, follow, 2)
    with CaptureQueriesContext(connection) as few:
        assert client.get(FEED).status_code == 200

    _rich_papers(topic, other_topic, follow, 28)
    # 16, and up to 3 to rank by closeness to the saved papers (feed_rank).
    with django_assert_max_num_queries(19):
        with CaptureQueriesContext(connection) as many:
            html = client.get(FEED).content.decode()

    assert len(titles_in(html)) == 30
    assert len(many) == len(few)


def test_users_see_only_their_own_feed(client):
    alice, bob = UserFactory(), UserFactory()
    secret_topic = TopicFactory(name="Alice's topic")
    paper = paper_in(secret_topic, title="Only Alice follows this")
    Follow.objects.create(user=alice, topic=secret_topic)
    search_follow(alice, "alice only query", [paper])
    alice_state = feed_visit(user=alice)
    client.force_login(bob)

    html = client.get(FEED).content.decode()

    assert paper.title not in html
    assert "Alice&#x27;s topic" not in html and "alice only query" not in html
    assert private_feed_token(state=alice_state) not in html
    assert "you don't follow anything yet" in html.lower()


def test_regenerate_changes_only_the_requesting_users_key(client):
    alice, bob = UserFactory(), UserFactory()
    alice_key = feed_visit(user=alice).private_feed_key
    client.force_login(bob)
    client.get(FEED)
    bob_key = FeedState.objects.get(user=bob).private_feed_key

    response = client.post(reverse("feed:regenerate"), {"user": alice.pk})

    assert response.status_code == 302 and response["Location"] == FEED
    assert FeedState.objects.get(user=alice).private_feed_key == alice_key
    new_bob = FeedState.objects.get(user=bob)
    assert new_bob.private_feed_key != bob_key
    html = client.get(FEED).content.decode()
    assert "The old address no longer works." in html
    assert private_feed_token(state=new_bob) in html


def test_regenerate_needs_post_and_login(client):
    user = UserFactory()
    assert client.post(reverse("feed:regenerate")).status_code == 302  # to the login page
    assert not FeedState.objects.exists()
    client.force_login(user)
    assert client.get(reverse("feed:regenerate")).status_code == 405


def test_page_shows_the_private_feed_url_and_a_regenerate_form(client, settings):
    settings.SITE_URL = "https://papers.example.org"
    user = UserFactory()
    client.force_login(user)

    html = client.get(FEED).content.decode()

    token = private_feed_token(state=FeedState.objects.get(user=user))
    url = f"https://papers.example.org/feed/atom/{token}/"
    assert f'value="{url}"' in html
    assert (
        '<link rel="alternate" type="application/atom+xml"'
        f' title="Your feed (private Atom feed)" href="{url}">' in html
    )
    assert (
        f'<form method="post" action="{reverse("feed:regenerate")}" class="regenerate-form">'
        in html
    )


def test_empty_states_link_to_the_topics(client):
    user = UserFactory()
    client.force_login(user)
    topics_url = reverse("topics:index")

    html = client.get(FEED).content.decode()
    assert "you don't follow anything yet" in html.lower()
    assert f'<a href="{topics_url}">Browse the topics</a>' in html

    Follow.objects.create(user=user, topic=TopicFactory())
    html = client.get(FEED).content.decode()
    assert "Nothing new in what you follow yet." in html
    assert f'<a href="{topics_url}">browse the topics</a>' in html


def test_paper_text_is_shown_as_text(client):
    user = UserFactory()
    topic = TopicFactory()
    Follow.objects.create(user=user, topic=topic)
    paper_in(topic, title="<script>alert(1)</script>")
    search_follow(user, '"<b>bold</b>"', [])
    client.force_login(user)

    html = client.get(FEED).content.decode()

    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
