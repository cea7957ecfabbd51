"""Drill: Redis hangs (SIGSTOP) under load; pages keep answering at about their no-cache speed.

A hung Redis accepts connections (the kernel does) and never answers, so every cache call
would wait for its socket timeout. The drill starts its own ``redis-server`` on a free port
(``--save "" --appendonly no``; the shared Redis on 6379 is never touched) as the cache, loads
the reference topic page into the drill database (``test_<name>_drill`` of ``DATABASE_URL``,
as the worker drills) and serves it with gunicorn (``topicsite.settings.local``, DEBUG off,
``REDIS_CACHE_BREAKER_SECONDS`` short). Client threads request the topics index, the reference
topic page, a paper page and ``/api/v1/papers/`` without pause through four phases:

1. **up**: Redis answers (the page cache serves hits);
2. **hung**: ``SIGSTOP``;
3. **resumed**: ``SIGCONT``; once the breaker's time is up the cache is used again;
4. **down**: Redis killed (connections refused): the no-cache reference.

PASS: every request answered 200; while hung, the median request took at most twice the
no-cache median plus 0.1 s, and at most ``workers x clients x (phase // breaker + 1)``
requests, and fewer than half, were slower than the slowest no-cache one plus 0.1 s (each
process's one trial call per breaker period waits a socket timeout, 0.25 s, and delays at
most the clients queued behind it; a 95th percentile cannot say this at smoke size, where
the two trials are 5% of the requests); page-cache hits again in the resumed phase's second
half.

Run: ``DATABASE_URL=postgres://postgres@127.0.0.1:5432/<db> .venv/bin/python
drills/redis_hang.py [--clients 4 --workers 2 --seconds 10] [--smoke]``. ``--smoke`` (what CI
runs): 2 client threads, 1 gunicorn worker, 4 s a phase (twice the breaker time at least);
the same checks.
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from drills.common import database_url, django_setup, free_port, gunicorn_start, report  # noqa: E402

BREAKER_SECONDS = 2
PHASES = ("up", "hung", "resumed", "down")


class OwnRedis:
    """``redis-server`` on a free local port, without persistence, in a temporary directory."""

    def __init__(self):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="topicsite-redis-drill-")
        self.url = f"redis://127.0.0.1:{self.port}/0"
        server = shutil.which("redis-server") or "/usr/bin/redis-server"
        self.process = subprocess.Popen(
            [server, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
            + ["--appendonly", "no", "--dir", self.dir],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        import redis

        client = redis.Redis.from_url(self.url, socket_timeout=1)
        for _ in range(100):
            try:
                if client.ping():
                    return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise SystemExit(f"redis-server on port {self.port} did not start")

    def signal(self, number: int) -> None:
        self.process.send_signal(number)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)


def load_site() -> list[str]:
    """The drill database emptied and given the categories and the reference topic page; the
    paths the clients request."""
    from django.core.management import call_command

    from papers.models import Paper

    call_command("flush", interactive=False, verbosity=0)
    call_command("load_categories", verbosity=0)
    call_command("import_reference_page", verbosity=0)
    paper = Paper.objects.order_by("-submitted", "-id").first()
    return ["/topics/", "/topics/llm-agent-training/", paper.get_absolute_url(), "/api/v1/papers/"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=10, help="length of each phase")
    parser.add_argument("--smoke", action="store_true", help="a short run (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.clients, args.workers, args.seconds = 2, 1, 3
    args.seconds = max(args.seconds, 2 * BREAKER_SECONDS)

    own = OwnRedis()
    gunicorn = None
    try:
        os.environ["REDIS_URL"] = own.url  # the drill's Django too: nothing on the shared Redis
        django_setup()
        paths = load_site()
        env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
        env |= {
            "DATABASE_URL": database_url(),
            "REDIS_URL": own.url,
            "DJANGO_SETTINGS_MODULE": "topicsite.settings.local",
            "DJANGO_DEBUG": "false",
            "REDIS_CACHE_BREAKER_SECONDS": str(BREAKER_SECONDS),
            # The load comes from one address: the API's per-address limit must not answer it.
            "API_THROTTLE_ANON": "1000000/min",
        }
        gunicorn, base = gunicorn_start(env=env, workers=args.workers, first_path=paths[0])

        # (phase, seconds into the phase, request seconds, outcome, X-Page-Cache)
        results: list[tuple[str, float, float, str, str]] = []
        phase = {"name": "up", "began": time.monotonic()}
        lock = threading.Lock()
        stop = threading.Event()

        def client(number: int) -> None:
            i = number
            while not stop.is_set():
                path = paths[i % len(paths)]
                url = base + path
                i += 1
                name, began = phase["name"], phase["began"]
                started = time.monotonic()
                page_cache = ""
                try:
                    with urllib.request.urlopen(url, timeout=30) as response:
                        response.read()
                        outcome = str(response.status)
                        page_cache = response.headers.get("X-Page-Cache", "")
                except urllib.error.HTTPError as error:
                    outcome = str(error.code)
                except (OSError, http.client.HTTPException) as error:
                    outcome = type(error).__name__
                if outcome != "200":
                    outcome = f"{outcome} {path}"
                ended = time.monotonic()
                with lock:
                    results.append((name, started - began, ended - started, outcome, page_cache))

        threads = [threading.Thread(target=client, args=(n,)) for n in range(args.clients)]
        for thread in threads:
            thread.start()
        actions = {"hung": signal.SIGSTOP, "resumed": signal.SIGCONT}
        for name in PHASES:
            if name in actions:
                own.signal(actions[name])
            elif name == "down":
                own.kill()
            phase.update(name=name, began=time.monotonic())
            time.sleep(args.seconds)
        stop.set()
        for thread in threads:
            thread.join()

        def of(name):
            return [r for r in results if r[0] == name]

        def seconds(rows):
            times = sorted(r[2] for r in rows)
            if not times:
                return None
            p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
            return (statistics.median(times), p95, times[-1])

        figures = {
            "own redis port / gunicorn workers / client threads / phase s": (
                f"{own.port} / {args.workers} / {args.clients} / {args.seconds}"
            ),
            "breaker s (REDIS_CACHE_BREAKER_SECONDS)": BREAKER_SECONDS,
        }
        for name in PHASES:
            rows = of(name)
            median, p95, worst = seconds(rows) or (0, 0, 0)
            errors = sum(r[3] != "200" for r in rows)
            hits = sum(r[4] == "hit" for r in rows)
            figures[f"{name}: requests / errors / page-cache hits"] = (
                f"{len(rows)} / {errors} / {hits}"
            )
            figures[f"{name}: median / p95 / max s"] = f"{median:.3f} / {p95:.3f} / {worst:.3f}"
        hung, down = seconds(of("hung")), seconds(of("down"))
        late_hits = [r for r in of("resumed") if r[1] >= args.seconds / 2 and r[4] == "hit"]
        # A request that waited on the hung Redis: slower than any with Redis refused, by more
        # than scheduling noise. Each process makes one trial call per breaker period, and the
        # trial delays at most the requests of every client queued behind it; without the
        # breaker every request would wait, several times.
        slowest_down = down[2] if down else 0.0
        waited = sum(r[2] > slowest_down + 0.1 for r in of("hung"))
        # ...and never most requests (without the breaker, all of them wait).
        may_wait = min(
            args.workers * args.clients * (int(args.seconds // BREAKER_SECONDS) + 1),
            len(of("hung")) // 2,
        )
        figures["hung: requests slower than any with Redis down / allowed"] = (
            f"{waited} / {may_wait}"
        )
        checks = {
            "every answer 200": bool(results) and all(r[3] == "200" for r in results),
            "hung near no-cache speed": bool(hung and down) and hung[0] <= 2 * down[0] + 0.1,
            "waits on the hung Redis only the breaker's trials": bool(hung and down)
            and waited <= may_wait,
            "cache used again after resume": bool(late_hits),
        }
        failures = sorted({r[3] for r in results if r[3] != "200"})
        figures["answers other than 200"] = failures or "none"
        figures["checks"] = checks
        passed = all(checks.values())
        report("redis_hang", passed, figures)
        return 0 if passed else 1
    finally:
        if gunicorn is not None and gunicorn.poll() is None:
            os.killpg(gunicorn.pid, signal.SIGTERM)
            gunicorn.wait(timeout=30)
        own.kill()


if __name__ == "__main__":
    sys.exit(main())
