"""Backfill from a Kaggle arXiv snapshot: millions of JSON lines stored at bulk speed.

:func:`snapshot_import` streams a snapshot file (``arxiv-metadata-oai-snapshot.json``, plain or
gzip; format in :mod:`papers.parsers.snapshot`) and stores it batch by batch, one transaction
per batch, so memory stays flat whatever the file size and an interrupted import keeps every
batch committed before it (importing the file again finishes the job: it is idempotent).

The database ends up exactly as :func:`papers.services.papers_upsert` would leave it for the
same records: the same validation (``_prepare``), the same merge of two reports of a paper
(``_merge``: the newer version wins, an older report never overwrites), the same reading of
what is stored (``_load_states``). Only the writing differs. On PostgreSQL each batch is
written set-based with binary ``COPY``: rows that cannot exist yet (new papers and everything
hanging from them) go straight into their tables, the others through temporary staging tables
and ``INSERT … ON CONFLICT``; authors and affiliations are created with one statement per
batch. Elsewhere (SQLite) the ORM writer of ``papers.services`` is used. While one batch is
written, a thread parses the next one.

After each committed batch ``papers.signals.papers_stored`` announces the papers created or
changed in it (so tagging follows in batches on the ``tag`` queue), unless ``tag=False``.
"""

from __future__ import annotations

import gc
import gzip
import io
import logging
import operator
import queue
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import psycopg
from django.db import DatabaseError, connection, reset_queries, transaction
from django.utils import timezone

from .models import Affiliation, Author, Authorship, Paper, PaperAffiliation, PaperVersion
from .parsers.snapshot import parse_snapshot_line
from .records import ParseError
from .services import (
    _ROW_FIELDS,
    _category_ids,
    _load_states,
    _merge,
    _PaperState,
    _Plan,
    _prepare,
    _write,
)
from .signals import papers_stored

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "SnapshotImportError",
    "SnapshotImportSummary",
    "snapshot_import",
]

logger = logging.getLogger(__name__)

# Records per transaction: large enough for COPY to pay off, small enough that a batch's
# records and rows stay a few tens of megabytes.
DEFAULT_BATCH_SIZE = 5_000
# Lines between two garbage collections: a few objects per line end up in reference cycles
# (parsed TeX), and a collection costs about as much as looking at one batch's objects.
COLLECT_EVERY = 50_000
# Errors kept in the summary; every error still goes to ``on_error`` as it is found.
ERROR_LIMIT = 1000

_GZIP_MAGIC = b"\x1f\x8b"

CrossListThrough = Paper.cross_lists.through
AuthorshipAffiliation = Authorship.affiliations.through


@dataclass
class SnapshotImportSummary:
    """What :func:`snapshot_import` did so far.

    ``lines``: non-blank lines read; ``created`` / ``updated`` / ``unchanged``: papers, per
    batch they appear in (as :class:`papers.services.IngestResult` counts them); ``rejected``:
    lines refused (bad JSON, invalid identifier, unknown category …); ``errors``: the first
    1000 of those, each a :class:`ParseError` naming the file and ``line N``; ``batches``:
    transactions committed; ``bytes_read``: position in the file (compressed bytes for gzip).
    """

    lines: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    rejected: int = 0
    batches: int = 0
    bytes_read: int = 0
    errors: list[ParseError] = field(default_factory=list)

    @property
    def papers(self) -> int:
        """Papers stored or found unchanged."""
        return self.created + self.updated + self.unchanged


class SnapshotImportError(Exception):
    """The import stopped: the file cannot be read on, or a batch could not be written.

    ``summary`` holds what was committed before (batches are never half-written);
    ``str(error)`` names the file and the line where reading or writing stopped.
    """

    def __init__(self, message: str, *, summary: SnapshotImportSummary):
        self.summary = summary
        super().__init__(message)


