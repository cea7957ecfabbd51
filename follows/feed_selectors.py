"""Reads for the personal feed and the Atom feeds: paper cards with the follows that matched
them, whether each was seen, and the papers an Atom entry needs. No side effects; each function
runs a fixed number of queries whatever the number of papers.
"""

import datetime as dt
from collections.abc import Iterable

from django.db.models import Prefetch, QuerySet

from papers.models import Authorship, Paper
from topics.models import Assignment

from .selectors import user_follow_matches, user_papers

# Authors named in an Atom entry; large collaborations list thousands.
ATOM_AUTHORS = 10
# Entries in an Atom feed.
ATOM_ENTRIES = 50


def feed_card_papers(*, user) -> QuerySet[Paper]:
    """The papers of everything ``user`` follows (``follows.selectors.user_papers``: distinct,
    newest first by submitted then id) with what a card shows: ``Paper.objects.for_cards()``
    plus ``topic_assignments``, the paper's accepted assignments to active topics ordered by
    topic name (the chips), as on the topic page."""
    chips = (
        Assignment.objects.accepted()
        .filter(topic__active=True)
        .select_related("topic")
        .order_by("topic__name", "topic_id")
    )
    return (
        user_papers(user=user)
        .for_cards()
        .prefetch_related(Prefetch("assignments", queryset=chips, to_attr="topic_assignments"))
    )


def feed_mark(*, user, papers: Iterable[Paper], seen_before: dt.datetime | None) -> list[Paper]:
    """``papers`` as a list, each given ``matched_follows`` (``user``'s follows that matched
    it, topics first then searches, each by label) and ``seen`` (True when the paper was stored
    before ``seen_before``; always False when ``seen_before`` is None). The queries of
    ``user_follow_matches`` only, however many papers."""
    papers = list(papers)
    matches = user_follow_matches(user=user, paper_ids=[paper.pk for paper in papers])
    for paper in papers:
        paper.matched_follows = matches.get(paper.pk, [])
        paper.seen = seen_before is not None and paper.created_at < seen_before
    return papers


def atom_papers(papers: QuerySet[Paper], *, limit: int = ATOM_ENTRIES) -> list[Paper]:
    """The first ``limit`` of ``papers`` (keeping their order) with what an Atom entry shows:
    the primary category, the cross-lists and ``atom_authorships`` (the first ``ATOM_AUTHORS``
    authorships with their authors, by position). Four queries."""
    authorships = (
        Authorship.objects.filter(position__lt=ATOM_AUTHORS)
        .select_related("author")
        .order_by("position")
    )
    return list(
        papers.select_related("primary_category").prefetch_related(
            "cross_lists",
            Prefetch("authorships", queryset=authorships, to_attr="atom_authorships"),
        )[:limit]
    )
