"""The Redis cache backend: django-redis, plus a breaker and a local fallback for a few keys.

django-redis with ``IGNORE_EXCEPTIONS`` turns a failed call into a miss (or a no-op), but it
still waits for every call: on a Redis that hangs (stopped, or a host that drops packets)
each call waits for the socket timeout, and a page makes several. Here, after one call fails
for want of a connection or an answer, every call skips Redis at once for
``BREAKER_SECONDS`` (the ``circuitbreaker`` library's breaker, one per Redis location and
process), then tries again.

Keys under ``LOCAL_FALLBACK_KEY_PREFIXES`` (allauth's rate limits, ``allauth:rl:``) go to
this process's local memory while Redis is skipped: allauth takes a lock with ``cache.add``
before counting, and a lock that cannot be taken answers 429 to every log-in. So with Redis
down those limits still count, per process instead of site-wide.

Options (``CACHES["default"]["OPTIONS"]``, besides django-redis's own): ``BREAKER_SECONDS``
(float, default 30) and ``LOCAL_FALLBACK_KEY_PREFIXES`` (sequence of str, default none).
"""

from __future__ import annotations

import logging
import socket
import sys

from circuitbreaker import CircuitBreaker
from django.core.cache.backends.locmem import LocMemCache
from django_redis.cache import RedisCache as DjangoRedisCache
from django_redis.exceptions import ConnectionInterrupted
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

# One breaker per LOCATION for the whole process: Django makes a cache backend per thread.
_breakers: dict[str, CircuitBreaker] = {}


class CacheSkipped(ConnectionInterrupted):
    """A call the open breaker kept from Redis (django-redis then answers a miss or no-op)."""


def _unreachable(exc_type, exc) -> bool:
    """Failures that open the breaker: no connection or no answer in time, not a bad reply."""
    cause = getattr(exc, "__cause__", None)
    return issubclass(exc_type, ConnectionInterrupted) and isinstance(
        cause, (RedisConnectionError, RedisTimeoutError, socket.timeout)
    )


def breaker_for(location: str, seconds: float) -> CircuitBreaker:
    """The process's breaker for the Redis at ``location``: opens at the first failure,
    stays open ``seconds``."""
    if location not in _breakers:
        _breakers[location] = CircuitBreaker(
            failure_threshold=1,
            recovery_timeout=seconds,
            expected_exception=_unreachable,
            name=f"cache {location}",
        )
    return _breakers[location]


class _GuardedClient:
    """django-redis's client seen through the breaker: while it is open, every call raises
    :class:`CacheSkipped` without touching the network."""

    def __init__(self, client, breaker: CircuitBreaker, seconds: float):
        self._client = client
        self._breaker = breaker
        self._seconds = seconds

    # Calls that never wait on Redis: closing (a pool disconnect), building keys, encoding.
    LOCAL_CALLS = frozenset({"close", "make_key", "make_pattern", "encode", "decode"})

    def __getattr__(self, name):
        attribute = getattr(self._client, name)
        if not callable(attribute) or name in self.LOCAL_CALLS:
            return attribute

        def call(*args, **kwargs):
            if self._breaker.opened:
                raise CacheSkipped(connection=None) from RedisConnectionError(
                    f"skipped: Redis failed less than {self._seconds} s ago"
                )
            with self._breaker:
                return attribute(*args, **kwargs)

        return call


class _FailureLogger(logging.LoggerAdapter):
    """django-redis's log of ignored exceptions, without the calls the breaker skipped (the
    failure that opened it is logged; the hundreds of skips after it are not)."""

    def exception(self, msg, *args, **kwargs):
        if not isinstance(sys.exc_info()[1], CacheSkipped):
            self.logger.exception(msg, *args, **kwargs)


class RedisCache(DjangoRedisCache):
    """``django_redis.cache.RedisCache`` behind a breaker, with a local fallback for some keys
    (see the module's docstring). Errors are those of django-redis."""

    def __init__(self, server, params):
        super().__init__(server, params)
        options = params.get("OPTIONS", {})
        self._breaker_seconds = float(options.get("BREAKER_SECONDS", 30))
        self._breaker = breaker_for(str(server), self._breaker_seconds)
        self._fallback_prefixes = tuple(options.get("LOCAL_FALLBACK_KEY_PREFIXES", ()))
        # LocMemCache instances of one name share their memory within the process.
        self._local = LocMemCache("topicsite-redis-fallback", {"OPTIONS": {"MAX_ENTRIES": 10_000}})
        if self.logger is not None:
            self.logger = _FailureLogger(self.logger, {})

    @property
    def client(self):
        return _GuardedClient(super().client, self._breaker, self._breaker_seconds)

    def _target(self, key):
        """Local memory for a fallback key while Redis is skipped; otherwise Redis."""
        fallback = isinstance(key, str) and key.startswith(self._fallback_prefixes)
        return self._local if fallback and self._breaker.opened else None

    def add(self, key, *args, **kwargs):
        return (self._target(key) or super()).add(key, *args, **kwargs)

    def get(self, key, *args, **kwargs):
        return (self._target(key) or super()).get(key, *args, **kwargs)

    def set(self, key, *args, **kwargs):
        return (self._target(key) or super()).set(key, *args, **kwargs)

    def delete(self, key, *args, **kwargs):
        return (self._target(key) or super()).delete(key, *args, **kwargs)


def reset() -> None:
    """Forget every breaker's state and the local fallback's counts (tests, drills)."""
    _breakers.clear()
    LocMemCache("topicsite-redis-fallback", {}).clear()