def snapshot_import(
    *,
    path: str | Path,
    batch_size: int = DEFAULT_BATCH_SIZE,
    tag: bool = True,
    on_error: Callable[[ParseError], object] | None = None,
    on_batch: Callable[[SnapshotImportSummary], object] | None = None,
) -> SnapshotImportSummary:
    """Store every record of the snapshot file ``path`` (JSON lines, plain or gzip).

    - The file is read line by line (gzip is recognised by its magic bytes, whatever the
      name); ``batch_size`` records (at least 1) are validated and merged, then written in one
      transaction, with the same result as :func:`papers.services.papers_upsert` (see the
      module docstring). A paper listed twice keeps the newer version, in a batch or across.
    - A bad line (invalid JSON, missing or invalid identifier, bad dates, unknown or missing
      category, no title, an over-long field) is rejected as a :class:`ParseError` naming
      ``path`` and ``line N``: passed to ``on_error``, counted, and the import goes on.
    - ``on_batch(summary)`` is called after each committed batch (progress reporting).
    - Unless ``tag`` is false, ``papers.signals.papers_stored`` is sent after each commit with
      the ids of the papers created or changed in the batch.
    - While a batch is written, a thread reads and parses the next one (parsing is Python
      work, writing mostly waiting on the database); at most two batches wait in memory.
      Automatic garbage collection is paused during the import (the batches' many objects
      would set it off again and again) and run every ``COLLECT_EVERY`` lines instead.

    Raises ``ValueError`` for a ``batch_size`` below 1, ``OSError`` when the file cannot be
    opened, and :class:`SnapshotImportError` when reading stops part-way (a corrupt or
    truncated gzip stream: the lines read before it are stored first) or a batch cannot be
    written (database error: that batch is rolled back, the earlier ones stay). Returns a
    :class:`SnapshotImportSummary`.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")
    path = Path(path)
    source = str(path)
    summary = SnapshotImportSummary()
    writer = _write_copy if connection.vendor == "postgresql" else _write
    collected_at = 0

    with path.open("rb") as raw, _garbage_collected_between_batches():
        stream = gzip.GzipFile(fileobj=raw) if raw.peek(2)[:2] == _GZIP_MAGIC else raw
        batches = _parsed_batches(stream, raw, source=source, batch_size=batch_size)
        with _read_ahead(batches) as parsed:
            for batch in _reraising(parsed, summary):
                summary.lines += batch.lines
                for error in batch.errors:
                    summary.rejected += 1
                    if len(summary.errors) < ERROR_LIMIT:
                        summary.errors.append(error)
                    logger.warning("rejected %s", error)
                    if on_error is not None:
                        on_error(error)
                if batch.prepared:
                    try:
                        _store(batch, writer=writer, tag=tag, summary=summary)
                    except (DatabaseError, psycopg.Error) as error:
                        raise SnapshotImportError(
                            f"{source}: lines {batch.first_line}-{batch.last_line} could not be "
                            f"stored (nothing of them was written; the {summary.batches} "
                            f"batches before them were): {error}",
                            summary=summary,
                        ) from error
                    summary.batches += 1
                summary.bytes_read = batch.bytes_read
                # With DEBUG on, Django keeps every query's SQL: keep memory flat.
                reset_queries()
                del batch
                if summary.lines - collected_at >= COLLECT_EVERY:
                    gc.collect()
                    collected_at = summary.lines
                if on_batch is not None:
                    on_batch(summary)
    summary.bytes_read = path.stat().st_size
    return summary


class _ReadFailure(Exception):
    """The file cannot be read on; the message names the file, the last line and the byte."""


@dataclass
class _Batch:
    """Lines ``first_line``..``last_line`` parsed and validated: ``prepared`` holds one merged
    state per paper, ``errors`` the lines rejected; ``bytes_read`` is the file position after
    them."""

    first_line: int
    last_line: int
    lines: int
    bytes_read: int
    prepared: dict[str, _PaperState]
    author_parts: dict[str, dict[str, str]]
    errors: list[ParseError]


def _parsed_batches(
    stream: io.BufferedIOBase, raw: io.BufferedReader, *, source: str, batch_size: int
) -> Iterator[_Batch]:
    """Read, parse and validate ``stream`` into batches of ``batch_size`` non-blank lines.

    Raises :class:`_ReadFailure` (after yielding the lines read before it) when the stream
    cannot be read on: a corrupt or truncated gzip member, an I/O error.
    """
    numbered = enumerate(stream, start=1)
    last_line = 0
    while True:
        lines: list[tuple[int, bytes]] = []
        failure: Exception | None = None
        try:
            for last_line, line in numbered:
                if line.strip():
                    lines.append((last_line, line))
                    if len(lines) >= batch_size:
                        break
        except (OSError, EOFError, zlib.error) as error:
            failure = error
        if lines:
            yield _parse(lines, source=source, bytes_read=raw.tell())
        if failure is not None:
            raise _ReadFailure(
                f"{source}: cannot read on after line {last_line} (byte {raw.tell()} of the "
                f"file): {failure}"
            ) from failure
        if not lines:
            return


def _parse(lines: list[tuple[int, bytes]], *, source: str, bytes_read: int) -> _Batch:
    batch = _Batch(
        first_line=lines[0][0],
        last_line=lines[-1][0],
        lines=len(lines),
        bytes_read=bytes_read,
        prepared={},
        author_parts={},
        errors=[],
    )
    for number, line in lines:
        label = f"line {number}"
        try:
            record = parse_snapshot_line(line, source=source, line_number=number)
            state = _prepare(record, source=source, author_parts=batch.author_parts)
        except ParseError as error:
            if error.record != label:
                # The service names the paper; the line is what an operator can find.
                error = ParseError(error.message, source=source, record=f"{label} ({error.record})")
            batch.errors.append(error)
            continue
        # The same paper twice in a batch: merged as across batches, the newer version wins.
        batch.prepared[state.arxiv_id] = _merge(batch.prepared.get(state.arxiv_id), state)
    return batch


def _store(
    batch: _Batch,
    *,
    writer: Callable[[list[_Plan], dict[str, dict[str, str]]], None],
    tag: bool,
    summary: SnapshotImportSummary,
) -> None:
    """Merge a parsed batch with what is stored and write it, in one transaction."""
    with transaction.atomic():
        stored = _stored_states(sorted(batch.prepared))
        plans = []
        for arxiv_id, state in batch.prepared.items():
            pk, old = stored.get(arxiv_id, (None, None))
            merged = _merge(old, state)
            if merged == old:
                summary.unchanged += 1
            else:
                plans.append(_Plan(state=merged, old=old, pk=pk))
        if not plans:
            return
        writer(plans, batch.author_parts)
        created = sum(1 for plan in plans if plan.old is None)
        summary.created += created
        summary.updated += len(plans) - created
        if tag:
            transaction.on_commit(
                partial(papers_stored.send, sender=Paper, paper_ids=[plan.pk for plan in plans])
            )


def _stored_states(arxiv_ids: list[str]) -> dict:
    """``_load_states`` of the papers among ``arxiv_ids`` that are stored (rows locked).

    On PostgreSQL one plain query first finds which are stored: in a first backfill most are
    not, and the ORM's lookup costs several times more per identifier.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT arxiv_id FROM {_PAPER} WHERE arxiv_id = ANY(%s)", [arxiv_ids])
            arxiv_ids = sorted(row[0] for row in cursor.fetchall())
    return _load_states(arxiv_ids) if arxiv_ids else {}


