"""Harvest tasks (queue ``harvest``, routed by ``papers.tasks.*``). Thin: the work is in
``papers.harvest.harvest_run`` and ``harvest_run_resume``. The embedding task
(``papers.tasks.embed_papers``) goes to the ``embed`` queue (``papers.tasks.embed_*``), so that a
worker with an accelerator can take that queue alone.

Both tasks are safe to run again: a task delivered a second time (its worker was killed;
``acks_late`` and ``reject_on_worker_lost`` put it back on the queue) or retried after a
network failure finds its :class:`~papers.models.HarvestRun` and resumes it from its checkpoint.
A run that used up its time budget (``settings.ARXIV_HARVEST_TASK_SECONDS``, kept below the
task time limits) is paused and continued by a new ``harvest_resume`` task.
"""

import logging

from celery import shared_task
from django.conf import settings

from .harvest import HarvestLocked, HarvestSummary, harvest_run, harvest_run_resume
from .models import HarvestRun
from .sources.base import HarvestError

logger = logging.getLogger(__name__)

# Only network failures are worth another try; a bad page or a refused request would fail the
# same way again, so the run fails and waits for a person (admin action, harvest --resume).
RETRY_OPTIONS = {
    "autoretry_for": (HarvestError,),
    "max_retries": 5,
    "retry_backoff": 60,
    "retry_backoff_max": 30 * 60,
    "retry_jitter": True,
}


@shared_task(bind=True, name="papers.tasks.harvest", **RETRY_OPTIONS)
def harvest(self, kind: str, params: dict | None = None) -> dict | None:
    """Harvest ``kind`` (``recorded``, ``oai``, ``atom``, ``snapshot``) with JSON ``params``
    (see ``papers.sources.sources_for``; what beat's periodic tasks pass) as a new harvest run.

    Returns ``HarvestSummary.as_dict`` (kind, run_id, status, pages, created, updated,
    unchanged, deleted, marked_deleted, error_count, errors), or None when another harvest of
    the kind is running (logged; nothing is stored).
    """
    try:
        summary = harvest_run(
            kind=kind,
            params=params or {},
            task_id=self.request.id or "",
            max_seconds=settings.ARXIV_HARVEST_TASK_SECONDS,
        )
    except HarvestLocked as locked:
        logger.warning("harvest task %s: %s", self.request.id, locked)
        return None
    return _continued(summary)


@shared_task(bind=True, name="papers.tasks.harvest_resume", **RETRY_OPTIONS)
def harvest_resume(self, run_id: int) -> dict | None:
    """Resume harvest run ``run_id`` from its checkpoint. Returns the summary dict as
    :func:`harvest` does, or None when the run is gone or another harvest holds the lock."""
    run = HarvestRun.objects.filter(pk=run_id).first()
    if run is None:
        return None
    try:
        summary = harvest_run_resume(run=run, max_seconds=settings.ARXIV_HARVEST_TASK_SECONDS)
    except HarvestLocked as locked:
        logger.warning("harvest run #%d not resumed: %s", run_id, locked)
        return None
    return _continued(summary)


def _continued(summary: HarvestSummary) -> dict:
    if summary.status == HarvestRun.Status.PENDING:
        harvest_resume.delay(summary.run_id)
    return summary.as_dict()


@shared_task(name="papers.tasks.embed_papers")
def embed_papers(paper_ids: list[int]) -> int:
    """Embed the papers ``paper_ids`` (pks; ones since deleted are ignored) whose vector is
    missing or stale, through ``papers.embeddings.store.embed_papers``; returns how many were
    embedded. Safe to run twice: the second run embeds nothing. With the model files missing
    it logs a warning naming them and returns 0 (nothing to retry until they are installed;
    ``manage.py embed`` catches up then)."""
    from .embeddings.encoder import EncoderUnavailable
    from .embeddings.store import embed_papers as store_embed_papers

    try:
        return store_embed_papers(paper_ids)
    except EncoderUnavailable as missing:
        logger.warning("%d papers not embedded: %s", len(paper_ids), missing)
        return 0


@shared_task(name="papers.tasks.embed_index_reconcile", ignore_result=True)
def embed_index_reconcile() -> None:
    """Reconcile the current model's index file with PostgreSQL
    (``papers.embeddings.index.IndexWriter.reconcile``): add the stored vectors it lacks,
    drop the ones gone, reading only the rows embedded since its last reconcile. Beat sends
    it every ten minutes (migration ``0013_embed_index_reconcile_schedule``); queue ``embed``.
    One at a time through the index's write lock (a second run waits, then finds little to
    read). Without the model files it logs at info level and does nothing."""
    from .embeddings.encoder import EncoderUnavailable, get_encoder
    from .embeddings.index import index_writer

    try:
        encoder = get_encoder()
    except EncoderUnavailable as missing:
        logger.info("vector index not reconciled: %s", missing)
        return
    summary = index_writer(encoder.model_id, encoder.dimension).reconcile()
    if summary.added or summary.removed:
        logger.warning(
            "vector index was behind PostgreSQL: %d vectors added, %d removed",
            summary.added,
            summary.removed,
        )


@shared_task(name="papers.tasks.duplicates_detect", ignore_result=True)
def duplicates_detect(paper_ids: list[int]) -> None:
    """Link the stored papers ``paper_ids`` (pks; gone ones are skipped) to their
    near-duplicates (``papers.duplicates.duplicates_detect``). Queue ``default``."""
    from .duplicates import duplicates_detect as detect

    detect(paper_ids=paper_ids)
