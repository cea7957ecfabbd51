"""Deep API paging: a page far down a paper list costs what the first page does.

    .venv/bin/python bench/make_corpus.py --papers 1000000      # once, ~25 min
    .venv/bin/python bench/bench_paging.py [--repeat 15] [--walk 40] [--page-size 100]
        [--depths 0.01,0.5,0.99]
        [--database-url postgres://postgres@127.0.0.1:5432/topicsite_bench_corpus] [--smoke]

Two lists: ``/api/v1/papers/`` and ``/api/v1/topics/<slug>/papers/`` of the largest leaf
topic. For each, through Django's test client with no cache (DummyCache: nothing cached, no
throttle), ``--repeat`` requests after one warm-up of:

- ``first``: the first page;
- ``depth N%``: a jump to the page N% of the way down the list, with a cursor the API handed
  out (the ``next`` cursor of the same list filtered to ``submitted_before`` the date found
  N% down: a position is a date and an id, whatever the filter);
- ``walk``: following ``next`` ``--walk`` pages from the first, each page timed once; the
  median of the last five pages is printed, and every paper must be seen once.

Printed per row: median and p95 ms, SQL queries of one request, and the ratio to the first
page's median (``<= 2`` is ``ok``, else ``MISS``). Exits non-zero when an answer is not 200, a
deep page is empty, the walk sees a paper twice or a page query uses ``OFFSET`` (the old
cursor paged ties by offset: deep pages ran the per-row subqueries for every skipped row).

``--smoke`` (what CI runs): 2 requests per row, a walk of 5 pages of 100 on the smoke corpus
(``make_corpus.py --smoke``, 2,000 papers, built first if missing); the figures at that size
say nothing about speed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import make_corpus  # noqa: E402

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/topicsite_bench_corpus"
# A deep page may cost at most this many times the first one.
TARGET_RATIO = 2.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=None, help=f"default {DEFAULT_DATABASE_URL}")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--walk", type=int, default=40, help="Pages to follow next through.")
    parser.add_argument("--page-size", type=int, default=100)
    parser.add_argument("--depths", default="0.01,0.5,0.99", help="Fractions of the list.")
    parser.add_argument("--smoke", action="store_true", help="2 requests per row (CI)")
    options = parser.parse_args()
    if options.smoke:
        options.repeat, options.walk = 2, 5
        options.database_url = options.database_url or make_corpus.smoke_corpus_url()
        make_corpus.smoke_corpus_ensure(options.database_url)
    options.database_url = options.database_url or DEFAULT_DATABASE_URL
    options.depths = [float(depth) for depth in options.depths.split(",")]
    if not all(0 <= depth < 1 for depth in options.depths) or options.walk < 1:
        parser.error("--depths are fractions from 0 up to 1 (excluded); --walk at least 1")
    os.environ["DATABASE_URL"] = options.database_url
    os.environ.pop("REDIS_URL", None)
    os.environ["DJANGO_SETTINGS_MODULE"] = "topicsite.settings.local"
    import django

    django.setup()
    from django.test import override_settings

    with override_settings(
        CACHES={"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}},
        ALLOWED_HOSTS=["testserver"],
        DEBUG=False,
    ):
        failures = run(options)
    if failures:
        raise SystemExit(f"FAIL: {len(failures)} checks failed (above)")


class Fetcher:
    """GETs through the test client, keeping the SQL of each request."""

    def __init__(self, failures: list[str]):
        from django.test import Client

        self.client = Client()
        self.failures = failures

    def get(self, url: str) -> tuple[dict, float, list[str]]:
        """``(body, ms, sql)`` of one GET of ``url``; a non-200 is a failure (and an empty
        body)."""
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            response = self.client.get(url)
            elapsed = (time.perf_counter() - started) * 1000
        if response.status_code != 200:
            self.failures.append(f"GET {url}: {response.status_code}")
            return {"results": [], "next": None}, elapsed, []
        sql = [query["sql"] for query in captured.captured_queries]
        if any(" OFFSET " in statement.upper() for statement in sql):
            self.failures.append(f"GET {url}: a query pages by OFFSET")
        return response.json(), elapsed, sql

    def timed(self, url: str, repeat: int) -> tuple[list[float], int, dict]:
        """``(times in ms, SQL queries of one request, body)`` of ``repeat`` GETs after one
        warm-up."""
        body, _, sql = self.get(url)
        times = [self.get(url)[1] for _ in range(repeat)]
        return times, len(sql), body


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))]


def print_row(label: str, page: str, times: list[float], sql: int, first: float) -> None:
    """One row of the table; ``first`` is the first page's median ms."""
    ratio = statistics.median(times) / first
    verdict = "ok" if ratio <= TARGET_RATIO else "MISS"
    print(
        f"{label:<7} {page:<22} {statistics.median(times):>10.1f} "
        f"{percentile(times, 0.95):>8.1f} {sql:>4} {ratio:>6.2f}  {verdict}"
    )


