"""Benchmark the topics index (``/topics/``): server time and SQL queries per request.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/topicsite \\
        .venv/bin/python bench/bench_topic_index.py [--requests 30] [--extra-topics 0]
        [--database-url URL] [--smoke]

Runs against the database ``--database-url`` (default: ``DATABASE_URL``) names, filled as
``manage.py demo`` fills it (the reference page, the recorded arXiv papers, the demo taxonomy,
``tag --all``); the cache is whatever the settings give (Redis with ``REDIS_URL``, else local
memory; cold runs clear it). With
``--extra-topics N`` it first adds N topics (a third of them children of others), each given
accepted assignments of 1 to 20 stored papers, inside a transaction rolled back at the end, so
the database is left as it was.

For each of ``/topics/`` (the tree), ``?sort=size``, ``?sort=rising`` and ``?q=agent`` it
times ``--requests`` requests through the Django test client, cold (cache cleared before each:
the whole index computed) and warm (served from the cache), and prints the median and p95 in
milliseconds and the SQL queries per request.

``--smoke`` (what CI runs): 2 requests each and 6 extra topics, on the smoke corpus
(``make_corpus.py --smoke``, built first if missing; the demo's data and more).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "topicsite.settings.local")

URLS = ("/topics/", "/topics/?sort=size", "/topics/?sort=rising", "/topics/?q=agent")


class _Rollback(Exception):
    pass


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def _add_topics(n: int) -> None:
    from papers.models import Paper
    from topics.models import Assignment, Topic
    from topics.services import topic_create

    rng = random.Random(5)
    paper_ids = list(Paper.objects.values_list("id", flat=True))
    made: list[Topic] = []
    for i in range(n):
        parent = rng.choice(made) if made and i % 3 == 0 else None
        made.append(topic_create(name=f"Bench topic {i}", parent=parent))
    Assignment.objects.bulk_create(
        [
            Assignment(paper_id=pk, topic=topic, source=Assignment.Source.RULE, score=1.0)
            for topic in made
            for pk in rng.sample(paper_ids, min(len(paper_ids), rng.randint(1, 20)))
        ],
        ignore_conflicts=True,
    )


def _measure(client, url: str, *, requests: int, cold: bool) -> tuple[list[float], int]:
    from django.core.cache import cache
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    times, queries = [], 0
    client.get(url)  # warm up imports, templates and (for warm runs) the cache
    for _ in range(requests):
        if cold:
            cache.clear()
        with CaptureQueriesContext(connection) as ctx:
            start = time.perf_counter()
            response = client.get(url)
            times.append((time.perf_counter() - start) * 1000)
        if response.status_code != 200:
            raise SystemExit(f"{url} answered {response.status_code}")
        queries = len(ctx.captured_queries)
    return times, queries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--extra-topics", type=int, default=0)
    parser.add_argument("--database-url", default=None, help="default: DATABASE_URL")
    parser.add_argument("--smoke", action="store_true", help="a tiny run on the smoke corpus")
    args = parser.parse_args()
    if args.smoke:
        import make_corpus

        args.requests, args.extra_topics = 2, 6
        args.database_url = args.database_url or make_corpus.smoke_corpus_url()
        make_corpus.smoke_corpus_ensure(args.database_url)
    if args.database_url:
        os.environ["DATABASE_URL"] = args.database_url

    import django

    django.setup()
    from django.conf import settings
    from django.db import transaction
    from django.test import Client

    from papers.models import Paper
    from topics.models import Assignment, Topic

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    client = Client()
    try:
        with transaction.atomic():
            if args.extra_topics:
                _add_topics(args.extra_topics)
            print(
                f"{Topic.objects.active().count()} active topics, {Paper.objects.count()} papers, "
                f"{Assignment.objects.accepted().count()} accepted assignments; "
                f"{args.requests} requests each; load average {os.getloadavg()[0]:.2f}"
            )
            print(f"{'url':<24} {'cache':<5} {'median ms':>10} {'p95 ms':>8} {'queries':>8}")
            for url in URLS:
                for cold in (True, False):
                    times, queries = _measure(client, url, requests=args.requests, cold=cold)
                    print(
                        f"{url:<24} {'cold' if cold else 'warm':<5} "
                        f"{statistics.median(times):>10.1f} {_percentile(times, 0.95):>8.1f} "
                        f"{queries:>8}"
                    )
            raise _Rollback
    except _Rollback:
        pass


if __name__ == "__main__":
    main()
