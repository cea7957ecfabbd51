"""Reads for the topic pages: a topic's papers, ancestors, the topic tree with paper counts and
the papers that match a reader's question. No side effects; every function runs a fixed number
of queries whatever the size of the data.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from types import SimpleNamespace

from django.contrib.postgres.expressions import ArraySubquery
from django.core.cache import cache
from django.db import connection
from django.db.models import (
    Count,
    F,
    Func,
    IntegerField,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
)
from django.urls import reverse
from django.utils import timezone

from papers.models import Authorship, Paper, PaperAffiliation

from .caches import INDEX_CACHE_PREFIX, INDEX_GENERATION_KEY
from .models import Assignment, Topic, TopicRedirect, TopicStats
from .momentum import CHART_WEEKS, WINDOW_DAYS, Momentum, topics_momentum

__all__ = [
    "INDEX_CACHE_SECONDS",
    "INDEX_SORTS",
    "RISING_MIN_PAPERS",
    "IndexTopic",
    "PaperCard",
    "TopicIndex",
    "TopicNode",
    "paper_cards",
    "topic_ancestors",
    "topic_lineage",
    "topic_by_slug",
    "TOPIC_COUNT_LOCK_SECONDS",
    "TopicCardPage",
    "topic_card_page",
    "topic_card_papers",
    "topic_newest_paper_ids",
    "topic_page_number",
    "topic_paper_count",
    "topic_stats",
    "topic_stats_loaded",
    "topic_subtree",
    "topic_subtree_ids",
    "topic_index",
    "topic_index_matching",
    "topic_index_ranked",
    "topic_papers",
    "topic_tree",
]


def topic_papers(*, topic: Topic) -> QuerySet[Paper]:
    """Distinct papers with an accepted assignment to ``topic`` or a descendant, newest first
    (submitted descending, then id descending)."""
    paper_ids = Assignment.objects.accepted().in_subtree(topic).order_by().values("paper_id")
    return Paper.objects.filter(id__in=paper_ids).newest_first()


def topic_card_papers(*, topic: Topic) -> QuerySet[Paper]:
    """:func:`topic_papers` with everything a card shows, in a fixed number of queries.

    On top of ``Paper.objects.for_cards()`` each paper gets ``topic_assignments``: its accepted
    assignments to active topics, with the topic loaded, ordered by topic name (the chips).
    """
    return _with_card_data(topic_papers(topic=topic))


def topic_subtree(*, topic: Topic) -> list[Topic]:
    """``topic`` and all its descendants, active or not, ordered by name, with only ``id``,
    ``parent``, ``path``, ``active``, ``name``, ``slug`` and ``short_name`` loaded (one query on
    the small topic table): the subtree's ids and the active children in one read. Raises
    ``ValueError`` for a topic without a path."""
    return list(
        Topic.objects.subtree(topic)
        .order_by("name", "pk")
        .only("id", "parent_id", "path", "active", "name", "slug", "short_name")
    )


def topic_lineage(*, topic: Topic) -> tuple[list[Topic], list[Topic]]:
    """``(ancestors, subtree)`` of ``topic`` in one query on the small topic table: its
    ancestors root first (as :func:`topic_ancestors`) and the topic with all its descendants
    (as :func:`topic_subtree`), each with the fields :func:`topic_subtree` loads. Raises
    ``ValueError`` for a topic without a path."""
    ancestor_ids = [int(pk) for pk in topic.path.split("/") if pk][:-1]
    rows = list(
        (Topic.objects.subtree(topic) | Topic.objects.filter(pk__in=ancestor_ids))
        .order_by("name", "pk")
        .only("id", "parent_id", "path", "active", "name", "slug", "short_name")
    )
    by_id = {row.pk: row for row in rows}
    ancestors = [by_id[pk] for pk in ancestor_ids if pk in by_id]
    prefix = topic.path
    return ancestors, [row for row in rows if row.path.startswith(prefix)]


def topic_subtree_ids(*, topic: Topic) -> list[int]:
    """Primary keys of ``topic`` and all its descendants, active or not (one query on the
    small topic table). Raises ``ValueError`` for a topic without a path."""
    return list(Topic.objects.subtree(topic).order_by("pk").values_list("pk", flat=True))


# The newest accepted papers of each topic in a set, merged: one index range scan per topic on
# assignment_topic_newest_idx (topic, submitted desc, paper desc where accepted), each cut at
# the rows the page can need; a paper under two topics of the set counts once (GROUP BY).
_NEWEST_BRANCH_SQL = (
    "SELECT submitted, paper_id FROM (SELECT submitted, paper_id FROM {assignment}"
    " WHERE topic_id = %s AND state = %s ORDER BY submitted DESC, paper_id DESC LIMIT %s) b{n}"
)


def topic_newest_paper_ids(
    *,
    topic_ids: list[int] | QuerySet[Topic],
    limit: int,
    offset: int = 0,
    extra_papers: QuerySet[Paper] | None = None,
) -> list[int]:
    """Ids of distinct papers with an accepted assignment to any topic of ``topic_ids``,
    ordered as :func:`topic_papers` (submitted descending, then id descending), ``limit`` of
    them from position ``offset`` (0-based). One query; its cost grows with the number of
    topics and with ``offset + limit``, not with the topics' sizes. ``topic_ids`` may be a
    queryset of topics (on PostgreSQL it then runs inside the same query). ``extra_papers``,
    papers from elsewhere (a saved search's), are merged in the same order. Raises
    ``ValueError`` for a negative ``limit`` or ``offset``."""
    if limit < 0 or offset < 0:
        raise ValueError(f"limit and offset must not be negative (got {limit}, {offset})")
    if not limit:
        return []
    # Any of the first offset + limit distinct papers is among the first offset + limit rows
    # of each of its topics: the rows above it in a topic are distinct papers above it.
    wanted = offset + limit
    assignment = connection.ops.quote_name(Assignment._meta.db_table)
    branches, params = [], []
    if isinstance(topic_ids, QuerySet) and connection.vendor == "postgresql":
        # The topics as a subquery, each joined to its newest rows (LATERAL): no query of
        # their own.
        topics_sql, topics_params = topic_ids.values("pk").query.sql_with_params()
        branches.append(
            f"SELECT newest_rows.* FROM ({topics_sql}) subtree (id), LATERAL"
            f" (SELECT submitted, paper_id FROM {assignment} WHERE topic_id = subtree.id"
            " AND state = %s ORDER BY submitted DESC, paper_id DESC LIMIT %s) newest_rows"
        )
        params += [*topics_params, Assignment.State.ACCEPTED, wanted]
    else:
        for n, topic_id in enumerate(
            list(topic_ids.values_list("pk", flat=True))
            if isinstance(topic_ids, QuerySet)
            else topic_ids
        ):
            branches.append(_NEWEST_BRANCH_SQL.format(assignment=assignment, n=n))
            params += [topic_id, Assignment.State.ACCEPTED, wanted]
    if extra_papers is not None:
        extra_sql, extra_params = (
            extra_papers.order_by("-submitted", "-id")
            .values_list("submitted", "id")[:wanted]
            .query.sql_with_params()
        )
        branches.append(f"SELECT submitted, id AS paper_id FROM ({extra_sql}) extra")
        params += list(extra_params)
    if not branches:
        return []
    sql = (
        # No column list on the derived table: SQLite has none; every branch names its columns.
        f"SELECT paper_id FROM ({' UNION ALL '.join(branches)}) newest"
        " GROUP BY submitted, paper_id ORDER BY submitted DESC, paper_id DESC LIMIT %s OFFSET %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, limit, offset])
        return [row[0] for row in cursor.fetchall()]


# While one request recounts a topic, others show the last count (seconds).
TOPIC_COUNT_LOCK_SECONDS = 30
_COUNT_LOCK_PREFIX = "topics:count-lock:v1"


def topic_stats_loaded(topic: Topic) -> TopicStats | None:
    """``topic``'s stats row as loaded with it (``select_related("stats")``: no query), else
    read now (one query); None when it has none yet. Never left cached on ``topic`` by this
    function, so a later call reads the row again."""
    if Topic.stats.is_cached(topic):
        return getattr(topic, "stats", None)
    return TopicStats.objects.filter(pk=topic.pk).first()


def topic_stats(*, topic: Topic, subtree_ids: list[int] | None = None) -> TopicStats:
    """``topic``'s :class:`~topics.models.TopicStats` with ``paper_count`` the distinct papers
    accepted in the topic or a descendant (``topic_papers(...).count()``): one query while the
    stored count is current.

    When tagging, curation or a move has changed the topic since it was counted (its
    ``generation`` moved on), the count is taken again and stored, a few more queries; while
    another request holds the recount (a ``cache.add`` lock for ``TOPIC_COUNT_LOCK_SECONDS``)
    the last stored count is returned instead. ``subtree_ids`` (from
    :func:`topic_subtree_ids`) saves a query when the caller has them; so does a ``topic``
    loaded with ``select_related("stats")``.
    """
    stats = topic_stats_loaded(topic)
    if stats is not None and stats.is_current:
        return stats
    lock = f"{_COUNT_LOCK_PREFIX}:{topic.pk}"
    if stats is not None and stats.counted_at is not None:
        if not cache.add(lock, 1, timeout=TOPIC_COUNT_LOCK_SECONDS):
            return stats  # someone else is recounting: serve the last count
    if stats is None:
        stats, _ = TopicStats.objects.get_or_create(topic_id=topic.pk)
    # The generation is read before counting: a change committed after this read bumps it
    # again, so the count stored here is never taken for newer than it is.
    generation = stats.generation
    if subtree_ids is None:
        subtree_ids = topic_subtree_ids(topic=topic)
    stats.paper_count = (
        Assignment.objects.accepted()
        .filter(topic_id__in=subtree_ids)
        .order_by()
        .values("paper_id")
        .distinct()
        .count()
    )
    stats.counted_at = timezone.now()
    TopicStats.objects.filter(pk=topic.pk, counted_generation__lt=generation).update(
        paper_count=stats.paper_count, counted_generation=generation, counted_at=stats.counted_at
    )
    stats.counted_generation = generation
    cache.delete(lock)
    return stats


def topic_paper_count(*, topic: Topic, subtree_ids: list[int] | None = None) -> int:
    """``topic_stats(...).paper_count``: distinct papers accepted in ``topic`` or a
    descendant, as stored (see :func:`topic_stats`)."""
    return topic_stats(topic=topic, subtree_ids=subtree_ids).paper_count


def topic_page_number(number: int | str | None, *, paper_count: int, per_page: int) -> int:
    """The page to show for ``?page=number``: anything not a positive whole number is 1, a
    page past the last (by ``paper_count``) is the last."""
    try:
        number = max(int(number), 1)
    except (TypeError, ValueError):
        number = 1
    return min(number, max(-(-paper_count // per_page), 1))


@dataclass
class TopicCardPage:
    """One page of a topic's cards: ``papers`` (:class:`PaperCard`, in
    :func:`topic_card_papers` order), ``number`` (1-based), ``per_page``, ``paper_count`` (see
    :func:`topic_paper_count`) and whether there are pages before and after this one. Offers
    what templates use of Django's ``Page``."""

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
    """Page ``number`` (see :func:`topic_page_number`) of ``topic``'s papers, its descendants'
    included, newest first, ``per_page`` cards with everything a card shows (as
    :func:`topic_card_papers`). ``subtree_ids`` and ``paper_count`` save their queries when
    the caller has them.

    A fixed number of queries whatever the size of the topic: subtree ids, the stored count
    (more while recounting, see :func:`topic_stats`), the page's paper ids (one index scan per
    subtree topic) and the cards' papers, authorships, affiliations and chips.
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
    papers = paper_cards(paper_ids=ids)
    return TopicCardPage(
        papers=papers,
        number=number,
        per_page=per_page,
        paper_count=paper_count,
        has_next=has_next,
    )


@dataclass
class PaperCard:
    """What a paper card shows, as plain data (no model instances: building 30 papers with
    their authors, affiliations and chips as models costs more than the queries). Offers the
    names ``jinja_templates/topics/_paper_card.html`` reads of a ``Paper`` prepared by
    :func:`topic_card_papers`: ``primary_category.code``, ``shown_authorships[i].author.name``,
    ``shown_affiliations[i].affiliation.name``, ``topic_assignments[i].topic.name`` and
    ``.topic_url``, ``get_absolute_url()``."""

    pk: int
    url: str
    title: str
    abstract: str
    submitted: dt.date
    withdrawn: bool
    author_count: int
    affiliation_count: int
    primary_category: SimpleNamespace
    shown_authorships: list[SimpleNamespace] = field(default_factory=list)
    shown_affiliations: list[SimpleNamespace] = field(default_factory=list)
    topic_assignments: list[SimpleNamespace] = field(default_factory=list)
    # When the paper was stored (the feed marks papers stored before a visit as seen).
    created_at: dt.datetime | None = None

    def get_absolute_url(self) -> str:
        return self.url


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


def paper_cards(*, paper_ids: list[int]) -> list[PaperCard]:
    """:class:`PaperCard` of the papers ``paper_ids``, in that order (unknown ids left out):
    the first three authors and affiliations by position, the chips (accepted assignments to
    active topics) by topic name. One query on PostgreSQL (the lists as arrays), four
    elsewhere; none without ids."""
    if not paper_ids:
        return []
    rows = (
        _card_rows_postgresql(paper_ids)
        if connection.vendor == "postgresql"
        else _card_rows_portable(paper_ids)
    )
    # As Paper.get_absolute_url and Topic.get_absolute_url, with one reverse() per kind of
    # address instead of one per card and chip (each reverse() costs about 20 us).
    paper_url = url_maker("papers:detail", "arxiv_id")
    local_paper_url = url_maker("papers:detail-local", "pk", sample=0)
    topic_url = url_maker("topics:detail", "slug")
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
        cards[pk] = PaperCard(
            pk=pk,
            url=paper_url(arxiv_id) if arxiv_id else local_paper_url(pk),
            title=title,
            abstract=abstract,
            submitted=submitted,
            withdrawn=withdrawn,
            author_count=author_count,
            affiliation_count=affiliation_count,
            primary_category=SimpleNamespace(code=code),
            created_at=created_at,
            shown_authorships=[
                SimpleNamespace(author=SimpleNamespace(name=name)) for name in authors
            ],
            shown_affiliations=[
                SimpleNamespace(affiliation=SimpleNamespace(name=name)) for name in affiliations
            ],
            topic_assignments=[
                SimpleNamespace(
                    topic=SimpleNamespace(name=name, slug=slug), topic_url=topic_url(slug)
                )
                for name, slug in chips
            ],
        )
    return [cards[pk] for pk in paper_ids if pk in cards]


def _card_lists() -> tuple[QuerySet, QuerySet, QuerySet]:
    """The three lists a card shows, over all papers, each in the card's order: the first
    three authorships by position, the first three paper affiliations by position, and the
    chips (accepted assignments to active topics) by topic name."""
    return (
        Authorship.objects.filter(position__lt=3).order_by("position"),
        PaperAffiliation.objects.filter(position__lt=3).order_by("position"),
        Assignment.objects.accepted()
        .filter(topic__active=True)
        .order_by("topic__name", "topic_id"),
    )


def _card_rows_postgresql(paper_ids: list[int]) -> list[tuple]:
    """``_CARD_FIELDS`` of each paper, then its author names, affiliation names and chips as
    ``(topic name, slug)`` (:func:`_card_lists`): one query, the lists as array subqueries
    (each an index range scan on the paper)."""
    authors, affiliations, chips = (
        lines.filter(paper_id=OuterRef("pk")) for lines in _card_lists()
    )
    rows = (
        Paper.objects.filter(id__in=paper_ids)
        .order_by()
        .annotate(
            card_authors=ArraySubquery(authors.values("author__name")),
            card_affiliations=ArraySubquery(affiliations.values("affiliation__name")),
            card_chip_names=ArraySubquery(chips.values("topic__name")),
            card_chip_slugs=ArraySubquery(chips.values("topic__slug")),
        )
        .values_list(
            *_CARD_FIELDS,
            "card_authors",
            "card_affiliations",
            "card_chip_names",
            "card_chip_slugs",
        )
    )
    return [(*row[:-2], list(zip(row[-2], row[-1], strict=True))) for row in rows]


def _card_rows_portable(paper_ids: list[int]) -> list[tuple]:
    """As :func:`_card_rows_postgresql`, in four queries (SQLite has no arrays)."""
    authors_of, affiliations_of, chips_of = (
        lines.filter(paper_id__in=paper_ids) for lines in _card_lists()
    )
    authors: dict[int, list[str]] = defaultdict(list)
    for paper_id, name in authors_of.values_list("paper_id", "author__name"):
        authors[paper_id].append(name)
    affiliations: dict[int, list[str]] = defaultdict(list)
    for paper_id, name in affiliations_of.values_list("paper_id", "affiliation__name"):
        affiliations[paper_id].append(name)
    chips: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for paper_id, name, slug in chips_of.values_list("paper_id", "topic__name", "topic__slug"):
        chips[paper_id].append((name, slug))
    return [
        (*row, authors[row[0]], affiliations[row[0]], chips[row[0]])
        for row in Paper.objects.filter(id__in=paper_ids).order_by().values_list(*_CARD_FIELDS)
    ]


_CARD_FIELDS = (
    "id",
    "arxiv_id",
    "title",
    "abstract",
    "submitted",
    "withdrawn",
    "author_count",
    "affiliation_count",
    "primary_category__code",
    "created_at",
)


def _with_card_data(papers: QuerySet[Paper]) -> QuerySet[Paper]:
    """``papers`` with ``Paper.objects.for_cards()`` and the chips (``topic_assignments``)."""
    chips = (
        Assignment.objects.accepted()
        .filter(topic__active=True)
        .select_related("topic")
        .order_by("topic__name", "topic_id")
    )
    return papers.for_cards().prefetch_related(
        Prefetch("assignments", queryset=chips, to_attr="topic_assignments")
    )


def topic_by_slug(slug: str, *, queryset: QuerySet[Topic] | None = None) -> Topic | None:
    """The active topic at ``slug``, else the active topic an old ``slug`` of a renamed or
    merged-away topic redirects to (then ``topic.slug != slug``), else ``None``.

    ``queryset``: where to look for the active topic (e.g. with ``select_related``); one query,
    two for an old slug.
    """
    topic = (queryset if queryset is not None else Topic.objects).active().filter(slug=slug)
    found = topic.first()
    if found is not None:
        return found
    redirect = (
        TopicRedirect.objects.filter(old_slug=slug, topic__active=True)
        .select_related("topic")
        .first()
    )
    return redirect.topic if redirect is not None else None


def topic_ancestors(*, topic: Topic) -> list[Topic]:
    """``topic``'s ancestors, root first, from its materialised path (one query, none for a
    root). Inactive ancestors are included; callers decide whether to link them."""
    ancestor_ids = [int(pk) for pk in topic.path.split("/") if pk][:-1]
    if not ancestor_ids:
        return []
    by_id = Topic.objects.in_bulk(ancestor_ids)
    return [by_id[pk] for pk in ancestor_ids if pk in by_id]


@dataclass
class TopicNode:
    """A topic in the index tree: ``paper_count`` is the number of distinct papers accepted in
    the topic or any descendant; ``children`` are nodes ordered by display name."""

    topic: Topic
    paper_count: int
    children: list[TopicNode] = field(default_factory=list)


class _CountDistinct(Func):
    # A plain function rather than an aggregate, so the subquery gets no GROUP BY and yields
    # exactly one row: the count of distinct papers in one topic's subtree.
    template = "COUNT(DISTINCT %(expressions)s)"
    output_field = IntegerField()


def topic_tree() -> list[TopicNode]:
    """The active topics as a forest of :class:`TopicNode`, each level ordered by display name
    (case-insensitive).

    One query: each topic's subtree count is a correlated subquery over assignments whose
    topic path starts with the topic's path, so a paper under two children counts once for
    the parent. An active topic whose parent is inactive is shown as a root.
    """
    subtree_count = (
        Assignment.objects.accepted()
        .filter(topic__path__startswith=OuterRef("path"))
        .order_by()
        .annotate(n=_CountDistinct(F("paper_id")))
        .values("n")
    )
    topics = sorted(
        Topic.objects.active().annotate(paper_count=Subquery(subtree_count)),
        # By the name readers see, whatever the database collation does with case.
        key=lambda t: (t.display_name.casefold(), t.pk),
    )
    nodes = {t.pk: TopicNode(topic=t, paper_count=t.paper_count or 0) for t in topics}
    roots = []
    for topic in topics:  # sorted, so every children list ends up sorted too
        parent = nodes.get(topic.parent_id)
        if parent is None:
            roots.append(nodes[topic.pk])
        else:
            parent.children.append(nodes[topic.pk])
    return roots


# --- the topics index ------------------------------------------------------------------------

INDEX_SORTS = ("name", "size", "rising")
# Under ``rising``, a topic needs this many papers in at least one of the two four-week windows
# to be ranked by its share change; the others follow, so 1 -> 2 papers cannot top the list.
RISING_MIN_PAPERS = 3
# The whole index is cached this long at most; new topics, papers and assignments, and
# anything reported to :func:`topics.caches.topic_index_cache_invalidate`, show at once.
INDEX_CACHE_SECONDS = 120
_SPARK_WIDTH = 96
_SPARK_HEIGHT = 20


@dataclass
class IndexTopic:
    """A topic as the index shows it; plain data (no model instance), so it caches small.

    ``paper_count``: distinct papers accepted in the topic's subtree, all time (as
    :func:`topic_tree`); ``momentum``: as on the topic page; ``before_share``: the topic's
    ``before`` papers as a fraction of all papers submitted in those four weeks (0.0 when none);
    ``ancestor_names``: display names of its active ancestors, root first; ``children``: ordered
    by display name (case-insensitive).
    """

    pk: int
    name: str
    display_name: str
    url: str
    ancestor_names: list[str]
    paper_count: int
    momentum: Momentum
    before_share: float
    children: list[IndexTopic] = field(default_factory=list)

    @property
    def name_key(self) -> tuple[str, int]:
        return (self.display_name.casefold(), self.pk)

    @property
    def rising(self) -> float:
        """Change of the topic's share of all new papers, in percentage points: share in the
        last four weeks minus share in the four weeks before (``+0.4`` is 0.4 points up)."""
        return (self.momentum.share - self.before_share) * 100

    @property
    def rising_text(self) -> str:
        """:attr:`rising` for the page: ``"+0.41 points"``, ``"-1.20 points"``, ``"0.00
        points"``."""
        points = round(self.rising, 2)
        return f"{points:+.2f} points" if points else "0.00 points"

    @property
    def rising_ranked(self) -> bool:
        """Enough papers to rank by ``rising``: ``RISING_MIN_PAPERS`` in either window."""
        m = self.momentum
        return max(m.recent, m.before) >= RISING_MIN_PAPERS

    @property
    def change_text(self) -> str:
        """The change on the four weeks before, worded as on the topic page, shortly:
        ``"up 145%"``, ``"down 12%"``, ``"no change"``, ``"new"`` (nothing before) or ``""``
        (nothing in either window)."""
        m = self.momentum
        if m.change_pct is None:
            return "new" if m.recent else ""
        if m.change_pct > 0:
            return f"up {m.change_pct}%"
        if m.change_pct < 0:
            return f"down {-m.change_pct}%"
        return "no change"

    @property
    def path_text(self) -> str:
        """The breadcrumb as text, ``"LLM: Large Language Model › Agents"``, or ``""``."""
        return " › ".join(self.ancestor_names)

    @property
    def weekly_counts(self) -> list[int]:
        return [week.count for week in self.momentum.weeks]

    @property
    def sparkline_label(self) -> str:
        """``"12-week papers: 3, 5, …"``, oldest week first."""
        counts = ", ".join(str(n) for n in self.weekly_counts)
        return f"{len(self.momentum.weeks)}-week papers: {counts}"

    @property
    def sparkline_points(self) -> str:
        """SVG polyline points (``"x,y x,y …"``) in a ``_SPARK_WIDTH`` x ``_SPARK_HEIGHT``
        viewBox, one per chart week, oldest left, the busiest week at the top; all zero is a
        flat line on the baseline."""
        counts = self.weekly_counts
        peak = max(counts, default=0)
        step = _SPARK_WIDTH / max(len(counts) - 1, 1)
        usable = _SPARK_HEIGHT - 2  # a 1-unit margin so the stroke is not clipped
        return " ".join(
            f"{i * step:.1f},{_SPARK_HEIGHT - 1 - (usable * n / peak if peak else 0):.1f}"
            for i, n in enumerate(counts)
        )


