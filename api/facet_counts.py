"""Whole-corpus facets from stored counts (PostgreSQL): ``papers/?group_by=…`` with no filter.

The counts live in :class:`~api.models.FacetCount`, kept by triggers on papers, assignments
and authorships (api migration 0003) that append :class:`~api.models.FacetCountDelta` rows in
the writing transaction. :func:`facet_counts_fold` adds the pending deltas in (one statement
under a lock, so a reader sees every change committed before it);
:func:`stored_group_counts` folds, then reads the top groups: two queries while nothing
changed, four after a change (five when a group fell to zero), whatever the number of
papers. The answer is what a live ``GROUP BY`` over every paper gives at the moment of the
fold (``api.tests.test_facet_counts`` compares them).

A facet read therefore writes (the fold) and needs the primary database, as every API read
does today. Deltas also pile up where nobody asks for facets: ``api.tasks.fold_facet_counts``
(beat, every few minutes) folds them.
"""

from __future__ import annotations

import datetime as dt

from django.db import connection, transaction

from .models import FacetCount, FacetCountDelta

__all__ = [
    "STORED_FACETS",
    "facet_counts_check",
    "facet_counts_fold",
    "facet_counts_rebuild",
    "stored_group_counts",
]

_COUNTS = FacetCount._meta.db_table
_DELTAS = FacetCountDelta._meta.db_table
_EPOCH = dt.date(1970, 1, 1)
Facet = FacetCount.Facet

# The group_by keys answered from stored counts, each as the SQL of its top groups: rows of
# (key, display name or NULL, count), ordered as api.facets.group_counts orders live groups
# (count descending, then the key as the live query sorts it), at most %(limit)s of them.
_TOP_SQL = {
    "primary_category": f"""
        SELECT c.code, c.name, f.count FROM {_COUNTS} f
        JOIN papers_category c ON c.id = f.key
        WHERE f.facet = '{Facet.PRIMARY_CATEGORY}' AND f.count > 0
        ORDER BY f.count DESC, c.code LIMIT %(limit)s""",
    "topic": f"""
        SELECT t.slug, t.name, f.count FROM {_COUNTS} f
        JOIN topics_topic t ON t.id = f.key
        WHERE f.facet = '{Facet.TOPIC}' AND f.count > 0
        ORDER BY f.count DESC, t.slug LIMIT %(limit)s""",
    # facet_count_top_idx walks the top authors of a million; the names joined to those only.
    "author": f"""
        SELECT top.key, a.name, top.count FROM (
            SELECT key, count FROM {_COUNTS}
            WHERE facet = '{Facet.AUTHOR}' AND count > 0
            ORDER BY count DESC, key LIMIT %(limit)s
        ) top JOIN papers_author a ON a.id = top.key
        ORDER BY top.count DESC, top.key""",
    "withdrawn": f"""
        SELECT key = 1, NULL, count FROM {_COUNTS}
        WHERE facet = '{Facet.WITHDRAWN}' AND count > 0
        ORDER BY count DESC, key LIMIT %(limit)s""",
}
# Periods (submitted year, month, week) are groups of their own, keyed by their first day
# (January 1st, the 1st, the Monday) as days since 1970-01-01. The triggers write day deltas
# only; the fold adds each day's delta to its three periods too (_FOLD_SQL), so a period
# facet reads at most 50 stored rows like the others instead of summing every day's row
# (about 12,000 for 33 years: 3-4 ms at each request).
_PERIODS = {
    "submitted_year": (Facet.SUBMITTED_YEAR, "year"),
    "submitted_month": (Facet.SUBMITTED_MONTH, "month"),
    "submitted_week": (Facet.SUBMITTED_WEEK, "week"),
}
_PERIOD_SQL = f"""
    SELECT DATE '1970-01-01' + key::integer, NULL, count FROM {_COUNTS}
    WHERE facet = %(facet)s AND count > 0
    ORDER BY count DESC, key LIMIT %(limit)s"""


def _period_key(day_sql: str, period: str) -> str:
    """SQL of the key of the ``period`` (``year``, ``month``, ``week``: weeks start on Monday)
    holding ``day_sql`` (an SQL date), as days since 1970-01-01."""
    return f"(date_trunc('{period}', ({day_sql})::timestamp)::date - DATE '1970-01-01')"


