"""Reads of topics: a topic by its address, its ancestors, subtree and papers, its stored
paper count, and the topic tree with paper counts. No side effects beyond storing a recount;
every function runs a fixed number of queries whatever the size of the data. The paper cards
are in ``topics.cards``, the topics index in ``topics.index``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.core.cache import cache
from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import F, Func, IntegerField, OuterRef, QuerySet, Subquery
from django.utils import timezone

from papers.models import Authorship, Paper

from .models import Assignment, Topic, TopicRedirect, TopicStats

__all__ = [
    "TOPIC_COUNT_LOCK_SECONDS",
    "TopicNode",
    "topic_ancestors",
    "topic_by_slug",
    "topic_lineage",
    "topic_newest_paper_ids",
    "topic_page_number",
    "topic_paper_count",
    "topic_papers",
    "topic_stats",
    "topic_stats_loaded",
    "topic_subtree",
    "topic_subtree_ids",
    "topic_tree",
]


def topic_papers(*, topic: Topic) -> QuerySet[Paper]:
    """Distinct papers that count (neither withdrawn nor deleted) with an accepted assignment
    to ``topic`` or a descendant, newest first (submitted descending, then id descending)."""
    paper_ids = Assignment.objects.accepted_live().in_subtree(topic).order_by().values("paper_id")
    return Paper.objects.filter(id__in=paper_ids).newest_first()


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


# The newest accepted papers that count of each topic in a set, merged: one index range scan
# per topic on assignment_topic_newest_idx (topic, submitted desc, paper desc where accepted
# and paper_live), each cut at the rows the page can need; a paper under two topics of the
# set counts once (GROUP BY). The condition repeats the index's, so the index serves it.
_NEWEST_ROWS_WHERE = "state = %s AND paper_live"
_NEWEST_BRANCH_SQL = (
    "SELECT submitted, paper_id FROM (SELECT submitted, paper_id FROM {assignment}"
    f" WHERE topic_id = %s AND {_NEWEST_ROWS_WHERE}{{bounds}}"
    " ORDER BY submitted DESC, paper_id DESC LIMIT %s) b{n}"
)
# papers.querysets.LIVE (neither withdrawn nor deleted) on the papers table aliased ``p``.
_LIVE_PAPER_SQL = "p.deleted_at IS NULL AND NOT p.withdrawn"
# Rows strictly after a keyset position (submitted, paper id) in the newest-first order, the
# date first so that it bounds the index range scan (as api.pagination's cursors do).
_BEFORE_SQL = " AND submitted <= %s AND (submitted < %s OR paper_id < %s)"
# Rows submitted strictly after a date: the other end of the same index range.
_AFTER_SQL = " AND submitted > %s"
# From this many rows a topic on, PostgreSQL gets one branch per topic, which it plans as a
# Merge Append of the topics' index scans under one Group: it reads the rows it returns and
# few more, but plans ~0.035 ms a branch. Below it, one LATERAL scan per topic (no planning
# per topic, every topic's rows read and sorted). At 1M papers, 20 topics: 1,001 rows 4.8 ms
# LATERAL against 0.9 merged, 3,001 rows 16.9 against 1.5, 31 rows 0.32 against 0.77
# (bench/README.md, "Issue 19, thirteenth session").
MERGED_BRANCHES_MIN_ROWS = 150


def topic_newest_paper_ids(
    *,
    topic_ids: list[int] | QuerySet[Topic],
    limit: int,
    offset: int = 0,
    extra_papers: QuerySet[Paper] | Sequence[QuerySet[Paper]] | None = None,
    author_ids: QuerySet | None = None,
    before: tuple[dt.date, int] | None = None,
    after: dt.date | None = None,
) -> list[int]:
    """Ids of distinct papers that count (neither withdrawn nor deleted) with an accepted
    assignment to any topic of ``topic_ids``, ordered as :func:`topic_papers` (submitted
    descending, then id descending), ``limit`` of
    them from position ``offset`` (0-based). One query (two when ``topic_ids`` is a queryset
    and ``offset + limit`` reaches :data:`MERGED_BRANCHES_MIN_ROWS`: the topics are read
    first, to plan a merge of their scans); its cost grows with the number of topics and
    with ``offset + limit``, not with the topics' sizes. ``topic_ids`` may be a queryset of
    topics (on PostgreSQL, below that many rows, it then runs inside the same query).
    ``extra_papers``, papers from elsewhere (a saved search's), a queryset or several, are
    merged in the same order, those that count only; each is its own branch of the query, so
    give each source its own queryset rather than one OR of them (PostgreSQL cannot plan ``id
    IN (a) OR id IN (b)`` as a join, and walked every paper newest first for a reader who
    followed neither).
    ``author_ids``, a ``values("author_id")``-like queryset of authors (followed ones), merges
    their papers too: on PostgreSQL one range scan per author on
    ``authorship_author_newest_idx`` (authorships carry their paper's ``submitted``), each
    cut at the live rows the page can need, so a prolific author's thousands of papers are
    not all read and sorted; elsewhere as another ``extra_papers`` queryset.
    ``before``, a keyset position ``(submitted, paper id)``, starts the list at the papers
    strictly after it in that order (an API cursor's next page; ``extra_papers`` and
    ``author_ids`` then refused). ``after``, a date, keeps only papers submitted strictly
    after it, in every branch: each range scan stops at that date, so a window of recent
    papers costs what the window holds. Raises ``ValueError`` for a negative ``limit`` or
    ``offset``, or ``before`` with ``extra_papers`` or ``author_ids``."""
    if limit < 0 or offset < 0:
        raise ValueError(f"limit and offset must not be negative (got {limit}, {offset})")
    if before is not None and (extra_papers is not None or author_ids is not None):
        raise ValueError("before is not supported with extra_papers or author_ids")
    if not limit:
        return []
    # The range each topic's scan reads: after the cursor (``before``) and from ``after`` on.
    bounds_sql = ("" if before is None else _BEFORE_SQL) + ("" if after is None else _AFTER_SQL)
    bounds_params = [] if before is None else [before[0], before[0], before[1]]
    bounds_params += [] if after is None else [after]
    # Any of the first offset + limit distinct papers is among the first offset + limit rows
    # of each of its topics: the rows above it in a topic are distinct papers above it.
    wanted = offset + limit
    assignment = connection.ops.quote_name(Assignment._meta.db_table)
    branches, params = [], []
    merged = wanted >= MERGED_BRANCHES_MIN_ROWS or connection.vendor != "postgresql"
    if not merged:
        # The topics (a subquery, or the ids as an array), each joined to its newest rows
        # (LATERAL): no query of their own.
        if isinstance(topic_ids, QuerySet):
            try:
                topics_sql, topics_params = topic_ids.values("pk").query.sql_with_params()
            except EmptyResultSet:  # Topic.objects.none() and the like: no topic
                topics_sql, topics_params = "SELECT NULL::bigint WHERE false", []
        else:
            # bigint: the topics' keys (BigAutoField), whatever their size.
            topics_sql, topics_params = "SELECT unnest(%s::bigint[])", [list(topic_ids)]
        branches.append(
            f"SELECT newest_rows.* FROM ({topics_sql}) subtree (id), LATERAL"
            f" (SELECT submitted, paper_id FROM {assignment} WHERE topic_id = subtree.id"
            f" AND {_NEWEST_ROWS_WHERE}{bounds_sql}"
            " ORDER BY submitted DESC, paper_id DESC LIMIT %s) newest_rows"
        )
        params += [*topics_params, Assignment.State.ACCEPTED, *bounds_params, wanted]
    else:
        for n, topic_id in enumerate(
            list(topic_ids.values_list("pk", flat=True))
            if isinstance(topic_ids, QuerySet)
            else topic_ids
        ):
            branches.append(
                _NEWEST_BRANCH_SQL.format(assignment=assignment, n=n, bounds=bounds_sql)
            )
            params += [topic_id, Assignment.State.ACCEPTED, *bounds_params, wanted]
    if isinstance(extra_papers, QuerySet):
        extra_papers = [extra_papers]
    extra_papers = list(extra_papers or ())
    if author_ids is not None and connection.vendor == "postgresql":
        authors_sql, authors_params = author_ids.query.sql_with_params()
        authorship = connection.ops.quote_name(Authorship._meta.db_table)
        paper = connection.ops.quote_name(Paper._meta.db_table)
        after_sql = "" if after is None else " AND a.submitted > %s"
        branches.append(
            f"SELECT authored.* FROM ({authors_sql}) followed (id), LATERAL"
            f" (SELECT a.submitted, a.paper_id FROM {authorship} a"
            f" JOIN {paper} p ON p.id = a.paper_id AND {_LIVE_PAPER_SQL}"
            f" WHERE a.author_id = followed.id{after_sql}"
            # An author credited twice on a paper (a merge keeps both authorships) counts
            # it once before the cut, or the page would come up short.
            " GROUP BY a.submitted, a.paper_id"
            " ORDER BY a.submitted DESC, a.paper_id DESC LIMIT %s) authored"
        )
        params += [*authors_params, *([] if after is None else [after]), wanted]
    elif author_ids is not None:
        credited = Authorship.objects.filter(author_id__in=author_ids).values("paper_id")
        extra_papers.append(Paper.objects.filter(pk__in=credited))
    for n, papers in enumerate(extra_papers):
        if after is not None:
            papers = papers.filter(submitted__gt=after)
        extra_sql, extra_params = (
            papers.live()
            .order_by("-submitted", "-id")
            .values_list("submitted", "id")[:wanted]
            .query.sql_with_params()
        )
        branches.append(f"SELECT submitted, id AS paper_id FROM ({extra_sql}) extra{n}")
        params += list(extra_params)
    if not branches:
        return []
    sql = (
        # No column list on the derived table: SQLite has none; every branch names its columns.
        f"SELECT paper_id FROM ({' UNION ALL '.join(branches)}) newest"
        " GROUP BY submitted, paper_id ORDER BY submitted DESC, paper_id DESC LIMIT %s"
        # A cursor's page (``before``) starts at 0: no OFFSET, which the paging bench refuses.
        + (" OFFSET %s" if offset else "")
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, limit, *([offset] if offset else [])])
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
    that count (neither withdrawn nor deleted) accepted in the topic or a descendant
    (``topic_papers(...).count()``): one query while the
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
        Assignment.objects.accepted_live()
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
    """A topic in the index tree: ``paper_count`` is the number of distinct papers that count
    (neither withdrawn nor deleted) accepted in the topic or any descendant; ``children`` are
    nodes ordered by display name."""

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

    Each topic's ``paper_count`` is its stored count (:class:`~topics.models.TopicStats`, as
    :func:`topic_stats` keeps it) where that is current; the others are counted in one more
    query (a correlated subquery over assignments whose topic path starts with the topic's
    path, so a paper under two children counts once for the parent) and stored, so the next
    call reads them. Counting every topic of a million-paper site this way takes about 20 s;
    the stored counts are one join. One query while every count is current; three to five
    otherwise (the count, creating missing stats rows and reading them back, storing the
    counts). An active topic
    whose parent is inactive is shown as a root.
    """
    topics = sorted(
        Topic.objects.active().select_related("stats"),
        # By the name readers see, whatever the database collation does with case.
        key=lambda t: (t.display_name.casefold(), t.pk),
    )
    counts: dict[int, int] = {}
    stale: dict[int, TopicStats | None] = {}
    for topic in topics:
        stats = topic_stats_loaded(topic)
        if stats is not None and stats.is_current:
            counts[topic.pk] = stats.paper_count
        else:
            stale[topic.pk] = stats
    if stale:
        counts |= _subtree_counts_stored(stale)
    for topic in topics:
        topic.paper_count = counts[topic.pk]
    nodes = {t.pk: TopicNode(topic=t, paper_count=t.paper_count or 0) for t in topics}
    roots = []
    for topic in topics:  # sorted, so every children list ends up sorted too
        parent = nodes.get(topic.parent_id)
        if parent is None:
            roots.append(nodes[topic.pk])
        else:
            parent.children.append(nodes[topic.pk])
    return roots


def _subtree_counts_stored(stale: dict[int, TopicStats | None]) -> dict[int, int]:
    """``{topic pk: distinct papers that count in its subtree}`` for the topics of ``stale``
    (pk to their stats row as loaded, or None), counted in one query and stored as their
    :class:`~topics.models.TopicStats` (rows created where missing). Each count is stored
    under the generation read before counting, as :func:`topic_stats` does, so a change
    committed meanwhile leaves it behind, never ahead."""
    generations = {
        pk: (stats.generation if stats is not None else None) for pk, stats in stale.items()
    }
    missing = [pk for pk, generation in generations.items() if generation is None]
    if missing:
        TopicStats.objects.bulk_create(
            [TopicStats(topic_id=pk) for pk in missing], ignore_conflicts=True
        )
        generations |= dict(
            TopicStats.objects.filter(pk__in=missing).values_list("pk", "generation")
        )
    subtree_count = (
        Assignment.objects.accepted_live()
        .filter(topic__path__startswith=OuterRef("path"))
        .order_by()
        .annotate(n=_CountDistinct(F("paper_id")))
        .values("n")
    )
    counts = {
        pk: n or 0
        for pk, n in Topic.objects.filter(pk__in=list(stale))
        .annotate(n=Subquery(subtree_count))
        .values_list("pk", "n")
    }
    now = timezone.now()
    TopicStats.objects.bulk_update(
        [
            TopicStats(
                topic_id=pk,
                paper_count=n,
                counted_generation=generations[pk],
                counted_at=now,
            )
            for pk, n in counts.items()
        ],
        ["paper_count", "counted_generation", "counted_at"],
    )
    return counts