def _reraising(batches: Iterator[_Batch], summary: SnapshotImportSummary) -> Iterator[_Batch]:
    try:
        yield from batches
    except _ReadFailure as failure:
        raise SnapshotImportError(str(failure), summary=summary) from failure.__cause__


@contextmanager
def _read_ahead(items: Iterator[_Batch]) -> Iterator[Iterator[_Batch]]:
    """Iterate ``items`` in a thread: the next item is made while the consumer works on the
    one it took, and no further, so at most two items exist at once.

    An exception raised by ``items`` is raised to the consumer in its place; leaving the block
    early stops the thread before its next item.
    """
    handoff: queue.SimpleQueue = queue.SimpleQueue()
    may_make = threading.Semaphore(0)
    stop = threading.Event()
    done = object()

    def produce() -> None:
        try:
            for item in items:
                handoff.put((item, None))
                del item
                may_make.acquire()
                if stop.is_set():
                    return
            handoff.put((done, None))
        except BaseException as error:  # handed to the consumer, raised there
            handoff.put((done, error))

    def consume() -> Iterator[_Batch]:
        while True:
            item, error = handoff.get()
            if error is not None:
                raise error
            if item is done:
                return
            may_make.release()
            yield item

    thread = threading.Thread(target=produce, name="snapshot-reader", daemon=True)
    thread.start()
    try:
        yield consume()
    finally:
        stop.set()
        may_make.release()
        thread.join()


