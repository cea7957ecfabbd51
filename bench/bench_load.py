"""Topic pages per second from gunicorn on loopback, under a load generator (``wrk``), with no
cache, with the fragment caches only, and with the whole-page cache.

    .venv/bin/python bench/bench_load.py [--seconds 15] [--connections 8] [--workers 2]
        [--worker-class gthread|sync] [--threads 2] [--generator wrk|python]
        [--modes uncached,fragments,cached] [--topics 40]
        [--database-url postgres://postgres@127.0.0.1:5432/topicsite_bench_corpus]
        [--redis-url redis://127.0.0.1:6379/3] [--smoke]

The load generator is ``wrk`` (``apt-get install wrk``; ``/usr/bin/wrk``, or ``--wrk PATH``):
one thread (``-t1``), ``--connections`` keep-alive connections, ``--seconds`` long, and a Lua
script (written to a temporary file) that requests the topic URLs round robin, counts every
response whose status is not 200 as an error, tallies the ``X-Page-Cache`` header
(``hit``/``miss``/``bypass``) and prints the counts and latency percentiles as one line of
JSON from its ``done`` callback. wrk is written in C: about 0.07 ms of CPU per 68 KB topic
page, against about 0.2 ms for ``--generator python``, the older generator kept as a fallback
(``--connections`` processes, each one ``http.client`` keep-alive connection), which takes
that CPU from the server it measures.

The defaults (2 ``gthread`` workers x 2 threads, 8 connections) did as well as any other
setting tried on the 2-core machine (3 sync workers; 3 x 2 threads with 12 connections): a
cached page costs gunicorn about 1 ms of CPU whatever the worker class, so the figure is
what the server is left of the 2 cores; gthread also keeps connections alive. Each worker
takes at most its share of the connections (``--worker-connections``, connections /
workers rounded up): left to race for them, one worker could take all of them when wrk
connected, and that mode then ran on about 1.2 cores instead of 1.8 (bench/README.md,
"Issue 19, thirteenth session").

For each mode the script starts gunicorn (``topicsite.wsgi``; ``--workers`` workers of
``--worker-class``, ``--threads`` threads each for ``gthread``; no access log, log level
warning) on a free loopback port against the corpus database, with settings written to a
temporary module: ``topicsite.settings.local`` with DEBUG off, and

- ``uncached``: Django's DummyCache, every request computes everything;
- ``fragments``: what signed-in readers get: every request carries the session and CSRF
  cookies of a reader signed in (``bench-load-reader``, following the first topic; a session
  made in the corpus database before the run), Redis (``--redis-url``, that db flushed
  first) with the card and index caches and the signed-in readers' shared pages whose
  personal holes are filled per request (``topicsite.holes``), ``PAGE_CACHE_SECONDS = 0``;
  ``hits`` counts their shared copies;
- ``cached``: Redis with the site's whole-page cache (``PAGE_CACHE_SECONDS`` as configured,
  60 s by default): what anonymous readers get.

``uncached``, ``cached`` and ``bare`` requests carry no cookie.

- ``bare``: the ceiling (``bench/bare_django.py``): the same gunicorn and middleware
  serving, for each topic page, a prebuilt body of that page's size; no query, no template.
  The other modes' pages/s are printed as a share of it ("of bare"; the performance issue
  asks fragments >= 40% and cached >= 80%).

It waits until the server answers, requests every URL once (warming connections, templates
and the caches), then runs the load. Printed per mode: requests answered 200, those per
second, median and p95 latency in ms, errors (a status other than 200, or a connect, read,
write or timeout error), the share of ``X-Page-Cache: hit`` among the responses, and the CPU
seconds per second (100% = one core) used by gunicorn (master and workers) and by the load
generator over the run.

Needs the corpus database (and Redis for ``fragments`` and ``cached``). Exits with a message
if wrk is missing or gunicorn does not answer within 60 s.

``--smoke`` (what CI runs): the smoke corpus (``make_corpus.py --smoke``, built first if
missing), 5 topics, 1 worker, 2 connections, 1 s per mode, every mode under wrk and then
``cached`` under the Python generator; exits non-zero on any error, a mode that answered
nothing, or a ``cached`` run without a page-cache hit. It flushes ``--redis-url`` as a full
run does.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import make_corpus  # noqa: E402

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/topicsite_bench_corpus"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/3"
MODES = ("bare", "uncached", "fragments", "cached")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

SETTINGS = """\
from topicsite.settings.local import *  # noqa: F401,F403

DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
{caches}
{page_cache}
{urlconf}
"""
DUMMY_CACHE = 'CACHES = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}'

# The wrk script. URLS is filled in; one wrk thread, so the counters are that thread's globals,
# read by done() (which runs in its own Lua state) through the thread object.
WRK_SCRIPT = """\
local urls = {urls}
local threads = {{}}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  next_url = 0
  non200 = 0
  hit = 0
  miss = 0
  bypass = 0
