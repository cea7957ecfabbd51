"""The one paper card: what a card shows of a paper, as plain data, and the pages of cards.

The topic page, the personal feed and the digest emails all show papers as :class:`PaperCard`,
built by :func:`paper_cards` in one query on PostgreSQL (four elsewhere) whatever the number of
papers, authors, affiliations or topics. A card shows at most :data:`CARD_TITLE_CHARS` of a
title and :data:`CARD_ABSTRACT_CHARS` of an abstract (:func:`clip_text`; the paper's page has
the rest), so one oversized record cannot make a page of cards megabytes long.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field

from django.contrib.postgres.expressions import ArraySubquery
from django.db import connection, connections, router
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.db.models.functions import Left
from django.urls import reverse

from papers.models import Authorship, Category, Paper, PaperAffiliation, author_slug
from topicsite.compiled import CompiledQuery
from topicsite.lookups import Ids

from .models import Assignment, Topic
from .selectors import (
    topic_newest_paper_ids,
    topic_page_number,
    topic_paper_count,
    topic_subtree_ids,
)

__all__ = [
    "CARD_ABSTRACT_CHARS",
    "CARD_SHOWN",
    "CARD_TITLE_CHARS",
    "CardAuthor",
    "CardTopic",
    "PaperCard",
    "TopicCardPage",
    "card_rows_portable",
    "card_rows_postgresql",
    "clip_text",
    "paper_cards",
    "specific_chips",
    "topic_card_page",
    "url_maker",
]

# Authors and affiliations a card names; the rest are counted ("+N").
CARD_SHOWN = 3
# Characters of a title and of an abstract a card (and an Atom entry) shows at most. arXiv's
# own limits are far below (abstracts: 1,920 characters), so only a malformed or hostile
# record is cut.
CARD_TITLE_CHARS = 500
CARD_ABSTRACT_CHARS = 4000
# The abstract's excerpt in a digest email or a list of picks (PaperCard.excerpt).
EXCERPT_CHARS = 300


def clip_text(text: str, limit: int) -> tuple[str, bool]:
    """``(text, False)`` when ``text`` has at most ``limit`` characters, else ``(its first
    characters, cut at a space when one falls in the last fifth, then "…", True)``: at most
    ``limit + 1`` characters."""
    if len(text) <= limit:
        return text, False
    cut = text[:limit]
    space = cut.rfind(" ", limit * 4 // 5)
    if space > 0:
        cut = cut[:space]
    return cut.rstrip() + "…", True


@dataclass(frozen=True)
class CardTopic:
    """A topic chip on a card: the topic's ``name``, ``slug`` and page ``url`` (a path)."""

    name: str
    slug: str
    url: str


@dataclass(frozen=True)
class CardAuthor:
    """An author named on a card: the ``name`` and the author page's ``url`` (a path)."""

    name: str
    url: str


@dataclass
class PaperCard:
    """What a paper card shows, as plain data (no model instances: building 30 papers with
    their authors, affiliations and chips as models costs more than the queries).

    ``url``: the paper page's path; ``primary_category``: its arXiv code (``"cs.CL"``);
    ``authors`` / ``affiliations``: the first ``CARD_SHOWN`` names by position, of
    ``author_count`` / ``affiliation_count`` in all; ``author_links``: the same authors as
    :class:`CardAuthor` (name and page); ``topics``: the accepted assignments to
    active topics, by topic name, the most specific only (see :func:`specific_chips`);
    ``created_at``: when the paper was stored (the feed marks
    papers stored before a visit as seen). ``title`` and ``abstract`` are clipped to
    :data:`CARD_TITLE_CHARS` / :data:`CARD_ABSTRACT_CHARS` (``title_clipped`` /
    ``abstract_clipped`` tell; the paper's page at ``url`` shows them whole).

    ``title_html``, ``abstract_html`` and ``teaser_html`` (the abstract's line under the
    title): safe markup shown instead of the plain text when set, the search page's
    highlights (``topics.search_page.cards_highlight``); ``None`` elsewhere.
    """

    pk: int
    url: str
    title: str
    abstract: str
    submitted: dt.date
    withdrawn: bool
    primary_category: str
    author_count: int
    affiliation_count: int
    authors: list[str] = field(default_factory=list)
    author_links: list[CardAuthor] = field(default_factory=list)
    affiliations: list[str] = field(default_factory=list)
    topics: list[CardTopic] = field(default_factory=list)
    created_at: dt.datetime | None = None
    title_clipped: bool = False
    abstract_clipped: bool = False
    title_html: str | None = None
    abstract_html: str | None = None
    teaser_html: str | None = None

    @property
    def excerpt(self) -> str:
        """The abstract trimmed for a digest or a list: at most :data:`EXCERPT_CHARS`
        characters cut on a word boundary, then "…" (``clip_text``); whole when shorter."""
        return clip_text(self.abstract, EXCERPT_CHARS)[0]

    @property
    def more_authors(self) -> int:
        """Authors counted but not named (the card's "+N"); 0 when none."""
        return max(self.author_count - CARD_SHOWN, 0)

    @property
    def more_affiliations(self) -> int:
        """Affiliations counted but not named (the card's "+N"); 0 when none."""
        return max(self.affiliation_count - CARD_SHOWN, 0)


