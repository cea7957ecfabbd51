"""The bulk path's PostgreSQL writer: a batch of paper plans written with binary ``COPY``.

:func:`plans_write_copy` writes what ``papers.ingest.write.plans_write`` (the ORM writer)
writes, set-based: rows that cannot exist yet (new papers and everything hanging from them) go
straight into their tables, the others through temporary staging tables and
``INSERT … ON CONFLICT``; authors and affiliations are created with one statement per batch.
:func:`rows_copy` is the binary ``COPY`` itself.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable

import psycopg
from django.db import connection, transaction
from django.utils import timezone
from psycopg.types.json import Jsonb

from papers.author_services import author_ids_current
from papers.categories import category_ids_ensure
from papers.models import Affiliation, Author, Authorship, Paper, PaperAffiliation, PaperVersion

from .merge import ROW_FIELDS
from .write import PaperPlan

__all__ = ["plans_write_copy", "rows_copy"]

CrossListThrough = Paper.cross_lists.through
AuthorshipAffiliation = Authorship.affiliations.through

_PAPER = Paper._meta.db_table
_VERSION = PaperVersion._meta.db_table
_AUTHOR = Author._meta.db_table
_AFFILIATION = Affiliation._meta.db_table
_AUTHORSHIP = Authorship._meta.db_table
_AUTHORSHIP_AFFILIATION = AuthorshipAffiliation._meta.db_table
_PAPER_AFFILIATION = PaperAffiliation._meta.db_table
_CROSS_LIST = CrossListThrough._meta.db_table

_PAPER_COLUMNS = (
    "arxiv_id",
    *ROW_FIELDS,
    "primary_category_id",
    "author_count",
    "affiliation_count",
)
_row_fields = operator.attrgetter(*ROW_FIELDS)
_DOIS = ROW_FIELDS.index("dois")


def _row_values(state) -> list:
    """The ROW_FIELDS values of a paper state, JSON ones wrapped for the binary COPY."""
    values = list(_row_fields(state))
    values[_DOIS] = Jsonb(values[_DOIS])
    return values


_VERSION_COLUMNS = ("paper_id", "number", "submitted", "size_kb", "source_type")
_AUTHOR_COLUMNS = ("name", "keyname", "forenames", "suffix")

# Staging tables: the target's column types without its constraints, private to the session
# and dropped when the batch commits (kept, and emptied, when the caller's transaction goes on).
_STAGING = {
    "backfill_paper": (_PAPER, _PAPER_COLUMNS),
    "backfill_version": (_VERSION, _VERSION_COLUMNS),
    "backfill_author": (_AUTHOR, _AUTHOR_COLUMNS),
    "backfill_affiliation": (_AFFILIATION, ("name",)),
}


def plans_write_copy(plans: list[PaperPlan], author_parts: dict[str, dict[str, str]]) -> None:
    """Write ``plans`` as :func:`papers.ingest.write.plans_write` does, with COPY and set-based SQL.

    The same rows and the same handling of existing ones: paper rows upserted on
    ``arxiv_id``, versions on ``(paper, number)``, authors and affiliations created when
    missing and otherwise left as they are, cross-lists and authorships of the written papers
    replaced, authorship affiliations inserted in listed order (the order they are read back
    in). Rows that cannot exist yet (those of a paper this batch inserted) are copied straight
    into their tables; the rest goes through staging tables and ``ON CONFLICT``. Sets
    ``plan.pk``. Call inside a transaction, on PostgreSQL.
    """
    category_ids = category_ids_ensure(
        {plan.state.primary for plan in plans}
        | {code for plan in plans for code in plan.state.cross_lists}
    )
    now = timezone.now()
    with connection.cursor() as cursor:
        if _lz4_available(cursor):
            # Abstracts make most paper rows long enough to be compressed: lz4 does that
            # several times faster than the default pglz, and readers cannot tell.
            cursor.execute("SET LOCAL default_toast_compression = 'lz4'")
        for staging, (table, columns) in _STAGING.items():
            cursor.execute(
                f"CREATE TEMPORARY TABLE IF NOT EXISTS {staging} ON COMMIT DROP AS "
                f"SELECT {', '.join(columns)} FROM {table} WITH NO DATA"
            )
        cursor.execute(f"TRUNCATE {', '.join(_STAGING)}")

        inserted = _store_papers(cursor, plans, category_ids, now)
        # A paper row this statement inserted has no versions, cross-lists or authorships yet
        # (``plan.old`` is None for a paper another worker stored meanwhile, so it cannot tell).
        existed = [plan for plan in plans if plan.pk not in inserted]
        cross_listed = [plan.pk for plan in existed if plan.cross_lists_changed]
        if cross_listed:
            cursor.execute(f"DELETE FROM {_CROSS_LIST} WHERE paper_id = ANY(%s)", [cross_listed])
        replaced = [plan.pk for plan in existed if plan.authors_changed]
        if replaced:
            cursor.execute(
                f"DELETE FROM {_AUTHORSHIP_AFFILIATION} WHERE authorship_id IN "
                f"(SELECT id FROM {_AUTHORSHIP} WHERE paper_id = ANY(%s))",
                [replaced],
            )
            cursor.execute(f"DELETE FROM {_AUTHORSHIP} WHERE paper_id = ANY(%s)", [replaced])
            cursor.execute(f"DELETE FROM {_PAPER_AFFILIATION} WHERE paper_id = ANY(%s)", [replaced])
        _copy_cross_lists(
            cursor, [plan for plan in plans if plan.cross_lists_changed], category_ids
        )
        _copy_versions(cursor, plans, inserted)
        _copy_authors(cursor, [plan for plan in plans if plan.authors_changed], author_parts)


def _lz4_available(cursor) -> bool:
    cursor.execute(
        "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
    )
    row = cursor.fetchone()
    return bool(row and row[0])


def _store_papers(cursor, plans: list[PaperPlan], category_ids: dict[str, int], now) -> set[int]:
    """Insert or update the paper rows, in arxiv_id order (every worker locks rows in the same
    order, as the ORM writer does); sets ``plan.pk`` and returns the ids of rows inserted.

    Papers not stored when the batch began are copied straight into the table; should another
    worker have stored one of them since, the copy is undone (a savepoint) and every row goes
    through the staging table and ``INSERT … ON CONFLICT`` instead.
    """
    new = sorted((plan for plan in plans if plan.old is None), key=lambda plan: plan.state.arxiv_id)
    known = [plan for plan in plans if plan.old is not None]
    inserted: set[int] = set()
    if new:
        try:
            with transaction.atomic():
                _copy_paper_rows(cursor, _PAPER, new, category_ids, now=now)
        except psycopg.errors.UniqueViolation:
            known = plans
        else:
            cursor.execute(
                f"SELECT arxiv_id, id FROM {_PAPER} WHERE arxiv_id = ANY(%s)",
                [[plan.state.arxiv_id for plan in new]],
            )
            pks = dict(cursor.fetchall())
            for plan in new:
                plan.pk = pks[plan.state.arxiv_id]
                inserted.add(plan.pk)
    if known:
        _copy_paper_rows(cursor, "backfill_paper", known, category_ids)
        columns = ", ".join(_PAPER_COLUMNS)
        assignments = ", ".join(
            f"{column} = EXCLUDED.{column}" for column in (*_PAPER_COLUMNS[1:], "updated_at")
        )
        # ``xmax = 0`` tells a row the statement inserted from one it updated on conflict.
        cursor.execute(
            f"INSERT INTO {_PAPER} (created_at, updated_at, {columns}) "
            f'SELECT %s, %s, {columns} FROM backfill_paper ORDER BY arxiv_id COLLATE "C" '
            f"ON CONFLICT (arxiv_id) DO UPDATE SET {assignments} "
            "RETURNING arxiv_id, id, xmax = 0",
            [now, now],
        )
        pks = {}
        for arxiv_id, pk, is_new in cursor.fetchall():
            pks[arxiv_id] = pk
            if is_new:
                inserted.add(pk)
        for plan in known:
            plan.pk = pks[plan.state.arxiv_id]
    return inserted


def _copy_paper_rows(cursor, table: str, plans: list[PaperPlan], category_ids, *, now=None) -> None:
    """COPY the paper rows of ``plans`` into ``table``, with ``created_at``/``updated_at``
    when ``now`` is given (the staging table has no such columns)."""
    stamps = (now, now) if now else ()
    rows_copy(
        cursor,
        table,
        (*(("created_at", "updated_at") if now else ()), *_PAPER_COLUMNS),
        (
            (
                *stamps,
                plan.state.arxiv_id,
                *_row_values(plan.state),
                category_ids[plan.state.primary],
                len(plan.state.authors),
                len({name: None for author in plan.state.authors for name in author.affiliations}),
            )
            for plan in plans
        ),
    )


def rows_copy(cursor, table: str, columns: tuple[str, ...], rows: Iterable[tuple]) -> None:
    """``COPY table (columns) FROM STDIN`` in binary format, typed from the table's columns.

    Binary spares both sides the text escaping and parsing (about half the cost of the long
    paper rows).
    """
    cursor.execute(
        "SELECT attname, atttypid FROM pg_attribute "
        "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped",
        [table],
    )
    types = dict(cursor.fetchall())
    with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types([types[column] for column in columns])
        for row in rows:
            copy.write_row(row)


def _copy_cross_lists(cursor, plans: list[PaperPlan], category_ids: dict[str, int]) -> None:
    """Copy the cross-lists of ``plans`` (whose old ones are gone)."""
    rows = [
        (plan.pk, category_ids[code]) for plan in plans for code in sorted(plan.state.cross_lists)
    ]
    if rows:
        rows_copy(cursor, _CROSS_LIST, ("paper_id", "category_id"), rows)


def _copy_versions(cursor, plans: list[PaperPlan], inserted: set[int]) -> None:
    """Copy the versions of new papers; upsert the changed versions of the others."""
    new_rows, changed_rows = [], []
    for plan in plans:
        rows = new_rows if plan.pk in inserted else changed_rows
        rows.extend(
            (plan.pk, number, version.submitted, version.size_kb, version.source_type)
            for number, version in plan.changed_versions().items()
        )
    for table, rows in ((_VERSION, new_rows), ("backfill_version", changed_rows)):
        if rows:
            rows.sort()
            rows_copy(cursor, table, _VERSION_COLUMNS, rows)
    if changed_rows:
        columns = ", ".join(_VERSION_COLUMNS)
        cursor.execute(
            f"INSERT INTO {_VERSION} ({columns}) SELECT {columns} FROM backfill_version "
            "ORDER BY paper_id, number ON CONFLICT (paper_id, number) DO UPDATE SET "
            "submitted = EXCLUDED.submitted, size_kb = EXCLUDED.size_kb, "
            "source_type = EXCLUDED.source_type"
        )


def _copy_authors(cursor, plans: list[PaperPlan], author_parts: dict[str, dict[str, str]]) -> None:
    """Copy the authorships and paper affiliations of ``plans`` (whose old ones are gone)."""
    if not plans:
        return
    names = sorted({author.name for plan in plans for author in plan.state.authors})
    # A name a curator merged into another author credits that author.
    author_ids = author_ids_current(
        _ids_by_name(
            cursor,
            "backfill_author",
            _AUTHOR,
            _AUTHOR_COLUMNS,
            [_author_row(name, author_parts.get(name)) for name in names],
        )
    )
    affiliation_names = sorted(
        {name for plan in plans for author in plan.state.authors for name in author.affiliations}
    )
    affiliation_ids = _ids_by_name(
        cursor,
        "backfill_affiliation",
        _AFFILIATION,
        ("name",),
        [(name,) for name in affiliation_names],
    )

    rows_copy(
        cursor,
        _AUTHORSHIP,
        ("paper_id", "author_id", "position", "name_raw"),
        (
            (plan.pk, author_ids[author.name], position, author.name_raw)
            for plan in plans
            for position, author in enumerate(plan.state.authors)
        ),
    )
    affiliated = [
        plan for plan in plans if any(author.affiliations for author in plan.state.authors)
    ]
    if not affiliated:
        return
    cursor.execute(
        f"SELECT paper_id, position, id FROM {_AUTHORSHIP} WHERE paper_id = ANY(%s)",
        [[plan.pk for plan in affiliated]],
    )
    authorship_ids = {(paper_id, position): pk for paper_id, position, pk in cursor.fetchall()}
    # Through rows in listed order: their ids are the order affiliations are read back in.
    rows_copy(
        cursor,
        _AUTHORSHIP_AFFILIATION,
        ("authorship_id", "affiliation_id"),
        (
            (authorship_ids[(plan.pk, position)], affiliation_ids[name])
            for plan in affiliated
            for position, author in enumerate(plan.state.authors)
            for name in author.affiliations
        ),
    )
    rows_copy(
        cursor,
        _PAPER_AFFILIATION,
        ("paper_id", "affiliation_id", "position"),
        (
            (plan.pk, affiliation_ids[name], position)
            for plan in affiliated
            for position, name in enumerate(plan.state.affiliations_in_order())
        ),
    )


def _author_row(name: str, parts: dict[str, str] | None) -> tuple[str, str, str, str]:
    if not parts:
        return (name, "", "", "")
    return (name, parts.get("keyname", ""), parts.get("forenames", ""), parts.get("suffix", ""))


def _ids_by_name(cursor, staging: str, table: str, columns: tuple[str, ...], rows: list) -> dict:
    """Primary keys of ``table`` rows by unique ``name`` (the first column of ``rows``),
    inserting the ``rows`` that are missing; rows that exist, or that another worker inserts
    meanwhile, are left as they are."""
    if not rows:
        return {}
    rows_copy(cursor, staging, columns, rows)
    listed = ", ".join(columns)
    cursor.execute(
        f'INSERT INTO {table} ({listed}) SELECT {listed} FROM {staging} ORDER BY name COLLATE "C" '
        "ON CONFLICT (name) DO NOTHING RETURNING name, id"
    )
    ids = dict(cursor.fetchall())
    if len(ids) < len(rows):
        cursor.execute(
            f"SELECT name, id FROM {table} WHERE name = ANY(%s)",
            [[row[0] for row in rows if row[0] not in ids]],
        )
        ids.update(cursor.fetchall())
    return ids
