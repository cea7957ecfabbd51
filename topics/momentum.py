"""Momentum: how fast a topic is growing, as DESIGN.md ("Momentum (exact)") defines it.

- ``as_of``: the newest submitted date among all papers, or a date asked for;
- ``recent``: distinct papers of the topic or its descendants with an accepted assignment,
  submitted in ``(as_of - 28 days, as_of]``; ``before``: the same for the 28 days before that;
- ``change``: ``(recent - before) / before`` as a whole percent (none when ``before`` is 0);
- ``share``: ``recent`` over all papers submitted in the same 28 days;

Withdrawn and deleted papers count nowhere here, neither in a topic's figures nor in the
share's "all new papers": both sides of the fraction are papers that count
(``papers.querysets.LIVE``), so a topic's share is of the papers a reader can still read, and
a wave of withdrawals elsewhere does not move it.
- the chart: 12 weekly counts of the same papers, weeks starting Monday, the last being the
  week that holds ``as_of``.

Three queries whatever the data: the newest submitted date (skipped when ``as_of`` is given),
the topic's papers grouped by submitted date, and the count of all papers in the window.
:func:`topics_momentum` gives the same figures for many topics in the same number of queries;
:func:`topic_momentum_stored` (what pages show) reads them from ``TopicStats`` in two queries,
computing them again only when the data may have changed.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from django.db import connection
from django.db.models import Count, Max
from django.utils import timezone

from papers.models import Paper

from .models import Assignment, Topic, TopicStats
from .selectors import topic_stats_loaded

__all__ = [
    "CHART_WEEKS",
    "WINDOW_DAYS",
    "ChartBar",
    "Momentum",
    "WeekCount",
    "momentum_change_text",
    "momentum_chart",
    "momentum_days_from",
    "momentum_from_days",
    "momentum_sentence",
    "sparkline_points",
    "topic_momentum",
    "topic_momentum_stored",
    "topics_momentum",
    "week_label",
]

WINDOW_DAYS = 28
CHART_WEEKS = 12


class WeekCount(NamedTuple):
    """One chart week: ``week_start`` (a Monday) and the topic's papers submitted that week."""

    week_start: dt.date
    count: int


@dataclass(frozen=True)
class Momentum:
    """A topic's momentum on ``as_of``.

    - ``recent`` / ``before``: distinct papers in the last four weeks / the four weeks before;
    - ``change_pct``: whole percent change from ``before`` to ``recent``; None when ``before``
      is 0 (no percentage of nothing);
    - ``share``: ``recent`` as a fraction (0.005 is 0.5%) of all papers submitted in the last
      four weeks that count (neither withdrawn nor deleted); 0.0 when there were none;
    - ``weeks``: ``CHART_WEEKS`` entries, oldest first, the last holding ``as_of``.
    """

    as_of: dt.date
    recent: int
    before: int
    change_pct: int | None
    share: float
    weeks: list[WeekCount]


class ChartBar(NamedTuple):
    """One bar of the momentum chart in SVG user units (origin top left, y grows downwards)."""

    x: float
    y: float
    width: float
    height: float
    week_start: dt.date
    count: int
    label: str

    @property
    def week_of(self) -> str:
        """``week_start`` as ``Sep 28`` (Django's ``date:"M j"`` in English, without its
        per-call format lookups: the chart names each week twice)."""
        return f"{self.week_start:%b} {self.week_start.day}"


def _windows(as_of: dt.date) -> tuple[dt.date, dt.date, dt.date, dt.date]:
    """``(recent_after, before_after, first_monday, earliest)`` for ``as_of``: the two
    four-week windows' open lower ends, the first chart week's Monday, and the first day any
    figure needs."""
    recent_after = as_of - dt.timedelta(days=WINDOW_DAYS)
    before_after = recent_after - dt.timedelta(days=WINDOW_DAYS)
    last_monday = as_of - dt.timedelta(days=as_of.weekday())
    first_monday = last_monday - dt.timedelta(weeks=CHART_WEEKS - 1)
    earliest = min(before_after + dt.timedelta(days=1), first_monday)
    return recent_after, before_after, first_monday, earliest


