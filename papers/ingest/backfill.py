"""The bulk path: a Kaggle arXiv snapshot, millions of JSON lines, stored at bulk speed.

:func:`snapshot_import` streams a snapshot file (``arxiv-metadata-oai-snapshot.json``, plain or
gzip; format in :mod:`papers.parsers.snapshot`) and stores it batch by batch, one transaction
per batch, so memory stays flat whatever the file size and an interrupted import keeps every
batch committed before it (importing the file again finishes the job: it is idempotent).

The database ends up exactly as :func:`papers.ingest.papers_upsert` would leave it for the
same records: the same validation (``checks.record_prepare``), the same merge of two reports
of a paper (``merge.paper_state_merge``: the newer version wins, an older report never
overwrites), the same reading of what is stored (``write.paper_states_load``). Only the
writing differs: on PostgreSQL :func:`papers.ingest.postgres.plans_write_copy` writes each
batch set-based with binary ``COPY``; elsewhere (SQLite) the ORM writer
``write.plans_write`` is used. While one batch is written, the next ones are parsed and
validated in a pool of worker processes (pure Python per line: in threads they would take
turns with the writing), handed back in file order.

After each committed batch ``papers.signals.papers_stored`` announces the papers created or
changed in it (so tagging follows in batches on the ``tag`` queue), unless ``tag=False``.
"""

from __future__ import annotations

import gc
import gzip
import io
import logging
import multiprocessing
import os
import queue
import signal
import threading
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import psycopg
from django.db import DatabaseError, connection, reset_queries, transaction

from papers.models import Paper
from papers.parsers.snapshot import parse_snapshot_line
from papers.records import ParseError
from papers.signals import papers_stored
from topicsite.interpreter import garbage_collection_paused

from .checks import record_prepare
from .deleted import papers_live_changed_on_commit
from .merge import PaperState, paper_state_merge
from .postgres import plans_write_copy
from .write import PaperPlan, paper_states_load, plans_write

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "SnapshotImportError",
    "SnapshotImportSummary",
    "default_workers",
    "read_ahead",
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


@dataclass
class SnapshotImportSummary:
    """What :func:`snapshot_import` did so far.

    ``lines``: non-blank lines read; ``created`` / ``updated`` / ``unchanged``: papers, per
    batch they appear in (as :class:`papers.ingest.IngestResult` counts them); ``rejected``:
    lines refused (bad JSON, invalid identifier, unknown category …); ``duplicates``: lines
    that repeated a paper already in their batch (merged with it, the newer version
    leading); ``errors``: the first
    1000 of those, each a :class:`ParseError` naming the file and ``line N``; ``batches``:
    transactions committed; ``bytes_read``: position in the file (compressed bytes for gzip).
    """

    lines: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    rejected: int = 0
    duplicates: int = 0
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


