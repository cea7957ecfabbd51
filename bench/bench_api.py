"""Benchmark the read API at 100,000+ papers: latency per endpoint and requests/s under load.

    .venv/bin/python bench/bench_api.py [--papers 100000] [--requests 60] [--seconds 15]
        [--clients 8] [--workers 2] [--reuse] [--keep] [--smoke]
        [--database-url postgres://postgres@127.0.0.1:5432/topicsite_bench_api]

1. Data (skipped with ``--reuse`` when the database already holds enough papers): a fresh
   database with migrations and categories; ``--papers`` real records resampled under
   identifiers that cannot be real (``bench_snapshot_import.write_input``: YYMM 1501-2012,
   numbers from 50000), imported by ``manage.py import_snapshot --no-tag``; the reference
   page's 59 topics and 30 papers (``import_reference_page``); then every generated paper
   assigned (accepted) to one topic by ``id % topics`` in one ``INSERT … SELECT``, so each
   topic holds about 1,700 papers and a parent its children's too. ``VACUUM ANALYZE``.
2. In-process latency (Django test client, no network), ``--requests`` timed requests per
   endpoint after 3 untimed ones: median and p95 in milliseconds.
3. Load: gunicorn (``--workers`` sync workers) on a free loopback port, ``--clients`` client
   processes each sending a mix (list, detail, topic papers, filtered list, search) over one
   keep-alive ``http.client`` connection for ``--seconds``; requests/s and latency under
   load. Throttling is raised for the run (``API_THROTTLE_*``).

Prints tables and the load average. ``--smoke`` (what CI runs): 300 papers, 2 timed requests
per endpoint, 2 clients on 1 worker for 1 s, on a database of its own (``bench/smoke.py``,
dropped at the end); exits non-zero on any answer other than 200.
"""

from __future__ import annotations

import argparse
import http.client
import multiprocessing
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_snapshot_import as corpus  # noqa: E402
from smoke import smoke_database_url  # noqa: E402

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/topicsite_bench_api"
THROTTLE_OFF = {"API_THROTTLE_ANON": "1000000/min", "API_THROTTLE_USER": "1000000/min"}
PAPERS_OR = "/api/v1/papers/?category=cs.LG|cs.CL"
SEARCH_WORDS = ["quantum", "neural network", "black hole", "graph", "spin", "galaxy", "entropy"]


def manage(url: str, *args: str) -> None:
    environment = {**os.environ, "DATABASE_URL": url}
    environment.pop("REDIS_URL", None)
    subprocess.run([corpus.PYTHON, corpus.MANAGE, *args], env=environment, check=True)


def paper_count(url: str) -> int:
    try:
        with corpus.psycopg.connect(url) as connection:
            return connection.execute("SELECT count(*) FROM papers_paper").fetchone()[0]
    except corpus.psycopg.Error:
        return 0


