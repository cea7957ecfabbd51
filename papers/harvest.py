"""Harvest runs: :func:`harvest_run` makes a :class:`~papers.models.HarvestRun` and executes it.

Chunks from the sources (``papers.sources``) are stored page by page through
``papers.ingest.papers_upsert``, each page in one transaction with the run's checkpoint, so a
failed or killed harvest resumes exactly where it stopped (:func:`harvest_run_resume`) and ends
equal to an uninterrupted one. One harvest of a kind runs at a time, whatever the number of
workers (a lock in the cache: :class:`HarvestLocked`, :class:`HarvestLockUnavailable`).
"""

from __future__ import annotations

import datetime as dt
import logging
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from .ingest import papers_upsert
from .ingest.deleted import papers_mark_deleted
from .models import HarvestRun
from .records import ParseError
from .sources import oai_sets, sources_for
from .sources.base import Chunk, Gap, HarvestError, SourceError

__all__ = [
    "HarvestLockUnavailable",
    "HarvestLocked",
    "HarvestSummary",
    "harvest_run",
    "harvest_run_resume",
]

logger = logging.getLogger(__name__)

SUMMARY_ERROR_LIMIT = 1000


@dataclass
class HarvestSummary:
    """What one execution of a harvest run did (:func:`harvest_run`, :func:`harvest_run_resume`).

    ``run_id`` and ``status`` are the :class:`~papers.models.HarvestRun`'s after the execution
    (``pending`` when it paused to continue in a new task, ``incomplete`` when it ended with
    gaps); ``pages`` (chunks stored), paper counts as in :class:`papers.ingest.IngestResult`,
    ``deleted`` (ids OAI reported deleted), ``marked_deleted`` (stored papers among them newly
    marked deleted: kept, but no longer counted), ``duplicates`` (records repeating a paper of
    the same page), all for this execution (the run holds the totals); ``errors``: rejected
    records, ids asked for and not delivered, pages or result sets arXiv left short,
    unparseable recorded files, each an exception naming its source and record or line;
    ``gaps``: the run's gaps as stored (``HarvestRun.gaps``).
    """

    kind: str
    run_id: int | None = None
    status: str = ""
    pages: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    marked_deleted: int = 0
    duplicates: int = 0
    errors: list[Exception] = field(default_factory=list)
    gaps: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready summary (a task's return value); at most 1000 error messages."""
        return {
            "kind": self.kind,
            "run_id": self.run_id,
            "status": self.status,
            "pages": self.pages,
            "created": self.created,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "deleted": self.deleted,
            "marked_deleted": self.marked_deleted,
            "duplicates": self.duplicates,
            "error_count": len(self.errors),
            "errors": [str(error) for error in self.errors[:SUMMARY_ERROR_LIMIT]],
            "gaps": self.gaps[:SUMMARY_ERROR_LIMIT],
        }


class HarvestLocked(Exception):
    """Another harvest of the same ``kind`` is running (``holder`` names its run), so this one
    was not started or resumed. Nothing was written; try again once that harvest is done."""

    def __init__(self, kind: str, holder: str):
        self.kind = kind
        self.holder = holder
        super().__init__(f"another {kind} harvest is running ({holder}); not started")


class HarvestLockUnavailable(HarvestLocked):
    """The one-harvest-per-kind lock could not be taken because the cache (Redis) did not
    answer; nothing was written. Try again once Redis is back."""

    def __init__(self, kind: str):
        self.kind = kind
        self.holder = ""
        Exception.__init__(
            self,
            f"the {kind} harvest lock could not be taken: the cache (Redis) is not answering; "
            "not started",
        )


class _Superseded(Exception):
    """A newer execution of the same run took it over; this one must stop writing."""


class _SourceLock:
    """One harvest of a kind at a time across every worker: ``cache.add`` of a key that names
    the run holding it, with a timeout (``settings.ARXIV_HARVEST_LOCK_TIMEOUT`` seconds,
    renewed after every page) so that a killed worker does not hold it for ever.

    The run that holds the lock may take it again: its previous execution died holding it (a
    killed worker) or is still alive, and then the newer execution fences it out at its next
    page (see ``HarvestRun.attempt``).
    """

    def __init__(self, kind: str, *, run_id: int | None = None):
        self.kind = kind
        self.key = f"papers:harvest-lock:{kind}"
        self.owner = f"run #{run_id}" if run_id else f"new run {uuid.uuid4().hex}"
        self.timeout = settings.ARXIV_HARVEST_LOCK_TIMEOUT

    def __enter__(self) -> _SourceLock:
        for _ in range(3):
            if cache.add(self.key, self.owner, self.timeout):
                return self
            holder = cache.get(self.key)
            if holder is None:
                continue  # expired between the two calls: try again
            if holder == self.owner:
                logger.warning("%s takes over the %s harvest lock it held", self.owner, self.kind)
                cache.set(self.key, self.owner, self.timeout)
                return self
            logger.warning("%s harvest refused: %s holds the lock", self.kind, holder)
            raise HarvestLocked(self.kind, holder)
        # Never stored, never held by anyone: the cache is not answering (it skips errors).
        logger.error("%s harvest refused: the cache did not store its lock", self.kind)
        raise HarvestLockUnavailable(self.kind)

    def claim(self, run_id: int) -> None:
        """Name the run that now holds the lock."""
        self.owner = f"run #{run_id}"
        cache.set(self.key, self.owner, self.timeout)

    def refresh(self) -> None:
        cache.touch(self.key, self.timeout)

    def __exit__(self, *exc_info) -> None:
        # Another holder may have taken an expired lock meanwhile: release only our own.
        if cache.get(self.key) == self.owner:
            cache.delete(self.key)


def harvest_run(
    *,
    kind: str,
    params: Mapping[str, Any] | None = None,
    batch_size: int | None = None,
    task_id: str = "",
    max_seconds: float | None = None,
) -> HarvestSummary:
    """Make a :class:`~papers.models.HarvestRun` of ``kind`` with ``params`` and execute it.

    ``kind`` and ``params`` are as :func:`papers.sources.sources_for` takes them (``recorded``,
    ``oai``, ``atom``, ``snapshot``). OAI list harvests get their ``sets`` written out
    (``settings.ARXIV_OAI_SETS`` unless given; ``[]`` is the whole repository) and, with
    ``"incremental": true`` and no ``from``, ``settings.ARXIV_OAI_LOOKBACK_DAYS`` days before
    the day the last succeeded incremental harvest started (before today for the first one),
    so that the stored run says exactly what it harvests; the datestamp window is stored on
    the run (``window_from``, ``window_until``: ``until``, or the day the run is made).

    ``task_id`` ties the run to the Celery task that makes it: when a run of that task exists
    already (the task was delivered again after its worker died, or retried), that run is
    resumed instead. ``max_seconds``: pause after the page that passes this budget (status
    ``pending``; :func:`harvest_run_resume` continues), so that no task outlives its limits.
    How pages are stored and what fails the run: :func:`harvest_run_resume`.

    Raises :class:`HarvestLocked` (nothing stored) when a harvest of the same kind is running,
    ``ValueError`` for bad parameters, ``ManifestError`` for a bad recorded directory, and
    what :func:`harvest_run_resume` raises.
    """
    if task_id:
        existing = HarvestRun.objects.filter(task_id=task_id).first()
        if existing is not None:
            logger.info("task %s: resuming its harvest run #%d", task_id, existing.pk)
            return harvest_run_resume(run=existing, batch_size=batch_size, max_seconds=max_seconds)
    params = _resolved_params(kind, dict(params or {}))
    with _SourceLock(kind) as lock:
        run = HarvestRun.objects.create(
            kind=kind, params=params, task_id=task_id, **_oai_window(kind, params)
        )
        lock.claim(run.pk)
        logger.info("harvest run #%d (%s) made: %s", run.pk, kind, params)
        return _execute(run, lock, batch_size=batch_size, max_seconds=max_seconds)


def harvest_run_resume(
    *, run: HarvestRun, batch_size: int | None = None, max_seconds: float | None = None
) -> HarvestSummary:
    """Execute ``run`` from its checkpoint to its end (a finished run is left as it is).

    Each page (chunk) is stored in one transaction together with the run's checkpoint: counts,
    errors, next resumption token, newest datestamp and position. A crash at any point leaves
    the database as it was after the last stored page, and resuming asks for the next page
    only, so the result equals an uninterrupted harvest. A run that is ``running`` (its worker
    died, or is still alive) is taken over: the older execution stops at its next page
    without writing it.

    Reported in the run's ``errors`` and the summary, and the harvest goes on: records a
    parser or the upsert rejected, ids asked for and not delivered, pages the API kept empty,
    and for ``recorded`` runs a file that cannot be parsed or a recorded refusal (the next
    file is replayed). Everything else fails the run: status ``failed``, the error recorded,
    the checkpoint kept, and the exception re-raised with a note naming the run and how to
    resume it: ``papers.sources.base.HarvestError`` (network, after the bounded retries),
    ``ParseError`` (a page that cannot be parsed), ``SourceError`` (a refused request),
    database errors.

    Raises :class:`HarvestLocked` (nothing done) when another run of the kind holds the lock.
    Returns a :class:`HarvestSummary` of this execution.
    """
    if run.is_finished:
        return HarvestSummary(kind=run.kind, run_id=run.pk, status=run.status, gaps=run.gaps)
    with _SourceLock(run.kind, run_id=run.pk) as lock:
        return _execute(run, lock, batch_size=batch_size, max_seconds=max_seconds)


def _resolved_params(kind: str, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with OAI sets and an incremental ``from`` written out; validated."""
    if kind == HarvestRun.Kind.OAI and not (
        params.get("identifiers") or params.get("resumption_token")
    ):
        params["sets"] = oai_sets(params)
        if params.get("incremental") is True and not params.get("from"):
            params["from"] = _incremental_from().isoformat()
    sources_for(kind, params)  # raises ValueError / ManifestError for bad parameters
    return params


def _oai_window(kind: str, params: Mapping[str, Any]) -> dict[str, dt.date | None]:
    """``window_from`` / ``window_until`` of an OAI list harvest (empty for anything else)."""
    if kind != HarvestRun.Kind.OAI or params.get("identifiers") or params.get("resumption_token"):
        return {}
    until = params.get("until")
    return {
        "window_from": dt.date.fromisoformat(params["from"]) if params.get("from") else None,
        # No ``until`` asks for everything up to now: today, in OAI's UTC datestamps.
        "window_until": dt.date.fromisoformat(until) if until else timezone.now().date(),
    }


def _incremental_from() -> dt.date:
    last = (
        HarvestRun.objects.filter(
            kind=HarvestRun.Kind.OAI,
            status=HarvestRun.Status.SUCCEEDED,
            params__incremental=True,
            started_at__isnull=False,
        )
        .order_by("-started_at")
        .first()
    )
    # Days, not one: arXiv adds records with datestamps in the past, and datestamps are days.
    lookback = dt.timedelta(days=settings.ARXIV_OAI_LOOKBACK_DAYS)
    if last is None:
        return timezone.now().date() - lookback
    return last.started_at.date() - lookback


def _execute(
    run: HarvestRun, lock: _SourceLock, *, batch_size: int | None, max_seconds: float | None
) -> HarvestSummary:
    summary = HarvestSummary(kind=run.kind, run_id=run.pk)
    attempt = _run_begin(run)
    if attempt is None:
        summary.status = run.status
        summary.gaps = run.gaps
        return summary
    deadline = None if max_seconds is None else time.monotonic() + max_seconds
    try:
        sources = sources_for(run.kind, run.params)
        first = int(run.position.get("source", 0))
        for index in range(first, len(sources)):
            state = run.position.get("state") if index == first else None
            try:
                for chunk in sources[index].chunks(state):
                    _store_chunk(run, attempt, index, chunk, batch_size, summary)
                    lock.refresh()
                    last = chunk.position is None and index == len(sources) - 1
                    if deadline is not None and time.monotonic() >= deadline and not last:
                        _run_set_status(run, attempt, HarvestRun.Status.PENDING)
                        summary.status = HarvestRun.Status.PENDING
                        logger.info("harvest run #%d paused after its time budget", run.pk)
                        return summary
            except (ParseError, SourceError) as error:
                if run.kind != HarvestRun.Kind.RECORDED:
                    raise
                # A recorded directory replays unrelated responses: one bad file does not
                # stop the others.
                logger.error("harvest run #%d: %s; going on with the next file", run.pk, error)
                summary.errors.append(error)
                _store_source_end(run, attempt, index, errors=[error])
                continue
            _store_source_end(run, attempt, index)
        # A run arXiv left short is never called a success, even with every page stored.
        status = HarvestRun.Status.INCOMPLETE if run.gaps else HarvestRun.Status.SUCCEEDED
        _run_set_status(run, attempt, status)
        summary.status = status
        summary.gaps = run.gaps
        (logger.warning if run.gaps else logger.info)(
            "harvest run #%d %s: %d pages, %d created, %d updated, %d unchanged, %d errors, "
            "%d gaps",
            run.pk,
            status,
            run.pages_done,
            run.records_created,
            run.records_updated,
            run.records_unchanged,
            run.error_count,
            len(run.gaps),
        )
        return summary
    except _Superseded:
        logger.warning("harvest run #%d was taken over by a newer execution; stopping", run.pk)
        run.refresh_from_db()
        summary.status = run.status
        return summary
    except BaseException as error:
        _run_fail(run, attempt, error)
        error.add_note(
            f"harvest run #{run.pk} failed after {run.pages_done} stored pages; its checkpoint "
            f"is kept: resume it with `manage.py harvest --resume {run.pk}` or the admin action"
        )
        raise


def _locked_run(run: HarvestRun, attempt: int | None) -> HarvestRun:
    """The run's row, locked for this transaction; raises _Superseded when a newer execution
    (a higher ``attempt``) owns it."""
    locked = HarvestRun.objects.select_for_update().get(pk=run.pk)
    if attempt is not None and locked.attempt != attempt:
        raise _Superseded()
    return locked


def _run_begin(run: HarvestRun) -> int | None:
    """Mark ``run`` running as a new execution; its ``attempt`` number, or None when the run
    has succeeded meanwhile."""
    with transaction.atomic():
        locked = _locked_run(run, None)
        if locked.is_finished:
            _copy_progress(locked, run)
            return None
        locked.status = HarvestRun.Status.RUNNING
        locked.attempt += 1
        locked.started_at = locked.started_at or timezone.now()
        locked.finished_at = None
        locked.save(update_fields=["status", "attempt", "started_at", "finished_at", "updated_at"])
    _copy_progress(locked, run)
    return locked.attempt


def _store_chunk(
    run: HarvestRun,
    attempt: int,
    index: int,
    chunk: Chunk,
    batch_size: int | None,
    summary: HarvestSummary,
) -> None:
    """Store ``chunk``'s records and the run's checkpoint after it in one transaction."""
    with transaction.atomic():
        locked = _locked_run(run, attempt)
        result = papers_upsert(records=chunk.records, batch_size=batch_size, source=chunk.source)
        # After the page's records: a record reported deleted is marked, never re-created.
        marked = papers_mark_deleted(arxiv_ids=chunk.deleted)
        rejected = [*chunk.errors, *result.errors]
        locked.pages_done += 1
        locked.records_created += result.created
        locked.records_updated += result.updated
        locked.records_unchanged += result.unchanged
        locked.records_rejected += len(rejected)
        locked.records_deleted += len(chunk.deleted)
        locked.records_duplicate += result.duplicates
        datestamps = [record.datestamp for record in chunk.records if record.datestamp]
        if datestamps:
            newest = max(datestamps)
            if locked.last_datestamp is None or newest > locked.last_datestamp:
                locked.last_datestamp = newest
        if chunk.position is None:
            locked.position = {"source": index + 1}
            locked.resumption_token = ""
        else:
            locked.position = {"source": index, "state": chunk.position}
            locked.resumption_token = chunk.resumption_token or ""
        _add_errors(locked, [*rejected, *chunk.gaps])
        _add_gaps(locked, chunk.gaps)
        locked.save()
    _copy_progress(locked, run)
    summary.pages += 1
    summary.created += result.created
    summary.updated += result.updated
    summary.unchanged += result.unchanged
    summary.deleted += len(chunk.deleted)
    summary.marked_deleted += len(marked)
    summary.duplicates += result.duplicates
    summary.errors.extend([*rejected, *chunk.gaps])
    for error in [*chunk.errors, *chunk.gaps]:
        logger.warning("run #%d: %s", run.pk, error)
    logger.info(
        "run #%d, page %d (%s): %d created, %d updated, %d unchanged, %d rejected, "
        "%d deleted upstream (%d stored papers marked deleted)",
        run.pk,
        locked.pages_done,
        chunk.source,
        result.created,
        result.updated,
        result.unchanged,
        len(rejected),
        len(chunk.deleted),
        len(marked),
    )


def _store_source_end(
    run: HarvestRun, attempt: int, index: int, *, errors: Iterable[Exception] = ()
) -> None:
    """Move the checkpoint past source ``index`` (once it is exhausted or its file rejected)."""
    errors = list(errors)
    if not errors and run.position.get("source", 0) > index:
        return
    with transaction.atomic():
        locked = _locked_run(run, attempt)
        locked.position = {"source": index + 1}
        locked.resumption_token = ""
        _add_errors(locked, errors)
        locked.save(
            update_fields=["position", "resumption_token", "errors", "error_count", "updated_at"]
        )
    _copy_progress(locked, run)


def _run_set_status(run: HarvestRun, attempt: int, status: str) -> None:
    with transaction.atomic():
        locked = _locked_run(run, attempt)
        locked.status = status
        fields = ["status", "updated_at"]
        if status in (HarvestRun.Status.SUCCEEDED, HarvestRun.Status.INCOMPLETE):
            locked.finished_at = timezone.now()
            locked.resumption_token = ""
            fields += ["finished_at", "resumption_token"]
        locked.save(update_fields=fields)
    _copy_progress(locked, run)


def _run_fail(run: HarvestRun, attempt: int, error: BaseException) -> None:
    """Record ``error`` on ``run`` and mark it failed, keeping its checkpoint."""
    logger.error("harvest run #%d failed: %s", run.pk, error)
    try:
        with transaction.atomic():
            locked = _locked_run(run, attempt)
            locked.status = HarvestRun.Status.FAILED
            locked.finished_at = timezone.now()
            _add_errors(locked, [error])
            locked.save(
                update_fields=["status", "finished_at", "errors", "error_count", "updated_at"]
            )
        _copy_progress(locked, run)
    except _Superseded:
        logger.warning("harvest run #%d: a newer execution owns it; failure not recorded", run.pk)
    except Exception:
        # The database itself may be what failed; the error is raised to the caller anyway.
        logger.exception("harvest run #%d: could not record its failure", run.pk)


def _add_errors(run: HarvestRun, errors: list) -> None:
    """Append error messages: ``str`` of our own errors (they name source and record), with the
    exception type for anything unexpected; the first ``ERRORS_KEPT`` are kept, all counted."""
    messages = [
        str(error)
        if isinstance(error, ParseError | SourceError | HarvestError)
        else f"{type(error).__name__}: {error}"
        for error in errors
    ]
    room = max(HarvestRun.ERRORS_KEPT - len(run.errors), 0)
    run.errors = [*run.errors, *messages[:room]]
    run.error_count += len(messages)


def _add_gaps(run: HarvestRun, gaps: list) -> None:
    """Append a chunk's gaps to ``run.gaps`` (at most ``ERRORS_KEPT``; every one is also
    counted among the run's errors)."""
    entries = [
        {
            "source": gap.source,
            "query": gap.query if isinstance(gap, Gap) else gap.record,
            "offset": gap.offset if isinstance(gap, Gap) else None,
            "record": gap.record,
            "message": gap.message,
        }
        for gap in gaps
    ]
    room = max(HarvestRun.ERRORS_KEPT - len(run.gaps), 0)
    run.gaps = [*run.gaps, *entries[:room]]


_PROGRESS_FIELDS = [
    "status",
    "attempt",
    "pages_done",
    "records_created",
    "records_updated",
    "records_unchanged",
    "records_rejected",
    "records_deleted",
    "records_duplicate",
    "resumption_token",
    "last_datestamp",
    "position",
    "errors",
    "error_count",
    "gaps",
    "started_at",
    "finished_at",
    "updated_at",
]


def _copy_progress(source: HarvestRun, target: HarvestRun) -> None:
    """Keep the caller's ``run`` object in step with the stored row."""
    for name in _PROGRESS_FIELDS:
        setattr(target, name, getattr(source, name))