def momentum_from_days(
    per_day: Iterable[tuple[dt.date, int]], *, as_of: dt.date, all_recent: int | None = None
) -> Momentum:
    """The :class:`Momentum` on ``as_of`` of papers counted per submitted day (``per_day``:
    ``(date, distinct papers that day)`` pairs, days outside the windows ignored), for anything
    that has papers: a topic, an author. ``all_recent``: all papers that count submitted in
    the last four weeks, for the share (0.0 when None or 0). No query; the first day any
    figure needs is :func:`momentum_days_from` of ``as_of``."""
    recent_after, before_after, first_monday, _ = _windows(as_of)
    recent = before = 0
    week_counts = dict.fromkeys(
        (first_monday + dt.timedelta(weeks=i) for i in range(CHART_WEEKS)), 0
    )
    for submitted, n in per_day:
        if submitted > as_of:
            continue
        if submitted > recent_after:
            recent += n
        elif submitted > before_after:
            before += n
        monday = submitted - dt.timedelta(days=submitted.weekday())
        if monday in week_counts:
            week_counts[monday] += n
    return Momentum(
        as_of=as_of,
        recent=recent,
        before=before,
        change_pct=_change_pct(recent, before),
        share=recent / all_recent if all_recent else 0.0,
        weeks=[WeekCount(monday, n) for monday, n in week_counts.items()],
    )


def momentum_days_from(as_of: dt.date) -> dt.date:
    """The first submitted day :func:`momentum_from_days` needs counts of for ``as_of``."""
    return _windows(as_of)[3]


def topic_momentum(*, topic: Topic, as_of: dt.date | None = None) -> Momentum:
    """Compute ``topic``'s momentum (see the module docstring) on ``as_of``.

    ``as_of`` defaults to the newest submitted date among all papers, so historical data reads
    as it did then; with no papers at all it is today's date. Runs two queries, three when
    ``as_of`` is not given.
    """
    if as_of is None:
        as_of = Paper.objects.aggregate(newest=Max("submitted"))["newest"] or timezone.localdate()

    recent_after = as_of - dt.timedelta(days=WINDOW_DAYS)
    before_after = recent_after - dt.timedelta(days=WINDOW_DAYS)
    last_monday = as_of - dt.timedelta(days=as_of.weekday())
    first_monday = last_monday - dt.timedelta(weeks=CHART_WEEKS - 1)
    # One grouped query covers both four-week windows and all chart weeks.
    earliest = min(before_after + dt.timedelta(days=1), first_monday)

    # Assignments carry their paper's submitted date (indexed per topic), so the papers table
    # is not read; a distinct count keeps a paper under two subtree topics counted once.
    per_day = (
        Assignment.objects.accepted_live()
        .filter(
            topic_id__in=Topic.objects.subtree(topic).values("pk"),
            submitted__gte=earliest,
            submitted__lte=as_of,
        )
        .order_by()
        .values("submitted")
        .annotate(n=Count("paper_id", distinct=True))
        .values_list("submitted", "n")
    )
    recent = before = 0
    week_counts = dict.fromkeys(
        (first_monday + dt.timedelta(weeks=i) for i in range(CHART_WEEKS)), 0
    )
    for submitted, n in per_day:
        if submitted > recent_after:
            recent += n
        elif submitted > before_after:
            before += n
        monday = submitted - dt.timedelta(days=submitted.weekday())
        if monday in week_counts:
            week_counts[monday] += n

    all_recent = Paper.objects.live().submitted_between(recent_after, as_of).count()
    return Momentum(
        as_of=as_of,
        recent=recent,
        before=before,
        change_pct=_change_pct(recent, before),
        share=recent / all_recent if all_recent else 0.0,
        weeks=[WeekCount(monday, n) for monday, n in week_counts.items()],
    )


def _momentum_to_json(m: Momentum) -> dict:
    return {
        "as_of": m.as_of.isoformat(),
        "recent": m.recent,
        "before": m.before,
        "change_pct": m.change_pct,
        "share": m.share,
        "weeks": [[w.week_start.isoformat(), w.count] for w in m.weeks],
    }


def _momentum_from_json(data: dict) -> Momentum:
    return Momentum(
        as_of=dt.date.fromisoformat(data["as_of"]),
        recent=data["recent"],
        before=data["before"],
        change_pct=data["change_pct"],
        share=data["share"],
        weeks=[WeekCount(dt.date.fromisoformat(day), n) for day, n in data["weeks"]],
    )