@contextmanager
def _garbage_collected_between_batches() -> Iterator[None]:
    """Pause automatic garbage collection; objects that exist already are set aside
    (``gc.freeze``) so that the import's own collections only look at the import's objects."""
    enabled = gc.isenabled()
    gc.disable()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
        if enabled:
            gc.enable()


# --- the PostgreSQL writer ------------------------------------------------------------------

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
    *_ROW_FIELDS,
    "primary_category_id",
    "author_count",
    "affiliation_count",
)
_row_fields = operator.attrgetter(*_ROW_FIELDS)
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


def _write_copy(plans: list[_Plan], author_parts: dict[str, dict[str, str]]) -> None:
    """Write ``plans`` as :func:`papers.services._write` does, with COPY and set-based SQL.

    The same rows and the same handling of existing ones: paper rows upserted on
    ``arxiv_id``, versions on ``(paper, number)``, authors and affiliations created when
    missing and otherwise left as they are, cross-lists and authorships of the written papers
    replaced, authorship affiliations inserted in listed order (the order they are read back
    in). Rows that cannot exist yet (those of a paper this batch inserted) are copied straight
    into their tables; the rest goes through staging tables and ``ON CONFLICT``. Sets
    ``plan.pk``. Call inside a transaction, on PostgreSQL.
    """
    category_ids = _category_ids(
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


def _store_papers(cursor, plans: list[_Plan], category_ids: dict[str, int], now) -> set[int]:
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


def _copy_paper_rows(cursor, table: str, plans: list[_Plan], category_ids, *, now=None) -> None:
    """COPY the paper rows of ``plans`` into ``table``, with ``created_at``/``updated_at``
    when ``now`` is given (the staging table has no such columns)."""
    stamps = (now, now) if now else ()
    _copy(
        cursor,
        table,
        (*(("created_at", "updated_at") if now else ()), *_PAPER_COLUMNS),
        (
            (
                *stamps,
                plan.state.arxiv_id,
                *_row_fields(plan.state),
                category_ids[plan.state.primary],
                len(plan.state.authors),
                len({name: None for author in plan.state.authors for name in author.affiliations}),
            )
            for plan in plans
        ),
    )


def _copy(cursor, table: str, columns: tuple[str, ...], rows: Iterable[tuple]) -> None:
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


def _copy_cross_lists(cursor, plans: list[_Plan], category_ids: dict[str, int]) -> None:
    """Copy the cross-lists of ``plans`` (whose old ones are gone)."""
    rows = [
        (plan.pk, category_ids[code]) for plan in plans for code in sorted(plan.state.cross_lists)
    ]
    if rows:
        _copy(cursor, _CROSS_LIST, ("paper_id", "category_id"), rows)


def _copy_versions(cursor, plans: list[_Plan], inserted: set[int]) -> None:
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
            _copy(cursor, table, _VERSION_COLUMNS, rows)
    if changed_rows:
        columns = ", ".join(_VERSION_COLUMNS)
        cursor.execute(
            f"INSERT INTO {_VERSION} ({columns}) SELECT {columns} FROM backfill_version "
            "ORDER BY paper_id, number ON CONFLICT (paper_id, number) DO UPDATE SET "
            "submitted = EXCLUDED.submitted, size_kb = EXCLUDED.size_kb, "
            "source_type = EXCLUDED.source_type"
        )


def _copy_authors(cursor, plans: list[_Plan], author_parts: dict[str, dict[str, str]]) -> None:
    """Copy the authorships and paper affiliations of ``plans`` (whose old ones are gone)."""
    if not plans:
        return
    names = sorted({author.name for plan in plans for author in plan.state.authors})
    author_ids = _ids_by_name(
        cursor,
        "backfill_author",
        _AUTHOR,
        _AUTHOR_COLUMNS,
        [_author_row(name, author_parts.get(name)) for name in names],
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

    _copy(
        cursor,
        _AUTHORSHIP,
        ("paper_id", "author_id", "position"),
        (
            (plan.pk, author_ids[author.name], position)
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
    _copy(
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
    _copy(
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
    _copy(cursor, staging, columns, rows)
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