def cursor_at(fetcher: Fetcher, listing: str, papers, depth: float) -> str:
    """A cursor of ``listing`` about ``depth`` of the way down ``papers`` (its queryset,
    newest first): the ``next`` cursor of the list filtered to the date found there."""
    total = papers.count()
    index = min(int(depth * total), max(total - 2, 0))
    submitted = papers.values_list("submitted", flat=True)[index]
    query = urlencode({"submitted_before": submitted.isoformat(), "page_size": 1})
    body, _, _ = fetcher.get(f"{listing}?{query}")
    if not body["next"]:
        fetcher.failures.append(f"{listing}: no paper after {submitted}")
        return ""
    return parse_qs(urlsplit(body["next"]).query)["cursor"][0]


def run(options) -> list[str]:
    from django.db.models import Count

    from papers.models import Paper
    from topics.models import Topic
    from topics.selectors import topic_papers

    failures: list[str] = []
    fetcher = Fetcher(failures)
    leaf = (
        Topic.objects.filter(active=True, children__isnull=True)
        .annotate(n=Count("assignments"))
        .order_by("-n", "pk")
        .first()
    )
    if leaf is None:
        return ["no topic in the corpus"]
    lists = [
        ("papers", "/api/v1/papers/", Paper.objects.order_by("-submitted", "-id")),
        ("topic", f"/api/v1/topics/{leaf.slug}/papers/", topic_papers(topic=leaf)),
    ]
    print(
        f"{Paper.objects.count():,} papers; topic: {leaf.slug} ({lists[1][2].count():,} "
        f"papers); pages of {options.page_size}; uncached; {options.repeat} requests per row "
        f"after one warm-up; load average {os.getloadavg()[0]:.1f}\n"
    )
    header = f"{'list':<7} {'page':<22} {'median ms':>10} {'p95 ms':>8} {'SQL':>4} {'ratio':>6}"
    print(header)
    print("-" * len(header))
    for name, listing, papers in lists:
        size = f"page_size={options.page_size}"
        first_times, first_sql, _ = fetcher.timed(f"{listing}?{size}", options.repeat)
        first = statistics.median(first_times)
        print_row(name, "first", first_times, first_sql, first)
        total = papers.count()
        for depth in options.depths:
            cursor = cursor_at(fetcher, listing, papers, depth)
            if not cursor:
                continue
            url = f"{listing}?{urlencode({'cursor': cursor})}&{size}"
            times, sql, body = fetcher.timed(url, options.repeat)
            if not body["results"]:
                failures.append(f"{listing}: the page {depth:.0%} down is empty")
            print_row(name, f"depth {depth:.0%} (~{int(depth * total):,})", times, sql, first)
        seen, walk_times, url = [], [], f"{listing}?{size}"
        for _ in range(options.walk):
            body, elapsed, sql = fetcher.get(url)
            seen += [paper["id"] for paper in body["results"]]
            walk_times.append(elapsed)
            url = body["next"]
            if not url:
                break
        if len(seen) != len(set(seen)):
            failures.append(f"{listing}: the walk saw {len(seen) - len(set(seen))} papers twice")
        pages = f"walk, pages {max(len(walk_times) - 4, 1)}-{len(walk_times)}"
        print_row(name, pages, walk_times[-5:], len(sql), first)
    for failure in failures:
        print(f"FAIL: {failure}")
    return failures


if __name__ == "__main__":
    main()
