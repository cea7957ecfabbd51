"""A category's papers newest first, from two index ranges per category (PostgreSQL).

A paper is in a category when it is its primary category (``paper_category_newest_idx``:
category, submitted desc, id desc) or cross-listed to it (``cross_list_category_newest_idx``
of papers 0018: category, submitted desc, paper desc; cross-lists carry their paper's
submitted date). Both ranges are read newest first and stop after what is asked for, so a
page or a capped count costs the same for a category of 800 papers or of 180,000, and for
one lost among a million papers (a newest-first walk of every paper read 5,300 rows for a
page of an 842-paper category) as for a dense one. Withdrawn and deleted papers are included,
as the API's paper list shows them.

PostgreSQL only (the column and index are; ``RuntimeError`` elsewhere): the embedded SQLite
default filters categories through the ORM (``api.filters.PaperFilter.filter_category``).
"""

from __future__ import annotations

import datetime as dt

from django.db import connection

from .models import Paper

__all__ = ["category_newest_paper_ids", "category_paper_count_capped"]

_PAPERS = Paper._meta.db_table
_CROSS_LISTS = Paper.cross_lists.through._meta.db_table

# One category's newest rows of each kind, (submitted, paper id), the conditions in {where}.
_PRIMARY_ROWS = (
    f"SELECT submitted, id FROM {_PAPERS} WHERE primary_category_id = c.id{{where}}"
    " ORDER BY submitted DESC, id DESC LIMIT %(limit)s"
)
_CROSS_LISTED_ROWS = (
    f"SELECT submitted, paper_id FROM {_CROSS_LISTS} WHERE category_id = c.id{{where}}"
    " ORDER BY submitted DESC, paper_id DESC LIMIT %(limit)s"
)


def _where(
    paper: str,
    *,
    since: dt.date | None,
    until: dt.date | None,
    before: tuple[dt.date, int] | None = None,
) -> str:
    """The conditions (SQL, each led by ``AND``) on ``submitted`` and the paper id column
    ``paper``, with the named parameters ``since``, ``until``, ``before_day`` and
    ``before_id``; the date first, so that it bounds the index range scan (as
    ``api.pagination``'s cursors do)."""
    where = ""
    if since is not None:
        where += " AND submitted >= %(since)s"
    if until is not None:
        where += " AND submitted <= %(until)s"
    if before is not None:
        where += (
            " AND submitted <= %(before_day)s"
            f" AND (submitted < %(before_day)s OR {paper} < %(before_id)s)"
        )
    return where


def _sql(**conditions) -> str:
    """Every category's rows of both kinds, ``(kind, category, submitted, id)``, each kind's
    range cut at ``%(limit)s`` rows after the conditions (:func:`_where`)."""
    primary = _PRIMARY_ROWS.format(where=_where("id", **conditions))
    cross_listed = _CROSS_LISTED_ROWS.format(where=_where("paper_id", **conditions))
    return f"""
    SELECT 'primary' AS kind, c.id AS category, rows.submitted, rows.id
    FROM unnest(%(categories)s::bigint[]) c (id), LATERAL ({primary}) rows
    UNION ALL
    SELECT 'cross-list', c.id, rows.submitted, rows.paper_id
    FROM unnest(%(categories)s::bigint[]) c (id), LATERAL ({cross_listed}) rows"""


def _checked(limit: int) -> None:
    if connection.vendor != "postgresql":
        raise RuntimeError("the category walk needs PostgreSQL (papers 0018)")
    if limit < 0:
        raise ValueError(f"limit must not be negative (got {limit})")


def category_newest_paper_ids(
    *,
    category_ids: list[int],
    limit: int,
    since: dt.date | None = None,
    until: dt.date | None = None,
    before: tuple[dt.date, int] | None = None,
) -> list[int]:
    """Ids of the ``limit`` newest distinct papers (submitted descending, then id descending)
    whose primary category or a cross-list is one of ``category_ids``, submitted on or after
    ``since`` and on or before ``until`` when given, and after the keyset position
    ``before`` ``(submitted, paper id)`` in that order when given (an API cursor's next page).
    One query reading at most ``2 * len(category_ids) * limit`` index entries. Raises
    ``ValueError`` for a negative ``limit``, ``RuntimeError`` off PostgreSQL."""
    _checked(limit)
    if not limit or not category_ids:
        return []
    rows = _sql(since=since, until=until, before=before)
    sql = (
        f"SELECT id FROM ({rows}) rows GROUP BY submitted, id"
        " ORDER BY submitted DESC, id DESC LIMIT %(limit)s"
    )
    params = {"categories": list(category_ids), "limit": limit, "since": since, "until": until}
    if before is not None:
        params.update(before_day=before[0], before_id=before[1])
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [row[0] for row in cursor.fetchall()]


def category_paper_count_capped(
    *,
    category_ids: list[int],
    cap: int,
    since: dt.date | None = None,
    until: dt.date | None = None,
) -> int:
    """How many distinct papers :func:`category_newest_paper_ids` would give without a limit,
    counting no further than ``cap`` (``min(count, cap)``): one query reading at most
    ``cap`` index entries of each category's two ranges (a paper primary in one category of
    ``category_ids`` and cross-listed to another is counted once). Raises ``ValueError``
    for a negative ``cap``, ``RuntimeError`` off PostgreSQL."""
    _checked(cap)
    if not cap or not category_ids:
        return 0
    rows = _sql(since=since, until=until)
    sql = f"""
        WITH rows AS ({rows})
        SELECT (SELECT count(DISTINCT id) FROM rows),
            (SELECT coalesce(max(n), 0) FROM (
                SELECT count(*) AS n FROM rows GROUP BY kind, category) read) """
    params = {"categories": list(category_ids), "limit": cap, "since": since, "until": until}
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        distinct, longest = cursor.fetchone()
    # A range cut at the cap holds more papers than it gave: at least ``cap`` in all.
    return cap if longest >= cap else min(distinct, cap)