def default_workers() -> int:
    """Parsing processes :func:`snapshot_import` starts by default: one per CPU this process
    may run on (the writing waits on the database most of the time)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def snapshot_import(
    *,
    path: str | Path,
    batch_size: int = DEFAULT_BATCH_SIZE,
    tag: bool = True,
    workers: int | None = None,
    on_error: Callable[[ParseError], object] | None = None,
    on_batch: Callable[[SnapshotImportSummary], object] | None = None,
) -> SnapshotImportSummary:
    """Store every record of the snapshot file ``path`` (JSON lines, plain or gzip).

    - The file is read line by line (gzip is recognised by its magic bytes, whatever the
      name); ``batch_size`` records (at least 1) are validated and merged, then written in one
      transaction, with the same result as :func:`papers.ingest.papers_upsert` (see the
      module docstring). A paper listed twice keeps the newer version, in a batch or across.
    - A bad line (invalid JSON, missing or invalid identifier, bad dates, unknown or missing
      category, no title, an over-long field) is rejected as a :class:`ParseError` naming
      ``path`` and ``line N``: passed to ``on_error``, counted, and the import goes on.
    - ``on_batch(summary)`` is called after each committed batch (progress reporting).
    - Unless ``tag`` is false, ``papers.signals.papers_stored`` is sent after each commit with
      the ids of the papers created or changed in the batch.
    - While a batch is written, a thread reads the next ones and ``workers`` processes
      (default :func:`default_workers`; 0: the thread parses itself) parse and validate them,
      a batch each, handed back in file order; at most ``workers + 2`` batches wait in memory.
      Only the parent writes: a worker never touches the database, and its rejected lines
      come back with their batch, named by line number as above. The import's transactions
      commit without waiting for the WAL flush (``synchronous_commit = off``): a crash of the
      server may lose the last batches reported committed, which importing the file again
      writes (it is idempotent), and never leaves a batch half-written.
      Automatic garbage collection is paused during the import (the batches' many objects
      would set it off again and again) and run every ``COLLECT_EVERY`` lines instead.

    Raises ``ValueError`` for a ``batch_size`` below 1 or negative ``workers``, ``OSError``
    when the file cannot be
    opened, and :class:`SnapshotImportError` when reading stops part-way (a corrupt or
    truncated gzip stream: the lines read before it are stored first) or a batch cannot be
    written (database error: that batch is rolled back, the earlier ones stay). Returns a
    :class:`SnapshotImportSummary`.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")
    workers = default_workers() if workers is None else workers
    if workers < 0:
        raise ValueError(f"workers must be 0 or more, not {workers}")
    path = Path(path)
    source = str(path)
    summary = SnapshotImportSummary()
    writer = plans_write_copy if connection.vendor == "postgresql" else plans_write
    collected_at = 0

    with (
        path.open("rb") as raw,
        garbage_collection_paused(),
        _parsing_pool(workers) as pool,
    ):
        stream = gzip.GzipFile(fileobj=raw) if raw.peek(2)[:2] == _GZIP_MAGIC else raw
        chunks = _line_chunks(stream, raw, source=source, batch_size=batch_size)
        if pool is None:
            batches = (_parse(lines, source=source, bytes_read=read) for lines, read in chunks)
        else:
            batches = _parsed_in_pool(chunks, pool, source=source, ahead=workers)
        with read_ahead(batches) as parsed:
            for batch in _reraising(parsed, summary):
                summary.lines += batch.lines
                summary.duplicates += batch.duplicates
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
    prepared: dict[str, PaperState]
    author_parts: dict[str, dict[str, str]]
    errors: list[ParseError]
    duplicates: int = 0


def _line_chunks(
    stream: io.BufferedIOBase, raw: io.BufferedReader, *, source: str, batch_size: int
) -> Iterator[tuple[list[tuple[int, bytes]], int]]:
    """Read ``stream`` into chunks of ``batch_size`` non-blank lines: ``(lines, bytes_read)``,
    ``lines`` as ``(line number, line)``, ``bytes_read`` the file position after them.

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
            yield lines, raw.tell()
        if failure is not None:
            raise _ReadFailure(
                f"{source}: cannot read on after line {last_line} (byte {raw.tell()} of the "
                f"file): {failure}"
            ) from failure
        if not lines:
            return


def _parsed_in_pool(
    chunks: Iterator[tuple[list[tuple[int, bytes]], int]],
    pool: multiprocessing.pool.Pool,
    *,
    source: str,
    ahead: int,
) -> Iterator[_Batch]:
    """Parse ``chunks`` in ``pool``, ``ahead`` chunks beyond the one handed over at most, and
    yield the batches in file order. A :class:`_ReadFailure` of ``chunks`` is raised after the
    batches read before it; an error in a worker is raised here in its batch's place."""
    pending: deque = deque()
    failure: _ReadFailure | None = None
    try:
        for lines, bytes_read in chunks:
            pending.append(
                pool.apply_async(_parse, (lines,), {"source": source, "bytes_read": bytes_read})
            )
            del lines
            if len(pending) > ahead:
                yield pending.popleft().get()
    except _ReadFailure as error:
        failure = error
    while pending:
        yield pending.popleft().get()
    if failure is not None:
        raise failure