_URL_MARKER = "urlmarker"


def url_maker(view_name: str, kwarg: str, *, sample: str | int = _URL_MARKER):
    """A function ``value -> reverse(view_name, kwargs={kwarg: value})`` that reverses once:
    the address with ``sample`` in it, split around it. Right for values that ``reverse()``
    would not percent-encode (slugs, arXiv identifiers, integers), which are the only values
    the callers here pass."""
    address = reverse(view_name, kwargs={kwarg: sample})
    prefix, _, suffix = address.rpartition(str(sample))

    def make(value) -> str:
        return f"{prefix}{value}{suffix}"

    return make


def specific_chips(chips: list[tuple[str, str, str, bool]]) -> list[tuple[str, str]]:
    """The chips a card shows, ``(topic name, slug)`` in the given order, from one paper's
    ``(name, slug, path, group-level)`` chips: a topic that is an ancestor of another chip's
    topic is left out (the child says more), and so is a group-level topic (a root named as an
    arXiv group, "Computer Science", which a demo taxonomy's category rule puts on every paper
    of the group) when the card has another chip. A paper whose only chips are broad keeps
    them, so no tagged paper loses all its chips."""
    # A path is the ids from the root down, "3/17/": all but the last are ancestors.
    ancestors = {pk for _, _, path, _ in chips for pk in path.rstrip("/").split("/")[:-1]}
    shown = [chip for chip in chips if chip[2].rstrip("/").rpartition("/")[2] not in ancestors]
    specific = [chip for chip in shown if not chip[3]]
    return [(name, slug) for name, slug, _, _ in (specific or shown)]


def author_url_maker():
    """A function ``(pk, name) -> the author page's path`` (``/authors/<pk>-<slug>/``, as
    ``Author.get_absolute_url``) that reverses once."""
    address = reverse("authors:detail", kwargs={"pk": 0, "slug": _URL_MARKER})
    prefix, _, suffix = address.rpartition(f"0-{_URL_MARKER}")

    def make(pk: int, name: str) -> str:
        return f"{prefix}{pk}-{author_slug(name)}{suffix}"

    return make


def paper_cards(*, paper_ids: list[int]) -> list[PaperCard]:
    """:class:`PaperCard` of the papers ``paper_ids``, in that order (unknown ids left out):
    the first ``CARD_SHOWN`` authors and affiliations by position, the chips (accepted
    assignments to active topics) by topic name. One query on PostgreSQL (the lists as
    arrays), four elsewhere; none without ids."""
    if not paper_ids:
        return []
    rows = (
        card_rows_postgresql(paper_ids)
        if connection.vendor == "postgresql"
        else card_rows_portable(paper_ids)
    )
    # As Paper.get_absolute_url and Topic.get_absolute_url, with one reverse() per kind of
    # address instead of one per card and chip (each reverse() costs about 20 us).
    paper_url = url_maker("papers:detail", "arxiv_id")
    local_paper_url = url_maker("papers:detail-local", "pk", sample=0)
    topic_url = url_maker("topics:detail", "slug")
    author_url = author_url_maker()
    cards = {}
    for (
        pk,
        arxiv_id,
        title,
        abstract,
        submitted,
        withdrawn,
        author_count,
        affiliation_count,
        code,
        created_at,
        authors,
        affiliations,
        chips,
    ) in rows:
        title, title_clipped = clip_text(title, CARD_TITLE_CHARS)
        abstract, abstract_clipped = clip_text(abstract, CARD_ABSTRACT_CHARS)
        cards[pk] = PaperCard(
            pk=pk,
            url=paper_url(arxiv_id) if arxiv_id else local_paper_url(pk),
            title=title,
            abstract=abstract,
            title_clipped=title_clipped,
            abstract_clipped=abstract_clipped,
            submitted=submitted,
            withdrawn=withdrawn,
            primary_category=code,
            author_count=author_count,
            affiliation_count=affiliation_count,
            authors=[name for name, _ in authors],
            author_links=[CardAuthor(name=name, url=author_url(pk, name)) for name, pk in authors],
            affiliations=list(affiliations),
            topics=[
                CardTopic(name=name, slug=slug, url=topic_url(slug))
                for name, slug in specific_chips(chips)
            ],
            created_at=created_at,
        )
    return [cards[pk] for pk in paper_ids if pk in cards]


