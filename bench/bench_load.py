"""Topic pages per second from gunicorn on loopback, under a load generator, with and without
the Redis cache.

    .venv/bin/python bench/bench_load.py [--seconds 20] [--clients 8] [--workers 3]
        [--database-url postgres://postgres@127.0.0.1:5432/topicsite_bench_corpus]
        [--redis-url redis://127.0.0.1:6379/3] [--modes uncached,cached] [--topics 40]

For each mode the script starts gunicorn (``--workers`` sync workers, ``topicsite.wsgi``) on a
free loopback port against the corpus database, with settings written to a temporary module:
``topicsite.settings.local`` with DEBUG off and the cache either Django's DummyCache
(``uncached``: every request computes everything) or Redis (``cached``: ``--redis-url``,
flushed before the run). It waits until the server answers, warms every URL once, then
``--clients`` processes each keep one HTTP/1.1 keep-alive connection (``http.client``) and
request topic pages round robin, from a list of ``--topics`` active topics (leaves and parents
alike, the largest first), for ``--seconds``. Printed per mode: requests, requests per second,
median and p95 latency in ms, and errors (any status but 200, or a broken connection).

Not part of the tests or CI. Needs the corpus database (and Redis for ``cached``).
"""

from __future__ import annotations

import argparse
import http.client
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/topicsite_bench_corpus"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/3"

SETTINGS = """\
from topicsite.settings.local import *  # noqa: F401,F403

DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
{caches}
"""
DUMMY_CACHE = 'CACHES = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}'


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def topic_urls(database_url: str, count: int) -> list[str]:
    """The ``count`` active topics with the most assignments (subtrees not summed), as URLs."""
    import psycopg

    with psycopg.connect(database_url.replace("postgres://", "postgresql://", 1)) as conn:
        rows = conn.execute(
            "SELECT t.slug FROM topics_topic t JOIN topics_assignment a ON a.topic_id = t.id"
            " WHERE t.active GROUP BY t.id, t.slug ORDER BY count(*) DESC, t.id LIMIT %s",
            [count],
        ).fetchall()
    return [f"/topics/{slug}/" for (slug,) in rows]


def client(port: int, urls: list[str], offset: int, deadline: float, queue) -> None:
    """One keep-alive connection requesting ``urls`` round robin until ``deadline``; puts
    ``(latencies in ms, errors)`` on ``queue``."""
    latencies, errors = [], 0
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    i = offset
    while time.time() < deadline:
        url = urls[i % len(urls)]
        i += 1
        started = time.perf_counter()
        try:
            conn.request("GET", url)
            response = conn.getresponse()
            response.read()
            if response.status != 200:
                errors += 1
                continue
        except (OSError, http.client.HTTPException):
            errors += 1
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            continue
        latencies.append((time.perf_counter() - started) * 1000)
    conn.close()
    queue.put((latencies, errors))


def wait_until_up(port: int, url: str, seconds: float = 60) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", url)
            conn.getresponse().read()
            return
        except OSError:
            time.sleep(0.3)
    raise SystemExit(f"gunicorn did not answer on port {port} within {seconds:g} s")


def run_mode(mode: str, options, urls: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        if mode == "cached":
            caches = ""  # the REDIS_URL given below: django-redis, as in production
        else:
            caches = DUMMY_CACHE
        Path(tmp, "bench_load_settings.py").write_text(SETTINGS.format(caches=caches))
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([tmp, str(ROOT)]),
            "DJANGO_SETTINGS_MODULE": "bench_load_settings",
            "DATABASE_URL": options.database_url,
            "DJANGO_CONN_MAX_AGE": "600",
        }
        env.pop("REDIS_URL", None)
        if mode == "cached":
            env["REDIS_URL"] = options.redis_url
            import redis

            redis.Redis.from_url(options.redis_url).flushdb()
        port = free_port()
        server = subprocess.Popen(
            [
                str(ROOT / ".venv/bin/gunicorn"),
                "topicsite.wsgi",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                str(options.workers),
                "--keep-alive",
                "30",
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=env,
        )
        try:
            wait_until_up(port, urls[0])
            for url in urls:  # warm-up: connections, templates and, when cached, the cache
                wait_until_up(port, url)
            queue = multiprocessing.Queue()
            deadline = time.time() + options.seconds
            started = time.time()
            procs = [
                multiprocessing.Process(target=client, args=(port, urls, n * 7, deadline, queue))
                for n in range(options.clients)
            ]
            for proc in procs:
                proc.start()
            results = [queue.get() for _ in procs]
            for proc in procs:
                proc.join()
            elapsed = time.time() - started
        finally:
            server.terminate()
            server.wait(timeout=30)
    latencies = sorted(ms for result in results for ms in result[0])
    errors = sum(result[1] for result in results)
    p95 = latencies[min(len(latencies) - 1, round(0.95 * (len(latencies) - 1)))] if latencies else 0
    return {
        "mode": mode,
        "requests": len(latencies),
        "rps": len(latencies) / elapsed,
        "median": statistics.median(latencies) if latencies else 0.0,
        "p95": p95,
        "errors": errors,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=DEFAULT_DATABASE_URL)
    parser.add_argument("--redis-url", default=DEFAULT_REDIS_URL)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--topics", type=int, default=40)
    parser.add_argument("--modes", default="uncached,cached")
    options = parser.parse_args()
    urls = topic_urls(options.database_url, options.topics)
    if not urls:
        raise SystemExit("no active topics with papers in the database")
    print(
        f"{len(urls)} topic pages; gunicorn {options.workers} sync workers; "
        f"{options.clients} keep-alive clients; {options.seconds:g} s per mode; "
        f"load average {os.getloadavg()[0]:.1f}\n"
    )
    header = (
        f"{'mode':<10} {'requests':>9} {'req/s':>8} {'median ms':>10} {'p95 ms':>8} {'errors':>7}"
    )
    print(header)
    print("-" * len(header))
    for mode in options.modes.split(","):
        if mode not in ("uncached", "cached"):
            raise SystemExit(f"unknown mode {mode!r}; use uncached and/or cached")
        r = run_mode(mode, options, urls)
        print(
            f"{r['mode']:<10} {r['requests']:>9} {r['rps']:>8.0f} {r['median']:>10.1f} "
            f"{r['p95']:>8.1f} {r['errors']:>7}"
        )
        sys.stdout.flush()


if __name__ == "__main__":
    main()
