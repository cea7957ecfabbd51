"""Reads for the personal feed and the Atom feeds: paper cards with the follows that matched
them, whether each was seen, and the papers an Atom entry needs. No side effects; each function
runs a fixed number of queries whatever the number of papers.
"""

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db.models import Prefetch, QuerySet
from django.db.models.functions import Left

from papers.duplicates import duplicates_collapse
from papers.models import Authorship, Paper
from topics.cards import CARD_ABSTRACT_CHARS, CARD_TITLE_CHARS, PaperCard, paper_cards

from .for_you_selectors import relevance_key, saved_closeness
from .library_selectors import library_states
from .models import Follow
from .selectors import user_follow_matches, user_newest_paper_ids

# Authors named in an Atom entry; large collaborations list thousands.
ATOM_AUTHORS = 10
# Entries in an Atom feed.
ATOM_ENTRIES = 50


# The feed pages through the newest this many papers of a user's follows; a count beyond it
# would cost a distinct count over every paper of every followed topic.
FEED_MAX_PAPERS = 1000


class FeedPapers:
    """The newest papers of everything a user follows (as ``follows.selectors.user_papers``:
    distinct, submitted descending then id descending), at most ``FEED_MAX_PAPERS`` of them,
    as Django's ``Paginator`` takes them: ``count()`` and slicing, a slice being a list of
    ``topics.cards.PaperCard`` (what a card shows, as on the topic page, and when the
    paper was stored). ``capped`` tells whether there were more.

    Reads the ids once, on first use, in two queries (``follows.selectors.user_newest_paper_ids``:
    the followed subtrees' topics, then their newest papers merged), then one more to list a
    paper stored under two ids once (``papers.duplicates``). A slice
    then loads its cards in one query on PostgreSQL (``topics.cards.paper_cards``).
    """

    def __init__(self, *, user):
        self.user = user
        self._ids: list[int] | None = None
        self.capped = False

    def _newest_ids(self) -> list[int]:
        if self._ids is not None:
            return self._ids
        ids = user_newest_paper_ids(user=self.user, limit=FEED_MAX_PAPERS + 1)
        self.capped = len(ids) > FEED_MAX_PAPERS
        self._ids = duplicates_collapse(ids[:FEED_MAX_PAPERS])
        return self._ids

    def count(self) -> int:
        return len(self._newest_ids())

    def __len__(self) -> int:
        return self.count()

    def __getitem__(self, index):
        ids = self._newest_ids()[index]
        if not isinstance(index, slice):
            ids = [ids]
        papers = paper_cards(paper_ids=ids)
        return papers if isinstance(index, slice) else papers[0]


def feed_card_papers(*, user) -> FeedPapers:
    """The papers of everything ``user`` follows, newest first, with what a card shows, for
    ``Paginator``: see :class:`FeedPapers` (at most ``FEED_MAX_PAPERS``)."""
    return FeedPapers(user=user)


@dataclass
class FeedItem:
    """A card on the feed page: the paper's ``card``, the reader's follows that matched it
    (``matched_follows``: topics first, then searches, each by label), whether it was
    ``seen`` (stored before the reader's previous visit) and ``read`` (marked read in the
    reader's library)."""

    card: PaperCard
    matched_follows: list[Follow] = field(default_factory=list)
    seen: bool = False
    read: bool = False


def feed_mark(
    *, user, papers: Iterable[PaperCard], seen_before: dt.datetime | None
) -> list[FeedItem]:
    """A :class:`FeedItem` for each card of ``papers``, in order: ``user``'s follows that
    matched it, and ``seen`` True when the paper was stored before ``seen_before`` (always
    False when ``seen_before`` is None), ``read`` True when ``user`` marked it read in their
    library. The queries of ``user_follow_matches`` and one for the library, however many
    papers."""
    cards = list(papers)
    paper_ids = [card.pk for card in cards]
    matches = user_follow_matches(user=user, paper_ids=paper_ids)
    library = library_states(user=user, paper_ids=paper_ids)
    return [
        FeedItem(
            card=card,
            matched_follows=matches.get(card.pk, []),
            seen=seen_before is not None and card.created_at < seen_before,
            read=library.get(card.pk, False),
        )
        for card in cards
    ]


def atom_papers(papers: QuerySet[Paper], *, limit: int = ATOM_ENTRIES) -> list[Paper]:
    """The first ``limit`` of ``papers`` (keeping their order) with what an Atom entry shows:
    the primary category, the cross-lists, ``atom_authorships`` (the first ``ATOM_AUTHORS``
    authorships with their authors, by position), and ``atom_title`` / ``atom_abstract``: no
    more of the title and abstract than an entry shows (``topics.cards.CARD_TITLE_CHARS`` /
    ``CARD_ABSTRACT_CHARS``, one character more; the whole texts are not loaded). Four
    queries."""
    authorships = (
        Authorship.objects.filter(position__lt=ATOM_AUTHORS)
        .select_related("author")
        .order_by("position")
    )
    return list(
        papers.select_related("primary_category")
        .defer("title", "abstract", "title_raw", "abstract_raw")
        .annotate(
            atom_title=Left("title", CARD_TITLE_CHARS + 1),
            atom_abstract=Left("abstract", CARD_ABSTRACT_CHARS + 1),
        )
        .prefetch_related(
            "cross_lists",
            Prefetch("authorships", queryset=authorships, to_attr="atom_authorships"),
        )[:limit]
    )


def feed_rank(*, user, items: list[FeedItem]) -> list[FeedItem]:
    """``items`` (one feed page) with each submitted day's papers most relevant to ``user``
    first (``for_you_selectors.relevance_key``: more of their follows matching, then closer
    to the papers they saved, then newest); the days keep their order, newest first. Three
    queries at most, whatever the number of items."""
    closeness = saved_closeness(user=user, paper_ids=[item.card.pk for item in items])
    return sorted(
        items,
        key=lambda item: (
            -item.card.submitted.toordinal(),
            relevance_key(
                matched_follows=len(item.matched_follows),
                closeness=closeness.get(item.card.pk),
                submitted=item.card.submitted,
                pk=item.card.pk,
            ),
        ),
    )