@contextmanager
def _parsing_pool(workers: int) -> Iterator[multiprocessing.pool.Pool | None]:
    """``workers`` parsing processes (None for 0), stopped on leaving.

    Forked, so that they start at once with Django set up; they never use the parent's
    database connection (parsing and validation read no table), and a forked process leaves
    through ``os._exit``, so it never closes the connection either. They ignore SIGINT: an
    interrupt stops the parent, which stops them.
    """
    if workers == 0 or "fork" not in multiprocessing.get_all_start_methods():
        yield None
        return
    pool = multiprocessing.get_context("fork").Pool(workers, initializer=_worker_start)
    try:
        yield pool
    finally:
        pool.terminate()
        pool.join()


def _worker_start() -> None:
    global _in_worker
    _in_worker = True
    signal.signal(signal.SIGINT, signal.SIG_IGN)


# In a parsing process: lines parsed since its last garbage collection (paused there too, as
# in the parent, which collects for the reader thread).
_in_worker = False
_worker_lines = 0


def _parse(lines: list[tuple[int, bytes]], *, source: str, bytes_read: int) -> _Batch:
    """Parse and validate ``lines`` into a :class:`_Batch` (in a worker process or the reader
    thread)."""
    global _worker_lines
    if _in_worker:
        _worker_lines += len(lines)
        if _worker_lines >= COLLECT_EVERY:
            gc.collect()
            _worker_lines = 0
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
            state = record_prepare(record, source=source, author_parts=batch.author_parts)
        except ParseError as error:
            if error.record != label:
                # The service names the paper; the line is what an operator can find.
                error = ParseError(error.message, source=source, record=f"{label} ({error.record})")
            batch.errors.append(error)
            continue
        # The same paper twice in a batch: merged as across batches, the newer version wins.
        if state.arxiv_id in batch.prepared:
            batch.duplicates += 1
        batch.prepared[state.arxiv_id] = paper_state_merge(
            batch.prepared.get(state.arxiv_id), state
        )
    return batch


def _store(
    batch: _Batch,
    *,
    writer: Callable[[list[PaperPlan], dict[str, dict[str, str]]], None],
    tag: bool,
    summary: SnapshotImportSummary,
) -> None:
    """Merge a parsed batch with what is stored and write it, in one transaction."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            # Idempotent and resumable: a committed batch lost to a server crash is written
            # again by the next import of the file; atomicity is untouched.
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL synchronous_commit = off")
        stored = _stored_states(sorted(batch.prepared))
        plans = []
        for arxiv_id, state in batch.prepared.items():
            pk, old = stored.get(arxiv_id, (None, None))
            merged = paper_state_merge(old, state)
            if merged == old:
                summary.unchanged += 1
            else:
                plans.append(PaperPlan(state=merged, old=old, pk=pk))
        if not plans:
            return
        writer(plans, batch.author_parts)
        papers_live_changed_on_commit(plan.pk for plan in plans if plan.withdrawn_changed)
        created = sum(1 for plan in plans if plan.old is None)
        summary.created += created
        summary.updated += len(plans) - created
        if tag:
            transaction.on_commit(
                partial(papers_stored.send, sender=Paper, paper_ids=[plan.pk for plan in plans])
            )


def _stored_states(arxiv_ids: list[str]) -> dict:
    """``paper_states_load`` of the papers among ``arxiv_ids`` that are stored (rows locked).

    On PostgreSQL one plain query first finds which are stored: in a first backfill most are
    not, and the ORM's lookup costs several times more per identifier.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT arxiv_id FROM {Paper._meta.db_table} WHERE arxiv_id = ANY(%s)", [arxiv_ids]
            )
            arxiv_ids = sorted(row[0] for row in cursor.fetchall())
    return paper_states_load(arxiv_ids) if arxiv_ids else {}


def _reraising(batches: Iterator[_Batch], summary: SnapshotImportSummary) -> Iterator[_Batch]:
    try:
        yield from batches
    except _ReadFailure as failure:
        raise SnapshotImportError(str(failure), summary=summary) from failure.__cause__


@contextmanager
def read_ahead(items: Iterator[_Batch]) -> Iterator[Iterator[_Batch]]:
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