@dataclass
class TopicIndex:
    """Everything the index shows: ``roots`` (the tree), ``topics`` (every node, in tree
    order), ``as_of`` and the two four-week windows' totals of all new papers."""

    roots: list[IndexTopic]
    topics: list[IndexTopic]
    as_of: dt.date
    all_recent: int
    all_before: int
    # The cache key this index is stored under, for caching what is rendered from it.
    cache_key: str = ""

    @property
    def recent_start(self) -> dt.date:
        return self.as_of - dt.timedelta(days=WINDOW_DAYS - 1)

    @property
    def before_start(self) -> dt.date:
        return self.as_of - dt.timedelta(days=2 * WINDOW_DAYS - 1)

    @property
    def before_end(self) -> dt.date:
        return self.as_of - dt.timedelta(days=WINDOW_DAYS)

    @property
    def chart_weeks(self) -> int:
        return CHART_WEEKS


def _index_fingerprint() -> tuple[dt.date | None, str]:
    """``(newest submitted date, fingerprint)`` in one query: the fingerprint changes when a
    paper or assignment is added, or a topic is added, deleted or saved (index-backed maxima
    and the small topic table, so it stays cheap on big data)."""
    table = {
        model: connection.ops.quote_name(model._meta.db_table)
        for model in (Paper, Assignment, Topic)
    }
    sql = (
        f"SELECT (SELECT MAX(submitted) FROM {table[Paper]}),"
        f" (SELECT MAX(id) FROM {table[Paper]}),"
        f" (SELECT MAX(id) FROM {table[Assignment]}),"
        f" (SELECT COUNT(*) FROM {table[Topic]}),"
        f" (SELECT MAX(updated_at) FROM {table[Topic]})"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql)
        newest, *rest = cursor.fetchone()
    if isinstance(newest, str):  # SQLite hands dates back as text in raw queries
        newest = dt.date.fromisoformat(newest)
    return newest, hashlib.sha256(repr(rest).encode()).hexdigest()[:16]


