"""Digest tasks (queue ``default``). Thin: take ids, call one service.

``digests_send_due`` runs hourly from django-celery-beat (the schedule is made by
``digests/migrations/0002_send_due_schedule.py``) and queues one ``digest_send_user`` per user
due; the delivery record makes a duplicated or retried task send nothing twice.
"""

import datetime as dt
import logging
import smtplib

from celery import shared_task
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.utils import timezone

logger = logging.getLogger(__name__)

SWEEP_LOCK_KEY = "digests:send-due"
# Longer than a sweep takes (it only queues tasks); a crashed sweep's lock expires on its own.
SWEEP_LOCK_SECONDS = 10 * 60


class SweepLockUnavailable(Exception):
    """The sweep's lock could not be taken because the cache (Redis) is unreachable: nothing
    was sent; the next sweep sends what is due."""


def _sweep_lock_taken(owner: str) -> bool:
    """Take the sweep's lock for ``owner``: True when taken, False when another sweep holds it.

    The cache ignores Redis errors (``IGNORE_EXCEPTIONS``), so a refused ``add`` also means
    "unreachable": when no holder can be read back and a second ``add`` fails too, raises
    :class:`SweepLockUnavailable` rather than reporting a sweep that is not running."""
    if cache.add(SWEEP_LOCK_KEY, owner, SWEEP_LOCK_SECONDS):
        return True
    if cache.get(SWEEP_LOCK_KEY) is not None:
        return False
    # The holder may have just finished: try once more before blaming the cache.
    if cache.add(SWEEP_LOCK_KEY, owner, SWEEP_LOCK_SECONDS):
        return True
    if cache.get(SWEEP_LOCK_KEY) is not None:
        return False
    raise SweepLockUnavailable(
        "The cache (Redis, REDIS_URL) is unreachable, so the digest sweep cannot take its "
        "lock; nothing was sent. The next sweep sends what is due."
    )


@shared_task(
    name="digests.tasks.digest_send_user",
    autoretry_for=(smtplib.SMTPException, OSError),
    retry_backoff=60,
    retry_backoff_max=60 * 60,
    max_retries=4,
)
def digest_send_user(user_id: int, period: str, period_end: str) -> str | None:
    """Send user ``user_id`` (pk) their ``period`` ("daily" | "weekly") digest for the boundary
    ``period_end`` (ISO date) through ``digests.services.digest_send``; returns the digest's
    status, or None when the user is gone, inactive or has no email address. Mail-server and
    network errors are retried with backoff (the digest keeps its papers for the retry)."""
    from .services import digest_send

    user = get_user_model().objects.filter(pk=user_id, is_active=True).exclude(email="").first()
    if user is None:
        return None
    digest = digest_send(user=user, period=period, period_end=dt.date.fromisoformat(period_end))
    return digest.status


@shared_task(name="digests.tasks.digests_send_due", bind=True)
def digests_send_due(self) -> dict[str, int] | None:
    """Queue ``digest_send_user`` for every user whose daily or weekly digest is due now
    (``digests.selectors.period_end_due`` and ``digest_due_users``), after marking digests
    left sending too long unconfirmed. Returns ``{"daily": n, "weekly": n}`` tasks queued, or
    None when another sweep holds the lock; raises :class:`SweepLockUnavailable` when the
    cache holding the lock cannot be reached.

    The lock holds the task id: a sweep whose worker was killed is delivered again with the same
    id (acks_late) and takes its own stale lock over instead of waiting for it to expire."""
    from .models import Digest
    from .selectors import digest_due_users, period_end_due
    from .services import digests_mark_unconfirmed

    owner = self.request.id or "running"
    if not _sweep_lock_taken(owner):
        if self.request.id is None or cache.get(SWEEP_LOCK_KEY) != owner:
            logger.info("A digest sweep is already running; this one does nothing.")
            return None
        logger.warning("Digest sweep %s was interrupted; delivered again, it runs anew.", owner)
    try:
        digests_mark_unconfirmed()
        now = timezone.now()
        queued = {}
        for period in Digest.Period.values:
            period_end = period_end_due(period=period, now=now)
            user_ids = []
            if period_end is not None:
                user_ids = list(
                    digest_due_users(period=period, period_end=period_end).values_list(
                        "pk", flat=True
                    )
                )
            for user_id in user_ids:
                digest_send_user.delay(user_id, period, period_end.isoformat())
            queued[period] = len(user_ids)
        return queued
    finally:
        cache.delete(SWEEP_LOCK_KEY)
