"""Talking to arXiv over HTTP, politely: :class:`HttpTransport` and the :class:`RequestLimiter`;
:class:`RetryingTransport`, the retry loop it shares with the recorded replay.

:class:`HttpTransport` sends a descriptive User-Agent, uses connect/read timeouts and a
deadline for the whole response, retries with exponential backoff on connection errors,
timeouts and connections dropped mid-body, honours ``Retry-After`` on 503 and 429, caps the
response size, spaces every attempt by the :class:`RequestLimiter` (one request at a time
across every worker, through Redis), then fails loudly with a
:class:`~papers.sources.base.HarvestError`.
"""

from __future__ import annotations

import functools
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlencode

import redis
import requests
from django.conf import settings
from django.core.cache import cache
from urllib3.exceptions import InvalidHeader
from urllib3.util.retry import Retry

from .base import Fetched, HarvestError

__all__ = [
    "Attempt",
    "HttpTransport",
    "RETRY_STATUSES",
    "RequestLimiter",
    "RetryingTransport",
    "redis_client",
    "retry_after_seconds",
]

logger = logging.getLogger(__name__)

# Statuses arXiv uses to ask a client to come back later (with Retry-After).
RETRY_STATUSES = (429, 503)


@functools.cache
def redis_client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url)


class RequestLimiter:
    """At most one request every ``interval_ms`` milliseconds among every process that shares
    the store: all workers on all hosts when ``REDIS_URL`` is set, this process otherwise.

    :meth:`wait` claims the next slot: ``SET key NX PX interval`` in Redis (the key living
    exactly one interval after a request starts), retried after the key's remaining life until
    the claim succeeds. Without Redis (the embedded default) the same claim is a
    ``cache.add`` on the local cache. ``interval_ms`` defaults to
    ``settings.ARXIV_REQUEST_INTERVAL_MS`` (arXiv asks for 3000); 0 turns the limiter off.
    ``sleep`` is how waiting is done (seconds; tests pass their own).
    """

    KEY = "topicsite:papers:arxiv-request-slot"

    def __init__(
        self,
        *,
        interval_ms: int | None = None,
        key: str = KEY,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if interval_ms is None:
            interval_ms = settings.ARXIV_REQUEST_INTERVAL_MS
        if interval_ms < 0:
            raise ValueError(f"interval_ms must be >= 0, not {interval_ms}")
        self.interval_ms = int(interval_ms)
        self.key = key
        self.sleep = sleep

    def try_acquire(self) -> bool:
        """Claim the slot if it is free; True when claimed (then nobody else gets one for
        ``interval_ms``)."""
        if self.interval_ms <= 0:
            return True
        token = uuid.uuid4().hex
        if settings.REDIS_URL:
            client = redis_client(settings.REDIS_URL)
            return bool(client.set(self.key, token, nx=True, px=self.interval_ms))
        return cache.add(self.key, token, timeout=self.interval_ms / 1000)

    def wait(self) -> float:
        """Block until this process holds the slot; returns the seconds spent waiting."""
        waited = 0.0
        while not self.try_acquire():
            pause = self._remaining_seconds()
            self.sleep(pause)
            waited += pause
        return waited

    def _remaining_seconds(self) -> float:
        if settings.REDIS_URL:
            remaining_ms = redis_client(settings.REDIS_URL).pttl(self.key)
            if remaining_ms > 0:
                return remaining_ms / 1000
        # Key gone meanwhile (or no TTL to read on the local cache): poll again soon.
        return max(self.interval_ms / 10_000, 0.001)


class _TooSlow(requests.Timeout):
    """The whole response took longer than the transport's deadline."""


# What a later attempt may cure: the network, not the request.
_RETRYABLE = (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError)


@dataclass(frozen=True)
class Attempt:
    """One answer to one attempt at a request: HTTP ``status``, ``body``, ``source`` (the URL,
    or the recorded file) and ``retry_after`` (seconds a 429/503 asked to wait, ``None`` when it
    did not say or said something unreadable)."""

    status: int
    body: bytes
    source: str
    retry_after: float | None = None


class RetryingTransport:
    """The retry loop of every transport: the same for arXiv over HTTP and for a recorded
    replay of it, so that a recorded ``503`` with ``Retry-After`` is handled exactly as the
    real one was. Subclasses answer one attempt in :meth:`attempt`.

    - ``retries``: retries after the first attempt, for what :meth:`attempt` raises among
      ``retryable`` (connection errors and timeouts over HTTP) and HTTP 429/503;
    - ``backoff_factor``: waits ``backoff_factor * 2**n`` seconds before retry ``n + 1``, or what
      ``Retry-After`` says on a 429/503; a ``Retry-After`` longer than ``retry_after_max``
      seconds ends the request at once: an outage is better left to the task's own, later
      retry than to a blocked worker;
    - ``limiter``: a :class:`RequestLimiter` every attempt waits for (``None``: no limit);
    - ``sleep``: how waits are done (seconds).

    :meth:`get` raises :class:`HarvestError` naming the request once retries are spent and for
    an HTTP status not in ``ok_statuses`` (not retried).
    """

    retryable: tuple[type[BaseException], ...] = ()

    def __init__(
        self,
        *,
        retries: int | None = None,
        backoff_factor: float | None = None,
        retry_after_max: float | None = None,
        limiter: RequestLimiter | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        # None: the settings (ARXIV_HTTP_RETRIES, ARXIV_HTTP_BACKOFF_SECONDS,
        # ARXIV_RETRY_AFTER_MAX), so HTTP and recorded replays retry alike.
        if retries is None:
            retries = settings.ARXIV_HTTP_RETRIES
        if backoff_factor is None:
            backoff_factor = settings.ARXIV_HTTP_BACKOFF_SECONDS
        if retry_after_max is None:
            retry_after_max = settings.ARXIV_RETRY_AFTER_MAX
        if retries < 0:
            raise ValueError(f"retries must be >= 0, not {retries}")
        self.retries = retries
        self.backoff_factor = backoff_factor
        self.retry_after_max = retry_after_max
        self.limiter = limiter
        self.sleep = sleep

    def attempt(self, url: str, params: Mapping[str, str], full_url: str) -> Attempt:
        """Answer one attempt at ``GET url?params``; raise one of ``retryable`` for a failure a
        later attempt may cure."""
        raise NotImplementedError

    def get(
        self, url: str, params: Mapping[str, str], *, ok_statuses: Iterable[int] = (200,)
    ) -> Fetched:
        """GET ``url`` with query ``params``; returns the body.

        Raises :class:`HarvestError` naming the full URL when retries are spent and for a
        status not in ``ok_statuses``.
        """
        ok_statuses = tuple(ok_statuses)
        full_url = f"{url}?{urlencode(params)}" if params else url
        attempts = self.retries + 1
        for number in range(1, attempts + 1):
            if self.limiter is not None:
                self.limiter.wait()
            logger.info("GET %s (attempt %d of %d)", full_url, number, attempts)
            try:
                answer = self.attempt(url, params, full_url)
            except self.retryable as error:
                problem, delay, cause = f"{type(error).__name__}: {error}", None, error
            else:
                if answer.status in ok_statuses:
                    return Fetched(body=answer.body, status=answer.status, source=answer.source)
                if answer.status not in RETRY_STATUSES:
                    raise HarvestError(f"unexpected HTTP status {answer.status}", url=full_url)
                problem, delay, cause = f"HTTP {answer.status}", answer.retry_after, None
                if delay is not None and delay > self.retry_after_max:
                    raise HarvestError(
                        f"HTTP {answer.status} with Retry-After {delay:g} s, more than the "
                        f"{self.retry_after_max:g} s a harvest waits; try again later",
                        url=full_url,
                    )
            if number == attempts:
                raise HarvestError(
                    f"gave up after {attempts} attempts; last: {problem}", url=full_url
                ) from cause
            if delay is None:
                delay, why = self.backoff_factor * 2 ** (number - 1), "backoff"
            else:
                why = "Retry-After"
            logger.warning(
                "%s: %s; retrying in %g s (%s), attempt %d of %d",
                full_url,
                problem,
                delay,
                why,
                number + 1,
                attempts,
            )
            self.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover


class HttpTransport(RetryingTransport):
    """GET over HTTP with requests, retried by :class:`RetryingTransport`'s loop.

    The loop is ours, not urllib3's ``Retry``, because a connection dropped mid-body and a body
    that trickles in past the deadline happen after urllib3 is done, and because every attempt,
    retries included, must wait its turn at the shared :class:`RequestLimiter`.

    - ``user_agent``: sent on every request (default ``settings.ARXIV_USER_AGENT``);
    - ``timeout``: seconds to connect, between two reads, and for the whole response
      (default ``settings.ARXIV_HTTP_TIMEOUT``);
    - ``retries``: retries after the first attempt (default ``settings.ARXIV_HTTP_RETRIES``),
      for connection errors, timeouts, connections dropped mid-body and HTTP 429/503;
    - ``backoff_factor`` (default ``settings.ARXIV_HTTP_BACKOFF_SECONDS``) and
      ``retry_after_max`` (default ``settings.ARXIV_RETRY_AFTER_MAX``): see
      :class:`RetryingTransport`;
    - ``max_bytes``: a body longer than this is refused (default ``settings.ARXIV_HTTP_MAX_BYTES``);
    - ``limiter``: the :class:`RequestLimiter` every attempt waits for (default: the shared one);
    - ``sleep``: how backoff waits are done (seconds).

    :meth:`get` raises :class:`HarvestError` naming the URL once retries are spent, for an
    HTTP status not in ``ok_statuses`` (not retried), and for an oversized body (not retried).
    """

    retryable = _RETRYABLE

    def __init__(
        self,
        *,
        user_agent: str | None = None,
        timeout: float | None = None,
        retries: int | None = None,
        backoff_factor: float | None = None,
        retry_after_max: float | None = None,
        max_bytes: int | None = None,
        limiter: RequestLimiter | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        super().__init__(
            retries=retries,
            backoff_factor=backoff_factor,
            retry_after_max=retry_after_max,
            limiter=limiter if limiter is not None else RequestLimiter(),
            sleep=sleep,
        )
        self.user_agent = user_agent or settings.ARXIV_USER_AGENT
        self.timeout = timeout if timeout is not None else settings.ARXIV_HTTP_TIMEOUT
        self.max_bytes = max_bytes if max_bytes is not None else settings.ARXIV_HTTP_MAX_BYTES
        if self.timeout <= 0 or self.max_bytes < 1:
            raise ValueError("timeout must be > 0 and max_bytes >= 1")
        self.session = requests.Session()
        self.session.headers["User-Agent"] = self.user_agent

    def attempt(self, url: str, params: Mapping[str, str], full_url: str) -> Attempt:
        """One GET: the status, ``Retry-After`` on a 429/503 and the body (at most
        ``max_bytes``)."""
        status, retry_after, body = self._fetch(url, params, full_url)
        return Attempt(status=status, body=body, source=full_url, retry_after=retry_after)

    def _fetch(
        self, url: str, params: Mapping[str, str], full_url: str
    ) -> tuple[int, float | None, bytes]:
        """One attempt: (status, Retry-After seconds or None, body)."""
        started = time.monotonic()
        with self.session.get(
            url, params=dict(params), timeout=(self.timeout, self.timeout), stream=True
        ) as response:
            status = response.status_code
            retry_after = None
            if status in RETRY_STATUSES and response.headers.get("Retry-After"):
                retry_after = retry_after_seconds(response.headers["Retry-After"])
            body = self._read_capped(response, full_url, started)
        return status, retry_after, body

    def _read_capped(self, response: requests.Response, full_url: str, started: float) -> bytes:
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            raise HarvestError(
                f"response of {declared} bytes exceeds the {self.max_bytes}-byte cap", url=full_url
            )
        parts: list[bytes] = []
        size = 0
        for part in response.iter_content(chunk_size=64 * 1024):
            size += len(part)
            if size > self.max_bytes:
                raise HarvestError(f"response exceeds the {self.max_bytes}-byte cap", url=full_url)
            if time.monotonic() - started > self.timeout:
                raise _TooSlow(f"response took longer than {self.timeout:g} s")
            parts.append(part)
        return b"".join(parts)


def retry_after_seconds(value: str) -> float | None:
    """Seconds a ``Retry-After`` header asks for (delta-seconds or an HTTP date), None when
    unreadable (then the transport's own backoff applies)."""
    try:
        return Retry().parse_retry_after(value)
    except InvalidHeader:
        return None