def topic_index() -> TopicIndex:
    """The active topics for the index page, with subtree paper counts, momentum and weekly
    counts, computed over the newest submitted date as ``as_of`` (as the topic page does).
    ``cache_key`` changes whenever the figures may have.

    Cached for ``INDEX_CACHE_SECONDS`` under a key holding a cheap fingerprint of the data and
    a generation bumped by ``topics.caches.topic_index_cache_invalidate``. Queries,
    whatever the number of topics or papers: one on a cache hit; five on a miss
    (fingerprint, :func:`topic_tree`, :func:`topics.momentum.topics_momentum` given
    ``as_of``: two, and all papers in each of
    the two four-week windows).
    """
    newest, fingerprint = _index_fingerprint()
    generation = cache.get(INDEX_GENERATION_KEY, "0")
    key = f"{INDEX_CACHE_PREFIX}:{generation}:{fingerprint}:{newest}"
    index = cache.get(key)
    if index is None:
        index = _topic_index_build(as_of=newest or timezone.localdate())
        index.cache_key = key
        cache.set(key, index, timeout=INDEX_CACHE_SECONDS)
    return index


def _topic_index_build(*, as_of: dt.date) -> TopicIndex:
    roots = topic_tree()
    nodes: list[TopicNode] = []
    stack = list(reversed(roots))
    while stack:  # depth first, children in their (sorted) order: tree order
        node = stack.pop()
        nodes.append(node)
        stack.extend(reversed(node.children))

    momenta = topics_momentum(topics=[n.topic for n in nodes], as_of=as_of)
    recent_after = as_of - dt.timedelta(days=WINDOW_DAYS)
    before_after = recent_after - dt.timedelta(days=WINDOW_DAYS)
    totals = Paper.objects.submitted_between(before_after, as_of).aggregate(
        recent=Count("id", filter=Q(submitted__gt=recent_after)),
        before=Count("id", filter=Q(submitted__lte=recent_after)),
    )
    all_before = totals["before"]
    names = {n.topic.pk: n.topic.display_name for n in nodes}

    items: dict[int, IndexTopic] = {}
    for node in nodes:
        topic, momentum = node.topic, momenta[node.topic.pk]
        ancestor_ids = [int(pk) for pk in topic.path.split("/") if pk][:-1]
        items[topic.pk] = IndexTopic(
            pk=topic.pk,
            name=topic.name,
            display_name=topic.display_name,
            url=topic.get_absolute_url(),
            ancestor_names=[names[pk] for pk in ancestor_ids if pk in names],
            paper_count=node.paper_count,
            momentum=momentum,
            before_share=momentum.before / all_before if all_before else 0.0,
        )
    for node in nodes:
        items[node.topic.pk].children = [items[child.topic.pk] for child in node.children]
    return TopicIndex(
        roots=[items[root.topic.pk] for root in roots],
        topics=[items[node.topic.pk] for node in nodes],
        as_of=as_of,
        all_recent=totals["recent"],
        all_before=all_before,
    )


