"""The feed at scale: its papers come from the merged newest rows of the followed subtrees and
the saved searches, in ``user_papers`` order, at most ``FEED_MAX_PAPERS`` of them."""

import datetime as dt
import re

import pytest
from django.utils import timezone

from follows import feed_selectors
from follows.models import Follow, SearchMatch
from follows.selectors import user_papers
from papers.models import Paper
from papers.tests.factories import PaperFactory
from topics.cards import PaperCard
from topics.tests.factories import AssignmentFactory, TopicFactory, UserFactory

pytestmark = pytest.mark.django_db

DAY = dt.date(2026, 9, 29)


@pytest.fixture
def reader():
    """A user following a parent topic (papers in it and in a child), another topic sharing a
    paper with it, and a saved search with a match of its own and one shared with a topic."""
    user = UserFactory()
    parent, other = TopicFactory(name="Parent"), TopicFactory(name="Other")
    child = TopicFactory(name="Child", parent=parent)
    outside = TopicFactory(name="Outside")
    papers = [PaperFactory(submitted=DAY - dt.timedelta(days=i // 2)) for i in range(12)]
    for i, paper in enumerate(papers[:9]):
        AssignmentFactory(paper=paper, topic=[parent, child, other][i % 3])
    AssignmentFactory(paper=papers[0], topic=other)  # under two followed topics
    AssignmentFactory(paper=papers[9], topic=outside)
    Follow.objects.create(user=user, topic=parent)
    Follow.objects.create(user=user, topic=other)
    search = Follow.objects.create(user=user, kind=Follow.Kind.SEARCH, query="agents")
    SearchMatch.objects.bulk_create(
        SearchMatch(follow=search, paper=p) for p in (papers[10], papers[1])
    )
    return user


def test_feed_papers_are_user_papers_in_order(reader):
    expected = list(user_papers(user=reader).values_list("pk", flat=True))
    feed = feed_selectors.feed_card_papers(user=reader)

    assert feed.count() == len(expected) == 10
    assert [p.pk for p in feed[0:30]] == expected
    assert [p.pk for p in feed[3:5]] == expected[3:5]
    assert not feed.capped
    assert all(isinstance(p, PaperCard) for p in feed[0:30])


def test_withdrawn_and_deleted_papers_are_not_new_papers_in_the_feed(reader):
    before = [p.pk for p in feed_selectors.feed_card_papers(user=reader)[0:30]]
    # One reached through the topics, one through the saved search alone.
    topic_paper = Paper.objects.get(pk=before[0])
    assert topic_paper.assignments.exists()
    search_only = SearchMatch.objects.exclude(paper__assignments__isnull=False).get().paper
    Paper.objects.filter(pk=topic_paper.pk).update(withdrawn=True)
    Paper.objects.filter(pk=search_only.pk).update(deleted_at=timezone.now())

    feed = feed_selectors.feed_card_papers(user=reader)

    shown = [p.pk for p in feed[0:30]]
    assert shown == [pk for pk in before if pk not in {topic_paper.pk, search_only.pk}]
    assert feed.count() == 8
    assert shown == list(user_papers(user=reader).values_list("pk", flat=True))


def test_feed_pages_through_the_newest_papers_only(client, reader, monkeypatch):
    monkeypatch.setattr(feed_selectors, "FEED_MAX_PAPERS", 4)
    expected = list(user_papers(user=reader).values_list("pk", flat=True))
    feed = feed_selectors.feed_card_papers(user=reader)

    assert feed.count() == 4 and feed.capped
    assert [p.pk for p in feed[0:30]] == expected[:4]
    client.force_login(reader)
    html = client.get("/feed/").content.decode()
    assert re.search(r"the newest 4 papers", html)
