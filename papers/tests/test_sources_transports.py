"""HttpTransport against a real local server serving recorded real bodies and the
network's faults (Retry-After, dropped connections, slow and oversized bodies), and the shared
request limiter across clients and processes."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest
import requests
from django.conf import settings as django_settings

from papers.sources.base import HarvestError
from papers.sources.oai import OaiPmhSource
from papers.sources.transports import RequestLimiter, redis_client

from .conftest import (
    ARXIV_RAW_PAGE,
    HEP_EX_PAGE,
    OAI_DC_PAGE,
)
from .httpserver import (
    Reply,
    page,
    transport,
)

pytestmark = pytest.mark.usefixtures("quick_limiter")


def test_http_sends_user_agent_and_parameters(server, settings):
    settings.ARXIV_USER_AGENT = "topicsite-test/1.0 (mailto:ops@example.org)"
    server.handler = lambda request: page(ARXIV_RAW_PAGE)
    source = OaiPmhSource(
        transport=transport(), base_url=server.url, resumption_token="496549|46001", max_pages=1
    )

    chunks = list(source.chunks())

    assert len(chunks) == 1 and len(chunks[0].records) == 1000
    assert chunks[0].resumption_token == "496549|47001"
    (request,) = server.requests
    assert request.path == "/oai"
    assert request.query == {"verb": "ListRecords", "resumptionToken": "496549|46001"}
    assert request.headers["User-Agent"] == "topicsite-test/1.0 (mailto:ops@example.org)"
    assert chunks[0].source.startswith(server.url)


def test_http_503_with_retry_after_waits_what_it_says(server, caplog):
    server.handler = lambda request: (
        Reply(status=503, headers={"Retry-After": "7"}, body=b"busy")
        if request.number == 1
        else page(OAI_DC_PAGE)
    )
    waits = []

    with caplog.at_level(logging.WARNING, logger="papers.sources.transports"):
        fetched = transport(retries=3, backoff_factor=5, sleep=waits.append).get(
            server.url, {"verb": "ListRecords", "metadataPrefix": "oai_dc"}
        )

    assert fetched.status == 200 and fetched.body == OAI_DC_PAGE.read_bytes()
    assert len(server.requests) == 2
    # Retry-After, not the backoff (which would be 5 s), decided the wait.
    assert waits == [7]
    assert "HTTP 503; retrying in 7 s (Retry-After)" in caplog.text


def test_http_429_is_retried_too(server):
    server.handler = lambda request: (
        Reply(status=429, headers={"Retry-After": "0"}, body=b"slow down")
        if request.number <= 2
        else page(OAI_DC_PAGE)
    )

    fetched = transport(retries=2).get(server.url, {"verb": "x"})

    assert fetched.status == 200 and len(server.requests) == 3


def test_http_persistent_503_fails_loudly_after_bounded_retries(server):
    server.handler = lambda request: Reply(status=503, body=b"busy")
    waits = []

    with pytest.raises(HarvestError) as raised:
        transport(retries=2, backoff_factor=1.5, sleep=waits.append).get(
            server.url, {"verb": "ListRecords", "set": "cs"}
        )

    assert len(server.requests) == 3
    # No Retry-After: exponential backoff.
    assert waits == [1.5, 3.0]
    assert raised.value.url == f"{server.url}?verb=ListRecords&set=cs"
    assert "gave up after 3 attempts; last: HTTP 503" in str(raised.value)
    assert str(raised.value).startswith(server.url)


def test_http_retry_after_longer_than_allowed_fails_at_once(server):
    server.handler = lambda request: Reply(status=503, headers={"Retry-After": "3600"})

    with pytest.raises(HarvestError, match="Retry-After 3600 s, more than the 300 s"):
        transport(retries=5, retry_after_max=300).get(server.url, {"verb": "x"})
    assert len(server.requests) == 1


def test_http_other_status_fails_without_retrying(server):
    server.handler = lambda request: Reply(status=404, body=b"not here")

    with pytest.raises(HarvestError, match="HTTP status 404"):
        transport(retries=3).get(server.url, {"verb": "x"})
    assert len(server.requests) == 1


def test_http_connection_refused_fails_loudly():
    # Bind and close a socket to get a port nobody listens on.
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/oai"

    with pytest.raises(HarvestError) as raised:
        transport(retries=1, timeout=2).get(url, {"verb": "Identify"})
    assert raised.value.url.startswith(url)
    assert isinstance(raised.value.__cause__, requests.ConnectionError)


def test_http_connection_dropped_mid_body_is_retried(server):
    body = OAI_DC_PAGE.read_bytes()
    server.handler = lambda request: (
        Reply(body=body, drop_after=len(body) // 3) if request.number == 1 else Reply(body=body)
    )

    fetched = transport(retries=1).get(server.url, {"verb": "x"})

    assert fetched.body == body and len(server.requests) == 2


def test_http_connection_always_dropped_fails_naming_the_cause(server):
    body = OAI_DC_PAGE.read_bytes()
    server.handler = lambda request: Reply(body=body, drop_after=100)

    with pytest.raises(HarvestError, match="gave up after 2 attempts; last: ChunkedEncodingError"):
        transport(retries=1).get(server.url, {"verb": "x"})


def test_http_response_slower_than_the_timeout_is_retried(server):
    server.handler = lambda request: (
        Reply(body=OAI_DC_PAGE.read_bytes(), delay=1.5)
        if request.number == 1
        else page(OAI_DC_PAGE)
    )

    fetched = transport(retries=1, timeout=0.5).get(server.url, {"verb": "x"})

    assert fetched.status == 200 and len(server.requests) == 2


def test_http_response_size_cap(server):
    server.handler = lambda request: page(ARXIV_RAW_PAGE)

    with pytest.raises(HarvestError, match="byte cap"):
        transport(retries=2, max_bytes=10_000).get(server.url, {"verb": "x"})
    # Not retried: the same answer would come back.
    assert len(server.requests) == 1


def test_every_attempt_waits_for_the_shared_limiter(server):
    server.handler = lambda request: (
        Reply(status=503, headers={"Retry-After": "0"})
        if request.number <= 2
        else page(HEP_EX_PAGE)
    )
    client = redis_client(django_settings.REDIS_URL)
    limiter_waits = []

    def wait_out_the_slot(seconds):
        # Stands in for the time passing: the slot's key expires.
        limiter_waits.append(seconds)
        client.delete(RequestLimiter.KEY)

    limiter = RequestLimiter(interval_ms=60_000, sleep=wait_out_the_slot)

    transport(retries=2, limiter=limiter, sleep=lambda seconds: None).get(server.url, {"v": "x"})

    # Three attempts: the first took the free slot, each retry had to wait for the next one.
    assert len(server.requests) == 3
    assert len(limiter_waits) == 2
    assert all(50 < seconds <= 60 for seconds in limiter_waits)


def test_limiter_gives_one_slot_per_interval_across_clients(settings):
    first = RequestLimiter(interval_ms=30_000)
    second = RequestLimiter(interval_ms=30_000)

    assert first.try_acquire()
    assert not second.try_acquire()
    assert not first.try_acquire()
    # The slot lives in Redis for the interval, whoever asks.
    remaining = redis_client(settings.REDIS_URL).pttl(RequestLimiter.KEY)
    assert 25_000 < remaining <= 30_000


def test_limiter_slot_is_shared_with_other_processes(settings):
    RequestLimiter(interval_ms=30_000).wait()
    script = (
        "import django; django.setup();"
        "from papers.sources.transports import RequestLimiter;"
        "print(RequestLimiter(interval_ms=30000).try_acquire())"
    )
    env = {
        "DJANGO_SETTINGS_MODULE": "topicsite.settings.test",
        "REDIS_URL": settings.REDIS_URL,
        "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/unused",
        "PATH": "/usr/bin:/bin",
    }

    other = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        cwd=django_settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert other.returncode == 0, other.stderr
    # This process holds the slot: the other one does not get it.
    assert other.stdout.strip() == "False"


def test_limiter_wait_sleeps_until_the_slot_frees(settings):
    client = redis_client(settings.REDIS_URL)
    slept = []

    def sleep(seconds):
        slept.append(seconds)
        client.delete(RequestLimiter.KEY)

    limiter = RequestLimiter(interval_ms=10_000, sleep=sleep)

    assert limiter.wait() == 0
    waited = limiter.wait()

    assert len(slept) == 1 and 9 < slept[0] <= 10 and waited == slept[0]


def test_limiter_without_redis_uses_the_local_cache(settings):
    redis_url = settings.REDIS_URL
    settings.REDIS_URL = None
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

    assert RequestLimiter(interval_ms=30_000).try_acquire()
    assert not RequestLimiter(interval_ms=30_000).try_acquire()
    assert not redis_client(redis_url).exists(RequestLimiter.KEY)


def test_limiter_interval_zero_is_off_and_negative_is_refused():
    assert all(RequestLimiter(interval_ms=0).try_acquire() for _ in range(3))
    with pytest.raises(ValueError, match="interval_ms must be >= 0"):
        RequestLimiter(interval_ms=-1)