def topic_index_ranked(index: TopicIndex, *, sort: str, topics=None) -> list[IndexTopic]:
    """``topics`` (default: all of ``index``) as a flat list ordered by ``sort``:

    - ``"name"``: display name, case-insensitive;
    - ``"size"``: subtree paper count, largest first, then name;
    - ``"rising"``: topics with at least ``RISING_MIN_PAPERS`` papers in one of the two windows
      first, by :attr:`IndexTopic.rising` (largest gain of share first), then the rest by the
      same figure; ties by papers in the last four weeks, then name.

    Raises ``ValueError`` for any other ``sort``.
    """
    topics = index.topics if topics is None else topics
    if sort == "name":
        key = lambda t: t.name_key  # noqa: E731
    elif sort == "size":
        key = lambda t: (-t.paper_count, t.name_key)  # noqa: E731
    elif sort == "rising":
        key = lambda t: (not t.rising_ranked, -t.rising, -t.momentum.recent, t.name_key)  # noqa: E731
    else:
        raise ValueError(f"unknown sort {sort!r}; expected one of {', '.join(INDEX_SORTS)}")
    return sorted(topics, key=key)


def topic_index_matching(index: TopicIndex, *, query: str) -> list[IndexTopic]:
    """Topics of ``index`` whose display name (short name and name) contains every
    whitespace-separated word of ``query``, case-insensitively; in tree order. A query with
    no words matches nothing."""
    words = query.casefold().split()
    if not words:
        return []
    return [t for t in index.topics if all(w in t.display_name.casefold() for w in words)]