end

local headers = {headers}

function request()
  next_url = next_url % #urls + 1
  return wrk.format("GET", urls[next_url], headers)
end

function response(status, headers, body)
  if status ~= 200 then
    non200 = non200 + 1
  end
  local cache = headers["X-Page-Cache"] or headers["x-page-cache"]
  if cache == "hit" then
    hit = hit + 1
  elseif cache == "miss" then
    miss = miss + 1
  elseif cache == "bypass" then
    bypass = bypass + 1
  end
end

function done(summary, latency, requests)
  local totals = {{non200 = 0, hit = 0, miss = 0, bypass = 0}}
  for _, thread in ipairs(threads) do
    for name, _ in pairs(totals) do
      totals[name] = totals[name] + thread:get(name)
    end
  end
  local e = summary.errors
  io.write(string.format(
    'WRK_RESULT {{"duration_us": %d, "requests": %d, "non200": %d, "connect": %d, "read": %d,'
    .. ' "write": %d, "timeout": %d, "hit": %d, "miss": %d, "bypass": %d,'
    .. ' "p50_us": %d, "p95_us": %d, "p99_us": %d, "max_us": %d}}\\n',
    summary.duration, summary.requests, totals.non200, e.connect, e.read, e.write, e.timeout,
    totals.hit, totals.miss, totals.bypass,
    latency:percentile(50), latency:percentile(95), latency:percentile(99), latency.max))
end
"""


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


READER_SCRIPT = """\
import django
django.setup()
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.sessions.backends.db import SessionStore
from django.middleware.csrf import _get_new_csrf_string
from follows.models import Follow
from topics.models import Topic

user, _ = get_user_model().objects.get_or_create(
    username="bench-load-reader", defaults={"email": "bench-load-reader@example.org"}
)
topic = Topic.objects.get(slug=SLUG)
Follow.objects.get_or_create(user=user, topic=topic, defaults={"kind": "topic"})
session = SessionStore()
session[SESSION_KEY] = str(user.pk)
session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
session[HASH_SESSION_KEY] = user.get_session_auth_hash()
session.create()
print(f"{settings.SESSION_COOKIE_NAME}={session.session_key}; "
      f"{settings.CSRF_COOKIE_NAME}={_get_new_csrf_string()}")
"""


def reader_cookie(database_url: str, slug: str) -> str:
    """The ``Cookie`` header of a reader signed in (``bench-load-reader``, following the
    topic ``slug``): a session stored in the corpus database by a child process with the
    settings gunicorn runs (``topicsite.settings.local``), and a CSRF cookie."""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "topicsite.settings.local",
        "DATABASE_URL": database_url,
    }
    env.pop("REDIS_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", READER_SCRIPT.replace("SLUG", json.dumps(slug))],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"could not sign a reader in:\n{done.stderr}")
    return done.stdout.strip().splitlines()[-1]


def process_tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by ``pid`` and its live children, from /proc;
    0.0 for a process that is gone."""
    total = 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except (OSError, IndexError, ValueError):
        return total
    return total + sum(process_tree_cpu(int(child)) for child in children)


def children_cpu() -> float:
    """CPU seconds used by this process's waited-for children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def python_client(
    port: int, urls: list[str], offset: int, deadline: float, queue, headers: dict
) -> None:
    """One keep-alive connection requesting ``urls`` round robin (with ``headers``) until
    ``deadline``; puts ``(latencies in ms, errors, {cache header value: count})`` on
    ``queue``."""
    latencies, errors, cache_states = [], 0, {}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    i = offset
    while time.time() < deadline:
        url = urls[i % len(urls)]
        i += 1
        started = time.perf_counter()
        try:
            conn.request("GET", url, headers=headers)
            response = conn.getresponse()
            response.read()
            state = response.getheader("X-Page-Cache", "")
            cache_states[state] = cache_states.get(state, 0) + 1
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
    queue.put((latencies, errors, cache_states))


def run_python(port: int, urls: list[str], options, headers: dict) -> dict:
    """The load from ``--connections`` Python processes; the result row's numbers."""
    queue = multiprocessing.Queue()
    deadline = time.time() + options.seconds
    started = time.time()
    procs = [
        multiprocessing.Process(
            target=python_client, args=(port, urls, n * 7, deadline, queue, headers)
        )
        for n in range(options.connections)
    ]
    for proc in procs:
        proc.start()
    results = [queue.get() for _ in procs]
    for proc in procs:
        proc.join()
    elapsed = time.time() - started
    latencies = sorted(ms for result in results for ms in result[0])
    states: dict[str, int] = {}
    for result in results:
        for state, n in result[2].items():
            states[state] = states.get(state, 0) + n
    p95 = latencies[min(len(latencies) - 1, round(0.95 * (len(latencies) - 1)))] if latencies else 0
    return {
        "requests": len(latencies),
        "rps": len(latencies) / elapsed,
        "median": statistics.median(latencies) if latencies else 0.0,
        "p95": p95,
        "errors": sum(result[1] for result in results),
        "hit": states.get("hit", 0),
        "responses": sum(states.values()),
    }


