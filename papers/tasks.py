"""Harvest tasks (queue ``harvest``, routed by ``papers.tasks.*``). Thin: the work is in
``papers.services.harvest_run``."""

import requests
from celery import shared_task

from .services import harvest_run
from .sources import HarvestError


@shared_task(
    name="papers.tasks.harvest",
    # Only network failures are worth another try; a bad page or a refused request would fail
    # the same way again, so they are reported in the summary instead.
    autoretry_for=(requests.ConnectionError, requests.Timeout, HarvestError),
    max_retries=5,
    retry_backoff=60,
    retry_backoff_max=30 * 60,
    retry_jitter=True,
)
def harvest(kind: str, params: dict | None = None) -> dict:
    """Harvest ``kind`` (``recorded``, ``oai``, ``atom``, ``snapshot``) with JSON ``params``
    (see ``papers.sources.sources_for``) and store the records.

    Returns the summary dict of ``HarvestSummary.as_dict`` (kind, pages, created, updated,
    unchanged, deleted, error_count, errors). OAI harvests resume from their checkpoint when
    retried.
    """
    return harvest_run(kind=kind, params=params or {}).as_dict()