def build(url: str, papers: int) -> None:
    corpus.recreate_database(url)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "papers.jsonl"
        corpus.write_input(path, papers, fresh_authors=False)
        result = corpus.run_import(url, path, 5000)
    print(f"imported {result['papers']:,.0f} papers at {result['rate']:,.0f} papers/s")
    manage(url, "import_reference_page")
    with corpus.psycopg.connect(url, autocommit=True) as connection:
        topics = [row[0] for row in connection.execute("SELECT id FROM topics_topic ORDER BY id")]
        connection.execute(
            """
            INSERT INTO topics_assignment
                (paper_id, topic_id, source, state, score, created_at, updated_at)
            SELECT p.id, (%s::bigint[])[1 + p.id %% %s], 'rule', 'accepted', 1.0, now(), now()
            FROM papers_paper p WHERE p.import_key IS NULL
            ON CONFLICT DO NOTHING
            """,
            (topics, len(topics)),
        )
        connection.execute("VACUUM ANALYZE")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def in_process(url: str, requests: int) -> list[tuple[str, float, float, int]]:
    os.environ.update({"DATABASE_URL": url, "DJANGO_DEBUG": "false", **THROTTLE_OFF})
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "topicsite.settings.local")
    import django

    django.setup()
    from django.core.cache import cache
    from django.test import Client

    from papers.models import Author, Paper
    from topics.models import Topic

    client = Client(HTTP_HOST="127.0.0.1")
    rng = random.Random(1)
    arxiv_ids = list(
        Paper.objects.filter(arxiv_id__isnull=False).values_list("arxiv_id", flat=True)[:5000]
    )
    parent = Topic.objects.filter(children__isnull=False).values_list("slug", flat=True).first()
    leaf = Topic.objects.filter(children__isnull=True).values_list("slug", flat=True).first()
    author_ids = list(Author.objects.values_list("pk", flat=True)[:5000])
    new_style = [a for a in arxiv_ids if "/" not in a] or arxiv_ids

    def arxiv_id() -> str:
        return rng.choice(new_style)

    list_page = client.get("/api/v1/papers/?page_size=25").json()
    deep = client.get(list_page["next"]).json()["next"]
    cases = [
        ("papers/ (25)", lambda: "/api/v1/papers/"),
        ("papers/ (100)", lambda: "/api/v1/papers/?page_size=100"),
        ("papers/ page 3 (cursor)", lambda: deep),
        ("papers/{id}/", lambda: f"/api/v1/papers/{rng.choice(arxiv_ids)}/"),
        (
            "papers/?category&submitted_after",
            lambda: "/api/v1/papers/?category=cs.LG&submitted_after=2018-01-01",
        ),
        (
            "papers/?primary_category&submitted_after",
            lambda: "/api/v1/papers/?primary_category=cs.LG&submitted_after=2018-01-01",
        ),
        ("papers/?author=", lambda: "/api/v1/papers/?author=smith"),
        ("papers/?affiliation=", lambda: "/api/v1/papers/?affiliation=university"),
        (f"topics/{parent}/papers/ (subtree)", lambda: f"/api/v1/topics/{parent}/papers/"),
        (f"topics/{leaf}/papers/", lambda: f"/api/v1/topics/{leaf}/papers/"),
        (f"topics/{parent}/ (momentum)", lambda: f"/api/v1/topics/{parent}/"),
        (f"topics/{parent}/trend/?weeks=52", lambda: f"/api/v1/topics/{parent}/trend/?weeks=52"),
        ("search/?q=", lambda: f"/api/v1/search/?q={rng.choice(SEARCH_WORDS)}"),
        ("search/?q=model (common word)", lambda: "/api/v1/search/?q=model"),
        ("papers/?q= (filter)", lambda: f"/api/v1/papers/?q={rng.choice(SEARCH_WORDS)}"),
        # Issue 18: facets and counts, OpenAlex's OR / NOT / comparison filters, the new
        # resources.
        # Filtered facets are cached (api.facets): "(cold)" rows empty the cache before each
        # request. Unfiltered ones read stored counts (api.facet_counts), cache or not.
        (
            "papers/?group_by=primary_category (cold)",
            lambda: "/api/v1/papers/?group_by=primary_category",
        ),
        ("papers/?group_by=primary_category", lambda: "/api/v1/papers/?group_by=primary_category"),
        ("papers/?group_by=submitted_year", lambda: "/api/v1/papers/?group_by=submitted_year"),
        ("papers/?group_by=author (cold)", lambda: "/api/v1/papers/?group_by=author"),
        ("papers/?group_by=author", lambda: "/api/v1/papers/?group_by=author"),
        (
            f"topics/{parent}/papers/?group_by=topic",
            lambda: f"/api/v1/topics/{parent}/papers/?group_by=topic",
        ),
        ("papers/?category=a|b&submitted=>", lambda: PAPERS_OR + "&submitted=>2018-01-01"),
        ("papers/?category=!a", lambda: "/api/v1/papers/?category=!cs.LG"),
        ("papers/doi/<arXiv DOI>/", lambda: f"/api/v1/papers/doi/10.48550/arXiv.{arxiv_id()}/"),
        ("trends/?q=", lambda: f"/api/v1/trends/?q={rng.choice(SEARCH_WORDS)}"),
        ("topics/?sort=rising", lambda: "/api/v1/topics/?sort=rising"),
        ("authors/{id}/", lambda: f"/api/v1/authors/{rng.choice(author_ids)}/"),
        ("authors/{id}/papers/", lambda: f"/api/v1/authors/{rng.choice(author_ids)}/papers/"),
    ]
    rows = []
    for name, make_url in cases:
        for _ in range(3):
            client.get(make_url())
        timings = []
        for _ in range(requests):
            target = make_url()
            if name.endswith("(cold)"):
                cache.clear()
            started = time.perf_counter()
            response = client.get(target)
            timings.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200, (target, response.status_code)
        rows.append((name, statistics.median(timings), percentile(timings, 0.95), requests))
    return rows


def bulk_export() -> dict:
    """Stream the whole ``/api/v1/papers.jsonl`` once, in process (after :func:`in_process`
    set Django up): papers, seconds, papers/s and the first line's delay in ms."""
    from django.test import Client

    client = Client(HTTP_HOST="127.0.0.1")
    started = time.perf_counter()
    response = client.get("/api/v1/papers.jsonl")
    assert response.status_code == 200, response.status_code
    first_line_ms = None
    papers = 0
    for piece in response.streaming_content:
        if first_line_ms is None:
            first_line_ms = (time.perf_counter() - started) * 1000
        papers += piece.count(b"\n")
    seconds = time.perf_counter() - started
    return {
        "papers": papers,
        "seconds": seconds,
        "rate": papers / seconds if seconds else 0.0,
        "first_line_ms": first_line_ms or 0.0,
    }