def run_wrk(port: int, urls: list[str], options, tmp: str, headers: dict) -> dict:
    """The load from one wrk thread; the result row's numbers. Exits if wrk fails."""
    script = Path(tmp, "bench_load.lua")
    lua_headers = "{" + ", ".join(
        f"[{json.dumps(k)}] = {json.dumps(v)}" for k, v in headers.items()
    )
    script.write_text(
        WRK_SCRIPT.format(
            urls="{" + ", ".join(json.dumps(u) for u in urls) + "}", headers=lua_headers + "}"
        )
    )
    command = [
        options.wrk,
        "-t1",
        f"-c{options.connections}",
        f"-d{options.seconds:g}s",
        "--timeout",
        "30s",
        "-s",
        str(script),
        f"http://127.0.0.1:{port}",
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("WRK_RESULT ")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"wrk failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    r = json.loads(lines[-1].removeprefix("WRK_RESULT "))
    ok = r["requests"] - r["non200"]
    return {
        "requests": ok,
        "rps": ok / (r["duration_us"] / 1e6),
        "median": r["p50_us"] / 1000,
        "p95": r["p95_us"] / 1000,
        "errors": r["non200"] + r["connect"] + r["read"] + r["write"] + r["timeout"],
        "hit": r["hit"],
        "responses": r["requests"],
    }


def wait_until_up(port: int, url: str, seconds: float = 60, headers: dict | None = None) -> int:
    """GET ``url`` until gunicorn answers (at most ``seconds``); the body's size in bytes."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", url, headers=headers or {})
            response = conn.getresponse()
            body = response.read()
            conn.close()  # not left holding one of a worker's connections
            if response.status != 200:
                raise SystemExit(f"GET {url}: {response.status}")
            return len(body)
        except OSError:
            time.sleep(0.3)
    raise SystemExit(f"gunicorn did not answer on port {port} within {seconds:g} s")


def run_mode(mode: str, generator: str, options, urls: list[str], cookie: str = "") -> dict:
    """Start gunicorn for ``mode``, warm it, load it with ``generator`` (``wrk`` or
    ``python``); the result row (see the module doc)."""
    headers = {"Cookie": cookie} if mode == "fragments" and cookie else {}
    with tempfile.TemporaryDirectory() as tmp:
        # "": django-redis from REDIS_URL
        caches = DUMMY_CACHE if mode in ("uncached", "bare") else ""
        page_cache = "" if mode == "cached" else "PAGE_CACHE_SECONDS = 0"
        # bare: the site's URLs plus bench/bare_django.py's prebuilt pages.
        urlconf = 'ROOT_URLCONF = "bare_django"' if mode == "bare" else ""
        Path(tmp, "bench_load_settings.py").write_text(
            SETTINGS.format(caches=caches, page_cache=page_cache, urlconf=urlconf)
        )
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([tmp, str(ROOT), str(ROOT / "bench")]),
            "DJANGO_SETTINGS_MODULE": "bench_load_settings",
            "DATABASE_URL": options.database_url,
            "DJANGO_CONN_MAX_AGE": "600",
        }
        env.pop("REDIS_URL", None)
        if mode not in ("uncached", "bare"):
            env["REDIS_URL"] = options.redis_url
            import redis

            redis.Redis.from_url(options.redis_url).flushdb()
        port = free_port()
        gunicorn = [
            str(ROOT / ".venv/bin/gunicorn"),
            "topicsite.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(options.workers),
            "--worker-class",
            options.worker_class,
            "--threads",
            str(options.threads),
            # Each worker holds its share of the load generator's keep-alive connections: left
            # to race for them, one gthread worker could take all eight at the start, and a
            # mode then ran on 1.2 cores instead of 1.8 (a run in two, any mode).
            "--worker-connections",
            str(-(-options.connections // options.workers)),
            "--keep-alive",
            "30",
            "--backlog",
            "2048",
            "--log-level",
            "warning",
        ]
        log = Path(tmp, "gunicorn.log")
        with log.open("w") as log_file:
            server = subprocess.Popen(
                gunicorn, cwd=ROOT, env=env, stdout=log_file, stderr=subprocess.STDOUT
            )
        try:
            sizes = [wait_until_up(port, url, headers=headers) for url in urls]  # up, then warm
            if mode == "bare":  # each topic page's size, prebuilt, in the same order
                urls = [f"/__bench__/bare/{size}/" for size in sizes]
                for url in urls:
                    wait_until_up(port, url)
            server_cpu, generator_cpu = process_tree_cpu(server.pid), children_cpu()
            started = time.time()
            if generator == "wrk":
                row = run_wrk(port, urls, options, tmp, headers)
            else:
                row = run_python(port, urls, options, headers)
            elapsed = time.time() - started
            row["server_cpu"] = (process_tree_cpu(server.pid) - server_cpu) / elapsed
            row["generator_cpu"] = (children_cpu() - generator_cpu) / elapsed
        finally:
            server.terminate()
            server.wait(timeout=30)
        log_lines = [line for line in log.read_text().splitlines() if line.strip()]
    if log_lines:
        print(f"  gunicorn ({mode}) logged {len(log_lines)} lines, the last: {log_lines[-1]}")
    return {"mode": mode, **row}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=None, help=f"default {DEFAULT_DATABASE_URL}")
    parser.add_argument("--redis-url", default=DEFAULT_REDIS_URL)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument(
        "--connections", "--clients", type=int, default=8, help="open connections (wrk -c)"
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--worker-class", default="gthread", choices=("gthread", "sync"))
    parser.add_argument("--threads", type=int, default=2, help="threads per gthread worker")
    parser.add_argument("--generator", default="wrk", choices=("wrk", "python"))
    parser.add_argument("--wrk", default=shutil.which("wrk") or "/usr/bin/wrk")
    parser.add_argument("--topics", type=int, default=40)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--smoke", action="store_true", help="1 s per mode on the smoke corpus")
    options = parser.parse_args()
    modes = options.modes.split(",")
    for mode in modes:
        if mode not in MODES:
            raise SystemExit(f"unknown mode {mode!r}; use {', '.join(MODES)}")
    runs = [(mode, options.generator) for mode in modes]
    if options.smoke:
        options.seconds, options.topics, options.connections, options.workers = 1, 5, 2, 1
        options.generator = "wrk"
        runs = [(mode, "wrk") for mode in MODES] + [("cached", "python")]
        options.database_url = options.database_url or make_corpus.smoke_corpus_url()
        make_corpus.smoke_corpus_ensure(options.database_url)
    options.database_url = options.database_url or DEFAULT_DATABASE_URL
    if options.generator == "wrk" and not Path(options.wrk).is_file():
        raise SystemExit(f"no wrk at {options.wrk}: apt-get install wrk, or --generator python")
    urls = topic_urls(options.database_url, options.topics)
    if not urls:
        raise SystemExit("no active topics with papers in the database")
    cookie = (
        reader_cookie(options.database_url, urls[0].split("/")[2]) if "fragments" in modes else ""
    )
    threads = f" x {options.threads} threads" if options.worker_class == "gthread" else ""
    print(
        f"{len(urls)} topic pages; gunicorn {options.workers} {options.worker_class} "
        f"workers{threads}; {options.generator} with {options.connections} connections; "
        f"{options.seconds:g} s per mode; load average {os.getloadavg()[0]:.1f}\n"
    )
    header = (
        f"{'mode':<17} {'requests':>9} {'req/s':>8} {'of bare':>8} {'median ms':>10} "
        f"{'p95 ms':>8} {'errors':>7} {'hits':>6} {'server CPU':>11} {'load gen CPU':>13}"
    )
    print(header)
    print("-" * len(header))
    failures = []
    ceiling = {}  # generator: the bare-Django pages/s under it
    for mode, generator in runs:
        r = run_mode(mode, generator, options, urls, cookie)
        hits = f"{100 * r['hit'] / r['responses']:.0f}%" if r["responses"] else "-"
        label = mode if generator == options.generator else f"{mode} ({generator})"
        if mode == "bare":
            ceiling[generator] = r["rps"]
        share = f"{100 * r['rps'] / ceiling[generator]:.0f}%" if ceiling.get(generator) else "-"
        print(
            f"{label:<17} {r['requests']:>9} {r['rps']:>8.0f} {share:>8} {r['median']:>10.1f} "
            f"{r['p95']:>8.1f} {r['errors']:>7} {hits:>6} {100 * r['server_cpu']:>10.0f}% "
            f"{100 * r['generator_cpu']:>12.0f}%"
        )
        sys.stdout.flush()
        if r["errors"] or not r["requests"] or (mode == "cached" and not r["hit"]):
            failures.append(label)
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")
    if ceiling:
        print(
            "of bare: pages/s as a share of bare Django's (bench/bare_django.py: a prebuilt "
            "body of each topic page's size through the same gunicorn and middleware); "
            "targets (issue 19): fragments >= 40%, cached >= 80%"
        )
    if options.smoke and failures:
        raise SystemExit(f"smoke: errors, no answers or no page-cache hits in: {failures}")


if __name__ == "__main__":
    main()