# (facet, key SQL) of each period holding the day keyed by days since 1970-01-01.
_DAY = "DATE '1970-01-01' + s.key::integer"
_DAY_PERIODS = ", ".join(
    f"('{facet}', {_period_key(_DAY, period)})" for facet, period in _PERIODS.values()
)

STORED_FACETS = frozenset([*_TOP_SQL, *_PERIODS])

# Whether any delta waits, through the primary key's index: after a bulk import's fold the
# table holds hundreds of thousands of dead rows until vacuumed, which a sequential scan (the
# fold's DELETE) reads every time (15 ms at 700,000), and an index scan only once.
_PENDING_SQL = f"SELECT 1 FROM {_DELTAS} ORDER BY id LIMIT 1"
# A fold of this many deltas or more vacuums their table: it leaves that many dead rows, which
# every fold's probe reads through until a vacuum removes them (1.3 million after a bulk
# import of 1M papers: 4-9 ms a facet request), and autovacuum (api 0005 asks it to come
# early) may be slow, or switched off. Vacuuming 1.3 million dead rows took 0.4 s; a fold of
# that many takes longer. Skipped inside a transaction (VACUUM cannot run there) and while
# another vacuum holds the table (SKIP_LOCKED).
VACUUM_AFTER_FOLDED = 10_000
_VACUUM_SQL = f"VACUUM (SKIP_LOCKED) {_DELTAS}"
# One fold at a time (a transaction-scoped advisory lock, waited for): two folds taking the
# same delta and count rows in different orders could otherwise deadlock.
_FOLD_LOCK_SQL = "SELECT pg_advisory_xact_lock(%s)"
_FOLD_LOCK = 0x61706966616365  # "apiface"
# One statement: the deltas it deletes are exactly those it adds, each day's to its periods
# too. Groups that fell to zero come back to delete.
_FOLD_SQL = f"""
    WITH moved AS (
        DELETE FROM {_DELTAS} RETURNING facet, key, delta
    ), summed AS (
        SELECT facet, key, sum(delta) AS delta FROM moved GROUP BY facet, key
    ), periods AS (
        SELECT p.facet, p.key, sum(s.delta) AS delta
        FROM summed s CROSS JOIN LATERAL (VALUES {_DAY_PERIODS}) p (facet, key)
        WHERE s.facet = '{Facet.SUBMITTED_DAY}'
        GROUP BY p.facet, p.key
    ), upserted AS (
        INSERT INTO {_COUNTS} (facet, key, count)
        SELECT facet, key, delta FROM summed
        UNION ALL SELECT facet, key, delta FROM periods
        ON CONFLICT (facet, key) DO UPDATE SET count = {_COUNTS}.count + EXCLUDED.count
        RETURNING facet, key, count
    )
    SELECT (SELECT count(*) FROM moved),
        (SELECT array_agg(facet) FROM upserted WHERE count <= 0),
        (SELECT array_agg(key) FROM upserted WHERE count <= 0)"""
# The groups the fold emptied (under its lock: no other fold refilled them meanwhile).
_EMPTY_SQL = f"""
    DELETE FROM {_COUNTS} c USING unnest(%s::varchar[], %s::bigint[]) gone (facet, key)
    WHERE c.facet = gone.facet AND c.key = gone.key AND c.count <= 0"""


def facet_counts_fold() -> int:
    """Add every committed :class:`~api.models.FacetCountDelta` into
    :class:`~api.models.FacetCount` and delete groups whose count fell to zero. Returns the
    number of delta rows folded. One query when none waits (an index probe); else three (the
    probe, then the lock and the fold in one transaction; four when a group emptied), and a
    ``VACUUM`` of the deltas after folding :data:`VACUUM_AFTER_FOLDED` or more outside a
    transaction; a fold running beside it is waited for. PostgreSQL only
    (raises ``RuntimeError`` elsewhere: no trigger writes deltas there)."""
    if connection.vendor != "postgresql":
        raise RuntimeError("stored facet counts need PostgreSQL")
    with connection.cursor() as cursor:
        cursor.execute(_PENDING_SQL)
        if cursor.fetchone() is None:
            return 0
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_FOLD_LOCK_SQL, [_FOLD_LOCK])
        cursor.execute(_FOLD_SQL)
        folded, facets, keys = cursor.fetchone()
        if facets:
            cursor.execute(_EMPTY_SQL, [facets, keys])
    if folded >= VACUUM_AFTER_FOLDED and not connection.in_atomic_block:
        with connection.cursor() as cursor:
            cursor.execute(_VACUUM_SQL)
    return folded


