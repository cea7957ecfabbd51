"""How often one reader may ask: ``ASK_RATE_LIMIT_PER_MINUTE`` questions a minute per
signed-in user and per client address, the page and the API counted together.

Counted in the Django cache (Redis outside the embedded default), so every web process shares
the counts: a fixed one-minute window per key, created with ``cache.add`` and counted with
``cache.incr`` (both atomic in Redis).
"""

from __future__ import annotations

import time

from allauth.account.adapter import get_adapter
from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import PermissionDenied

__all__ = ["WINDOW_SECONDS", "AskRateLimited", "ask_rate_limit"]

WINDOW_SECONDS = 60


class AskRateLimited(Exception):
    """Too many questions; ``retry_after`` is the whole number of seconds (at least 1) until
    the current window ends."""

    def __init__(self, retry_after: int):
        super().__init__(f"Too many questions; try again in {retry_after} s.")
        self.retry_after = retry_after


def _client_address(request) -> str:
    """The client's address as allauth reads it (honouring ``ALLAUTH_TRUSTED_PROXY_COUNT``)."""
    try:
        return get_adapter(request).get_client_ip(request)
    except PermissionDenied:
        return "unknown"


def _count(key: str) -> int:
    """Add one to ``key``'s count in this window and return the new count."""
    cache.add(key, 0, timeout=WINDOW_SECONDS + 5)
    try:
        # None: the cache is down and skipped (IGNORE_EXCEPTIONS): the limit fails open.
        return cache.incr(key) or 0
    except ValueError:  # the key expired between add and incr: a new window starts
        cache.add(key, 1, timeout=WINDOW_SECONDS + 5)
        return 1


def ask_rate_limit(request) -> None:
    """Count one question for ``request``'s user (when signed in) and client address.

    Raises :class:`AskRateLimited` when either count is over ``ASK_RATE_LIMIT_PER_MINUTE`` in
    the current minute (the question is counted all the same).
    """
    now = time.time()
    window = int(now // WINDOW_SECONDS)
    keys = [f"ask:rate:addr:{_client_address(request)}:{window}"]
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        keys.append(f"ask:rate:user:{user.pk}:{window}")
    counts = [_count(key) for key in keys]
    if max(counts) > settings.ASK_RATE_LIMIT_PER_MINUTE:
        retry_after = max(1, int((window + 1) * WINDOW_SECONDS - now + 0.999))
        raise AskRateLimited(retry_after)