_CARD_FIELDS = (
    "id",
    "arxiv_id",
    "card_title",
    "card_abstract",
    "submitted",
    "withdrawn",
    "author_count",
    "affiliation_count",
    "primary_category__code",
    "created_at",
)


def _card_papers(paper_ids: list[int] | Ids) -> QuerySet[Paper]:
    """The papers ``paper_ids`` with ``card_title`` and ``card_abstract``: no more of the title
    and abstract than a card can show (one character more, so clip_text knows to cut)."""
    return (
        Paper.objects.filter(id__any=paper_ids)
        .order_by()
        .annotate(
            card_title=Left("title", CARD_TITLE_CHARS + 1),
            card_abstract=Left("abstract", CARD_ABSTRACT_CHARS + 1),
        )
    )


def _card_lists() -> tuple[QuerySet, QuerySet, QuerySet]:
    """The three lists a card shows, over all papers, each in the card's order: the first
    ``CARD_SHOWN`` authorships by position, the first ``CARD_SHOWN`` paper affiliations by
    position, and the chips (accepted assignments to active topics) by topic name, each
    annotated ``chip_group_level``: its topic is a root named as an arXiv group."""
    group_named = Category.objects.filter(group_name=OuterRef("topic__name"))
    return (
        Authorship.objects.filter(position__lt=CARD_SHOWN).order_by("position"),
        PaperAffiliation.objects.filter(position__lt=CARD_SHOWN).order_by("position"),
        Assignment.objects.accepted()
        .filter(topic__active=True)
        .annotate(chip_group_level=Q(topic__parent__isnull=True) & Exists(group_named))
        .order_by("topic__name", "topic_id"),
    )


def card_rows_postgresql(paper_ids: list[int]) -> list[tuple]:
    """One tuple per paper of ``paper_ids`` found (in no particular order): ``id, arxiv_id,
    title, abstract, submitted, withdrawn, author_count, affiliation_count, primary category
    code, created_at``, then its authors as ``(name, author pk)`` pairs, affiliation names and
    chips as ``(topic name, slug, path, group-level)`` tuples (see :func:`specific_chips`), each
    list in the card's order. One query, the lists as array subqueries (each an index range
    scan on the paper). PostgreSQL only."""
    using = router.db_for_read(Paper)
    sql, params = _CARD_ROWS.sql(using, papers=paper_ids)
    with connections[using].cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return [
        (
            *row[:-7],
            list(zip(row[-7], row[-6], strict=True)),
            row[-5],
            list(zip(*row[-4:], strict=True)),
        )
        for row in rows
    ]


def _card_rows_queryset(papers: Ids) -> QuerySet:
    """The rows :func:`card_rows_postgresql` reads, as a ``values_list`` queryset."""
    authors, affiliations, chips = (
        lines.filter(paper_id=OuterRef("pk")) for lines in _card_lists()
    )
    return (
        _card_papers(papers)
        .annotate(
            card_authors=ArraySubquery(authors.values("author__name")),
            card_author_ids=ArraySubquery(authors.values("author_id")),
            card_affiliations=ArraySubquery(affiliations.values("affiliation__name")),
            card_chip_names=ArraySubquery(chips.values("topic__name")),
            card_chip_slugs=ArraySubquery(chips.values("topic__slug")),
            card_chip_paths=ArraySubquery(chips.values("topic__path")),
            card_chip_group_level=ArraySubquery(chips.values("chip_group_level")),
        )
        .values_list(
            *_CARD_FIELDS,
            "card_authors",
            "card_author_ids",
            "card_affiliations",
            "card_chip_names",
            "card_chip_slugs",
            "card_chip_paths",
            "card_chip_group_level",
        )
    )