# Every group counted from the rows themselves (what the triggers and the fold keep, as
# api 0003 and 0006 first counted it): (facet, key, count).
_LIVE_PERIODS_SQL = "\n    UNION ALL\n    ".join(
    f"SELECT '{facet}', {_period_key('submitted', period)}, count(*) FROM papers_paper GROUP BY 2"
    for facet, period in _PERIODS.values()
)
_LIVE_SQL = f"""
    SELECT '{Facet.PRIMARY_CATEGORY}', primary_category_id, count(*) FROM papers_paper
        GROUP BY primary_category_id
    UNION ALL
    SELECT '{Facet.SUBMITTED_DAY}', submitted - DATE '1970-01-01', count(*) FROM papers_paper
        GROUP BY submitted
    UNION ALL
    SELECT '{Facet.WITHDRAWN}', withdrawn::int, count(*) FROM papers_paper GROUP BY withdrawn
    UNION ALL
    {_LIVE_PERIODS_SQL}
    UNION ALL
    SELECT '{Facet.TOPIC}', topic_id, count(*) FROM topics_assignment WHERE state = 'accepted'
        GROUP BY topic_id
    UNION ALL
    SELECT '{Facet.AUTHOR}', author_id, count(DISTINCT paper_id) FROM papers_authorship
        GROUP BY author_id"""


def facet_counts_check() -> dict[tuple[str, int], tuple[int, int]]:
    """The groups whose stored count differs from a live count of every row, as
    ``{(facet, key): (stored, live)}`` (0 for a group missing on one side); empty when the
    stored counts are right. Folds first, then counts everything in one statement (seconds at
    a million papers: an operator's check, ``manage.py facet_counts``, not a request's)."""
    facet_counts_fold()
    with connection.cursor() as cursor:
        cursor.execute(
            f"""SELECT coalesce(s.facet, l.facet), coalesce(s.key, l.key),
                    coalesce(s.count, 0), coalesce(l.count, 0)
                FROM {_COUNTS} s FULL JOIN ({_LIVE_SQL}) l (facet, key, count)
                    ON l.facet = s.facet AND l.key = s.key
                WHERE s.count IS DISTINCT FROM l.count"""
        )
        return {(facet, key): (stored, live) for facet, key, stored, live in cursor.fetchall()}


def facet_counts_rebuild() -> int:
    """Count every group again from the rows and store that, dropping pending deltas (after
    a data-only restore that bypassed the triggers, or triggers disabled by hand). Returns
    the number of groups stored. Takes the fold's lock and locks the counted tables against
    writers (``SHARE`` mode) until it commits, so no change slips between the count and the
    store."""
    if connection.vendor != "postgresql":
        raise RuntimeError("stored facet counts need PostgreSQL")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_FOLD_LOCK_SQL, [_FOLD_LOCK])
        cursor.execute(
            "LOCK TABLE papers_paper, topics_assignment, papers_authorship IN SHARE MODE"
        )
        cursor.execute(f"DELETE FROM {_DELTAS}")
        cursor.execute(f"DELETE FROM {_COUNTS}")
        cursor.execute(f"INSERT INTO {_COUNTS} (facet, key, count) {_LIVE_SQL}")
        return cursor.rowcount


def stored_group_counts(key: str, *, limit: int) -> list[tuple[object, str | None, int]]:
    """The top ``limit`` groups of every paper by ``key`` (one of :data:`STORED_FACETS`), as
    ``[(group key, display name or None, paper count), ...]``, count descending then key:
    a category's code, a topic's slug, an author's id, a bool for ``withdrawn``, a
    ``datetime.date`` (the first day of the year, month or Monday week) for the submitted
    periods. Folds first (:func:`facet_counts_fold`): two queries while nothing changed,
    four after a change, five when a group emptied.
    Raises ``KeyError`` for another key."""
    if key in _PERIODS:
        sql, params = _PERIOD_SQL, {"facet": _PERIODS[key][0].value, "limit": limit}
    else:
        sql, params = _TOP_SQL[key], {"limit": limit}
    facet_counts_fold()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [tuple(row) for row in cursor.fetchall()]