def topic_momentum_stored(*, topic: Topic, as_of: dt.date | None = None) -> Momentum:
    """:func:`topic_momentum` of ``topic`` (same figures, same ``as_of`` default), read from
    the topic's :class:`~topics.models.TopicStats` in two queries (the newest submitted date
    and paper id; the stats row, none when ``topic`` was loaded with ``select_related("stats")``)
    while they are current.

    They are current while the newest paper id and ``as_of`` are those they were computed on
    and the topic's ``generation`` has not moved on (tagging, curation and moves bump it after
    commit, see ``topics.services``); otherwise they are computed again (two more queries) and
    stored (one or two more). A paper whose submitted date changes, or that is deleted, is
    seen at the next new paper or assignment change.
    """
    latest = Paper.objects.aggregate(newest=Max("submitted"), last=Max("id"))
    if as_of is None:
        as_of = latest["newest"] or timezone.localdate()
    stats = topic_stats_loaded(topic)
    if stats is None:
        stats, _ = TopicStats.objects.get_or_create(topic_id=topic.pk)
    # Read before computing: a change committed meanwhile bumps the generation past this key.
    key = f"{as_of.isoformat()}:{latest['last']}:{stats.generation}"
    if stats.momentum_key == key and stats.momentum:
        return _momentum_from_json(stats.momentum)
    momentum = topic_momentum(topic=topic, as_of=as_of)
    TopicStats.objects.filter(pk=topic.pk, generation=stats.generation).update(
        momentum=_momentum_to_json(momentum), momentum_key=key
    )
    return momentum


# Distinct papers per (topic, submitted day) for a set of topics, each topic counting its whole
# subtree (assignment topics whose path starts with the topic's path). Counting per day is
# enough for distinct counts over any span of days: a paper has one submitted date (which
# every assignment carries, so the papers table is not read).
_SUBTREE_DAILY_SQL = """
    SELECT t.id, a.submitted, COUNT(DISTINCT a.paper_id)
    FROM {topic} t
    JOIN {topic} member ON member.path LIKE t.path || '%%'
    JOIN {assignment} a ON a.topic_id = member.id
    WHERE t.id IN ({topic_ids}) AND a.state = %s AND a.paper_live
        AND a.submitted >= %s AND a.submitted <= %s
    GROUP BY t.id, a.submitted
"""


def topics_momentum(
    *, topics: Iterable[Topic] | None = None, as_of: dt.date | None = None
) -> dict[int, Momentum]:
    """Momentum of many topics at once: ``{topic pk: Momentum}``, each value equal to what
    :func:`topic_momentum` gives for that topic on the same ``as_of``.

    ``topics`` defaults to every active topic (one more query). Runs a fixed number of queries
    whatever the number of topics or papers: the newest submitted date (skipped when ``as_of``
    is given), one grouped query of distinct subtree papers per topic and submitted day over
    the chart's 12 weeks (joining each topic to its subtree by path prefix, so a paper under
    two children counts once for the parent), and the count of all papers in the last four
    weeks. Raises ``ValueError`` for a topic without a path (as ``in_subtree`` does).
    """
    if topics is None:
        topics = Topic.objects.active().only("id", "path")
    topics = list(topics)
    for topic in topics:
        if not topic.path:
            raise ValueError(
                f"topic {topic.pk} has no path; create and move topics via topics.services"
            )
    if as_of is None:
        as_of = Paper.objects.aggregate(newest=Max("submitted"))["newest"] or timezone.localdate()
    if not topics:
        return {}

    recent_after = as_of - dt.timedelta(days=WINDOW_DAYS)
    before_after = recent_after - dt.timedelta(days=WINDOW_DAYS)
    last_monday = as_of - dt.timedelta(days=as_of.weekday())
    first_monday = last_monday - dt.timedelta(weeks=CHART_WEEKS - 1)
    earliest = min(before_after + dt.timedelta(days=1), first_monday)

    sql = _SUBTREE_DAILY_SQL.format(
        topic=connection.ops.quote_name(Topic._meta.db_table),
        assignment=connection.ops.quote_name(Assignment._meta.db_table),
        topic_ids=", ".join(["%s"] * len(topics)),
    )
    params = [t.pk for t in topics] + [Assignment.State.ACCEPTED, earliest, as_of]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()

    mondays = [first_monday + dt.timedelta(weeks=i) for i in range(CHART_WEEKS)]
    counts = {t.pk: [0, 0, dict.fromkeys(mondays, 0)] for t in topics}
    for topic_id, submitted, n in rows:
        if isinstance(submitted, str):  # SQLite hands dates back as text in raw queries
            submitted = dt.date.fromisoformat(submitted)
        entry = counts[topic_id]
        if submitted > recent_after:
            entry[0] += n
        elif submitted > before_after:
            entry[1] += n
        monday = submitted - dt.timedelta(days=submitted.weekday())
        if monday in entry[2]:
            entry[2][monday] += n

    all_recent = Paper.objects.live().submitted_between(recent_after, as_of).count()
    return {
        topic_id: Momentum(
            as_of=as_of,
            recent=recent,
            before=before,
            change_pct=_change_pct(recent, before),
            share=recent / all_recent if all_recent else 0.0,
            weeks=[WeekCount(monday, n) for monday, n in weeks.items()],
        )
        for topic_id, (recent, before, weeks) in counts.items()
    }


