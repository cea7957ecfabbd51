"""A followed author credited twice on a paper (a merge keeps both authorships) must not
fill the feed's per-author cut twice (``topics.selectors.topic_newest_paper_ids``' LATERAL
per author; found by a breaker)."""

import datetime as dt

import pytest

from follows import feed_selectors
from follows.feed_selectors import FeedPapers
from follows.models import Follow
from follows.selectors import user_papers
from papers.author_services import authors_merge
from papers.models import Authorship
from papers.tests.factories import AuthorFactory, PaperFactory
from topics.selectors import topic_newest_paper_ids
from topics.tests.factories import UserFactory

pytestmark = pytest.mark.django_db

DAY = dt.date(2026, 9, 29)


def _author_credited_twice(user, name):
    """An author on six papers twice each, as authors_merge leaves a survivor that was on a
    paper with its variant (two authorships of the survivor, at their own positions)."""
    survivor, variant = AuthorFactory(name=name), AuthorFactory(name=f"{name} (variant)")
    papers = [PaperFactory(submitted=DAY - dt.timedelta(days=i)) for i in range(6)]
    for paper in papers:
        Authorship.objects.create(paper=paper, author=survivor, position=0)
        Authorship.objects.create(paper=paper, author=variant, position=1)
    authors_merge(authors=[variant], survivor=survivor, user=user)
    Follow.objects.create(user=user, kind=Follow.Kind.AUTHOR, author=survivor)
    return papers


def test_feed_author_credited_twice_after_a_merge_loses_papers():
    user = UserFactory()
    papers = _author_credited_twice(user, "Alice A")
    ids = topic_newest_paper_ids(
        topic_ids=[],
        limit=4,
        author_ids=Follow.objects.filter(user=user, kind=Follow.Kind.AUTHOR).values("author_id"),
    )
    assert ids == [p.pk for p in papers[:4]]


def test_feed_author_credited_twice_feed_matches_user_papers(monkeypatch):
    monkeypatch.setattr(feed_selectors, "FEED_MAX_PAPERS", 3)
    user = UserFactory()
    _author_credited_twice(user, "Alice B")
    feed = FeedPapers(user=user)
    assert [card.pk for card in feed[0:3]] == list(
        user_papers(user=user).values_list("pk", flat=True)[:3]
    )
