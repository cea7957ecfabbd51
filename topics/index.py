"""The topics index (``/topics/``): every active topic with its subtree paper count, momentum
and 12-week sparkline, as plain data cached whole, and the rankings and name search over it.
The cache's keys and invalidation live in ``topics.caches``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass, field

from django.core.cache import cache
from django.db import connection
from django.db.models import Count, Q
from django.utils import timezone

from papers.models import Paper

from .caches import INDEX_CACHE_PREFIX, INDEX_GENERATION_KEY
from .models import Assignment, Topic
from .momentum import CHART_WEEKS, WINDOW_DAYS, Momentum, sparkline_points, topics_momentum
from .selectors import TopicNode, topic_tree

__all__ = [
    "INDEX_CACHE_SECONDS",
    "INDEX_SORTS",
    "RISING_MIN_PAPERS",
    "IndexTopic",
    "TopicIndex",
    "topic_index",
    "topic_index_matching",
    "topic_index_ranked",
]

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
        return sparkline_points(self.weekly_counts, width=_SPARK_WIDTH, height=_SPARK_HEIGHT)


@dataclass
class TopicIndex:
    """Everything the index shows: ``roots`` (the tree), ``topics`` (every node, in tree
    order), ``as_of`` and the two four-week windows' totals of all new papers (those that
    count: neither withdrawn nor deleted, as in ``topics.momentum``)."""

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
    totals = (
        Paper.objects.live()
        .submitted_between(before_after, as_of)
        .aggregate(
            recent=Count("id", filter=Q(submitted__gt=recent_after)),
            before=Count("id", filter=Q(submitted__lte=recent_after)),
        )
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
