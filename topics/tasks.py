"""Tagging and retraining tasks (queue ``tag``). Thin: take ids, call one service."""

import logging

from celery import shared_task
from django.core.cache import cache

logger = logging.getLogger(__name__)

RETRAIN_LOCK_KEY = "topics:retrain-classifier"
# Longer than any training may run (the hard task limit is an hour), so a crashed worker's
# lock expires on its own.
RETRAIN_LOCK_SECONDS = 2 * 60 * 60


@shared_task(name="topics.tasks.tag_papers")
def tag_papers(paper_ids: list[int]) -> int:
    """Apply every active topic's rule and the active classifier to the papers ``paper_ids``
    (pks; ones since deleted are ignored) through ``topics.tagging.engine.papers_tag``; returns the
    number of assignments created, changed or removed. Safe to run twice: the second run
    writes nothing."""
    from .tagging.engine import papers_tag

    return papers_tag(paper_ids=paper_ids)


@shared_task(name="topics.tasks.retrain_classifier")
def retrain_classifier() -> int | None:
    """Train, store and activate a new classifier version, then re-tag every paper with it
    (``topics.tagging.training.classifier_train``). Runs nightly from django-celery-beat and on
    demand (``retrain_classifier.delay()``, ``manage.py retrain``).

    One at a time: a run that finds another holding the lock returns ``None`` at once.
    Returns the new version number.
    """
    from .tagging.training import classifier_train

    if not cache.add(RETRAIN_LOCK_KEY, "running", RETRAIN_LOCK_SECONDS):
        logger.info("Classifier retraining already running; this run does nothing.")
        return None
    try:
        return classifier_train(apply=True).version
    finally:
        cache.delete(RETRAIN_LOCK_KEY)


EMERGING_LOCK_KEY = "topics:find-emerging"
EMERGING_LOCK_SECONDS = 60 * 60


@shared_task(name="topics.tasks.find_emerging")
def find_emerging(weeks: int | None = None) -> int | None:
    """Recompute the emerging clusters over the last ``weeks`` weeks (default
    ``topics.emerging.WINDOW_WEEKS``) through ``topics.emerging.emerging_clusters_refresh``;
    returns how many there are now, or None when another run holds the lock (one at a time)."""
    from .emerging import WINDOW_WEEKS, emerging_clusters_refresh

    if not cache.add(EMERGING_LOCK_KEY, "running", EMERGING_LOCK_SECONDS):
        logger.info("Emerging clusters already being computed; this run does nothing.")
        return None
    try:
        return len(emerging_clusters_refresh(weeks=weeks or WINDOW_WEEKS))
    finally:
        cache.delete(EMERGING_LOCK_KEY)