def _client(port: int, paths: list[str], seconds: float, results) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    rng = random.Random(os.getpid())
    timings, errors = [], 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        started = time.perf_counter()
        connection.request("GET", rng.choice(paths))
        response = connection.getresponse()
        response.read()
        timings.append((time.perf_counter() - started) * 1000)
        if response.status != 200:
            errors += 1
    results.put((timings, errors))


def load(url: str, *, seconds: float, clients: int, workers: int) -> dict:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    environment = {**os.environ, "DATABASE_URL": url, "DJANGO_DEBUG": "false", **THROTTLE_OFF}
    environment.pop("REDIS_URL", None)
    server = subprocess.Popen(
        [
            str(Path(corpus.PYTHON).parent / "gunicorn"),
            "topicsite.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=environment,
    )
    try:
        for _ in range(60):
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                connection.request("GET", "/api/v1/papers/?page_size=1")
                body = connection.getresponse().read()
                break
            except OSError:
                time.sleep(0.5)
        else:
            raise SystemExit("gunicorn did not answer")
        import json

        first = json.loads(body)["results"][0]["id"]
        paths = [
            "/api/v1/papers/",
            f"/api/v1/papers/{first}/",
            "/api/v1/papers/?category=cs.LG&submitted_after=2018-01-01",
            "/api/v1/topics/llm-agent-training/papers/",
            "/api/v1/search/?q=quantum",
        ]
        results = multiprocessing.Queue()
        processes = [
            multiprocessing.Process(target=_client, args=(port, paths, seconds, results))
            for _ in range(clients)
        ]
        started = time.monotonic()
        for process in processes:
            process.start()
        collected = [results.get() for _ in processes]
        elapsed = time.monotonic() - started
        for process in processes:
            process.join()
    finally:
        server.terminate()
        server.wait(timeout=30)
    timings = [t for chunk, _ in collected for t in chunk]
    return {
        "requests": len(timings),
        "errors": sum(e for _, e in collected),
        "rps": len(timings) / elapsed,
        "median": statistics.median(timings),
        "p95": percentile(timings, 0.95),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--reuse", action="store_true", help="keep a database already built")
    parser.add_argument("--keep", action="store_true", help="keep the database at the end")
    parser.add_argument("--database-url", default=None, help=f"default {DEFAULT_URL}")
    parser.add_argument("--smoke", action="store_true", help="a tiny run on its own database (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.papers, args.requests, args.seconds, args.clients, args.workers = 300, 2, 1, 2, 1
    url = args.database_url or (
        smoke_database_url(DEFAULT_URL, "api") if args.smoke else DEFAULT_URL
    )
    if not (args.reuse and paper_count(url) >= args.papers):
        build(url, args.papers)
    print(f"papers in the database: {paper_count(url):,}; load average {os.getloadavg()[0]:.2f}")
    try:
        rows = in_process(url, args.requests)
        print(f"\nIn-process latency, ms ({args.requests} requests each)")
        print(f"| {'endpoint':<42} | median |    p95 |")
        print(f"|{'-' * 44}|-------:|-------:|")
        for name, median, p95, _ in rows:
            print(f"| {name:<42} | {median:6.1f} | {p95:6.1f} |")
        export = bulk_export()
        print(
            f"\nBulk export (papers.jsonl, whole corpus, in process): {export['papers']:,} "
            f"papers in {export['seconds']:.1f} s, {export['rate']:,.0f} papers/s, first line "
            f"after {export['first_line_ms']:.1f} ms"
        )
        if export["papers"] != paper_count(url):
            raise SystemExit(f"bulk export gave {export['papers']:,} papers")
        figures = load(url, seconds=args.seconds, clients=args.clients, workers=args.workers)
        print(
            f"\nLoad: gunicorn {args.workers} workers, {args.clients} client processes, "
            f"{args.seconds:.0f} s, mixed reads"
        )
        print(
            f"{figures['requests']:,} requests, {figures['errors']} non-200, "
            f"{figures['rps']:.1f} requests/s, median {figures['median']:.1f} ms, "
            f"p95 {figures['p95']:.1f} ms; load average {os.getloadavg()[0]:.2f}"
        )
        if args.smoke and (figures["errors"] or not figures["requests"]):
            raise SystemExit(f"smoke: {figures['errors']} answers other than 200 under load")
    finally:
        if not args.keep:
            corpus.drop_database(url)


if __name__ == "__main__":
    main()