def _change_pct(recent: int, before: int) -> int | None:
    """``(recent - before) / before`` in whole percent, halves rounded away from zero."""
    if before == 0:
        return None
    # Integer arithmetic: float rounding would turn 12.5 into 12 and some exact halves into
    # their neighbours.
    quotient, remainder = divmod(abs(recent - before) * 100, before)
    if 2 * remainder >= before:
        quotient += 1
    return quotient if recent >= before else -quotient


def _papers(n: int) -> str:
    return f"{n} paper" if n == 1 else f"{n} papers"


def _share_text(m: Momentum) -> str:
    if m.recent == 0 or m.share == 0:
        return "0%"
    percent = m.share * 100
    if percent < 0.1:
        return "<0.1%"
    return f"{percent:.1f}%"


def momentum_change_text(m: Momentum) -> str:
    """The first part of :func:`momentum_sentence`, without the share: ``"54 papers in the
    last four weeks, up 145% on the four weeks before"`` (no final full stop)."""
    return momentum_sentence(m).split(". ", 1)[0]


def sparkline_points(counts: list[int], *, width: float = 96, height: float = 20) -> str:
    """SVG polyline points (``"x,y x,y …"``) of ``counts`` in a ``width`` x ``height``
    viewBox (``templates/topics/_sparkline.html``), oldest left, the largest count at the top;
    all zero is a flat line on the baseline."""
    peak = max(counts, default=0)
    step = width / max(len(counts) - 1, 1)
    usable = height - 2  # a 1-unit margin so the stroke is not clipped
    return " ".join(
        f"{i * step:.1f},{height - 1 - (usable * n / peak if peak else 0):.1f}"
        for i, n in enumerate(counts)
    )


def momentum_sentence(m: Momentum) -> str:
    """The momentum as the topic page words it, e.g.

    ``"54 papers in the last four weeks, up 145% on the four weeks before. 0.5% of all new
    papers."``; ``"down 12% …"``; ``"no change …"``; with nothing before, ``"30 papers in the
    last four weeks, none in the four weeks before (new in the last four weeks). …"``.
    The share has one decimal, ``"<0.1%"`` below a tenth of a percent and ``"0%"`` for none.
    A quiet topic says so: ``"No new papers in the last four weeks (3 in the four weeks
    before)."`` or ``"No new papers in the last four weeks, nor in the four weeks before."``.
    """
    if not m.recent:
        if m.before:
            return f"No new papers in the last four weeks ({m.before} in the four weeks before)."
        return "No new papers in the last four weeks, nor in the four weeks before."
    count = f"{_papers(m.recent)} in the last four weeks"
    if m.change_pct is None:
        change = "none in the four weeks before (new in the last four weeks)"
    elif m.change_pct > 0:
        change = f"up {m.change_pct}% on the four weeks before"
    elif m.change_pct < 0:
        change = f"down {-m.change_pct}% on the four weeks before"
    else:
        change = "no change on the four weeks before"
    return f"{count}, {change}. {_share_text(m)} of all new papers."


def week_label(week_start: dt.date, *, last: bool = False) -> str:
    """Axis label for a chart week: ``"Jul 13"``, or ``"Week of Sep 28"`` for the last week."""
    # Not ``%-d``: that strftime flag is glibc-only.
    label = f"{week_start:%b} {week_start.day}"
    return f"Week of {label}" if last else label


def momentum_chart(
    m: Momentum, *, width: float = 600, height: float = 150, gap: float = 6
) -> list[ChartBar]:
    """Bars for ``m.weeks`` in a ``width`` x ``height`` SVG viewBox (user units), oldest first.

    Bar heights are proportional to the weekly count, the busiest week filling ``height``;
    an empty week gets a 1-unit stub so the baseline stays visible. Labels come from
    :func:`week_label`.
    """
    peak = max((w.count for w in m.weeks), default=0)
    slot = width / max(len(m.weeks), 1)
    bars = []
    for i, week in enumerate(m.weeks):
        bar_height = max(height * week.count / peak, 1.0) if peak else 1.0
        bars.append(
            ChartBar(
                x=round(i * slot + gap / 2, 2),
                y=round(height - bar_height, 2),
                width=round(slot - gap, 2),
                height=round(bar_height, 2),
                week_start=week.week_start,
                count=week.count,
                label=week_label(week.week_start, last=i == len(m.weeks) - 1),
            )
        )
    return bars