# Its SQL compiled once per database (building and compiling its seven array subqueries cost
# 2.5 ms of CPU a page, more than PostgreSQL's reading of the 30 cards' rows). CARD_SHOWN and
# the clip lengths are compiled into it: code that changes them at run time (a test) clears
# ``_CARD_ROWS._compiled`` too.
_CARD_ROWS = CompiledQuery(_card_rows_queryset, papers=Ids)


def card_rows_portable(paper_ids: list[int]) -> list[tuple]:
    """As :func:`card_rows_postgresql`, on any database, in four queries (SQLite has no
    arrays)."""
    authors_of, affiliations_of, chips_of = (
        lines.filter(paper_id__in=paper_ids) for lines in _card_lists()
    )
    authors: dict[int, list[tuple[str, int]]] = defaultdict(list)
    for paper_id, name, author_id in authors_of.values_list(
        "paper_id", "author__name", "author_id"
    ):
        authors[paper_id].append((name, author_id))
    affiliations: dict[int, list[str]] = defaultdict(list)
    for paper_id, name in affiliations_of.values_list("paper_id", "affiliation__name"):
        affiliations[paper_id].append(name)
    chips: dict[int, list[tuple[str, str, str, bool]]] = defaultdict(list)
    for paper_id, *chip in chips_of.values_list(
        "paper_id", "topic__name", "topic__slug", "topic__path", "chip_group_level"
    ):
        chips[paper_id].append(tuple(chip))
    return [
        (*row, authors[row[0]], affiliations[row[0]], chips[row[0]])
        for row in _card_papers(paper_ids).values_list(*_CARD_FIELDS)
    ]


@dataclass
class TopicCardPage:
    """One page of a topic's cards: ``papers`` (:class:`PaperCard`, newest first as
    ``topics.selectors.topic_papers``), ``number`` (1-based), ``per_page``, ``paper_count``
    (see ``topics.selectors.topic_paper_count``) and whether there are pages before and after
    this one. Offers what templates use of Django's ``Page``."""

    papers: list[PaperCard]
    number: int
    per_page: int
    paper_count: int
    has_next: bool

    def __iter__(self):
        return iter(self.papers)

    def __len__(self):
        return len(self.papers)

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def has_other_pages(self) -> bool:
        return self.has_previous or self.has_next

    @property
    def num_pages(self) -> int:
        """Pages of ``paper_count`` papers; at least this page (and one more when there is a
        next page), so a count that is a moment behind never contradicts the links."""
        counted = -(-self.paper_count // self.per_page) if self.paper_count else 1
        return max(counted, self.number + (1 if self.has_next else 0))

    def previous_page_number(self) -> int:
        return self.number - 1

    def next_page_number(self) -> int:
        return self.number + 1

    @property
    def paginator(self):  # templates written for Django's Page read page.paginator.num_pages
        return self


def topic_card_page(
    *,
    topic: Topic,
    number: int | str | None,
    per_page: int,
    subtree_ids: list[int] | None = None,
    paper_count: int | None = None,
) -> TopicCardPage:
    """Page ``number`` (see ``topics.selectors.topic_page_number``) of ``topic``'s papers, its
    descendants' included, newest first, ``per_page`` cards (:func:`paper_cards`).
    ``subtree_ids`` and ``paper_count`` save their queries when the caller has them.

    A fixed number of queries whatever the size of the topic: subtree ids, the stored count
    (more while recounting, see ``topics.selectors.topic_stats``), the page's paper ids (one
    index scan per subtree topic) and the cards (one query on PostgreSQL).
    """
    if subtree_ids is None:
        subtree_ids = topic_subtree_ids(topic=topic)
    if paper_count is None:
        paper_count = topic_paper_count(topic=topic, subtree_ids=subtree_ids)
    number = topic_page_number(number, paper_count=paper_count, per_page=per_page)
    offset = (number - 1) * per_page
    # One more than the page: whether there is a next page without counting.
    ids = topic_newest_paper_ids(topic_ids=subtree_ids, limit=per_page + 1, offset=offset)
    if not ids and number > 1:  # the stored count ran ahead of the papers: show the first page
        number, offset = 1, 0
        ids = topic_newest_paper_ids(topic_ids=subtree_ids, limit=per_page + 1)
    has_next, ids = len(ids) > per_page, ids[:per_page]
    return TopicCardPage(
        papers=paper_cards(paper_ids=ids),
        number=number,
        per_page=per_page,
        paper_count=paper_count,
        has_next=has_next,
    )
