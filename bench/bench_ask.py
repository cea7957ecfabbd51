"""Quality and speed of "Ask about this topic" on the reference topic: hit@1 and hit@3 of the
cited papers and the median answer time, for the default (extractive) answer, on both
retrieval paths (PostgreSQL full-text search and the Python BM25 fallback), plus the
no-answer calibration (coverage of answerable and off-topic questions).

    .venv/bin/python bench/bench_ask.py [--database-url URL] [--no-setup] [--repeat 3] [--smoke]

The question set is ``ask/tests/data/questions.json``: questions written from the reference
topic's abstracts, each with the paper(s) that answer it, and off-topic questions that must get
no answer. hit@1: the first citation is one of the question's papers; hit@3: one of the first
three citations is. Times are of ``ask.answers.answer_compose`` (no cache; the generator is
switched off), median over every question and repeat.

By default it builds a throwaway PostgreSQL database ``topicsite_bench_ask`` (created if
missing, migrated, categories and the reference page imported; kept for the next run). With
``--database-url`` it uses that database (the demo's, SQLite or PostgreSQL) and, with
``--no-setup``, reads it as it is: the topic ``llm-agent-training`` must be there
(``manage.py demo`` or ``manage.py import_reference_page``). On SQLite only the fallback
path runs. ``--smoke`` (what CI runs): one repeat, on a database of its own
(``bench/smoke.py``, dropped at the end); exits non-zero if a path answers no question.

Figures (2026-11-30, this 2-CPU machine under a load average of 5-9 from other work; 30
questions, 10 off-topic; both paths): hit@1 1.00, hit@3 1.00; off-topic answered 0 of 10;
coverage of answerable questions at least 0.51, of off-topic ones at most 0.26 (threshold
0.4). Median answer time: PostgreSQL path about 100 ms, Python fallback 50-110 ms on
PostgreSQL, 57 ms on the demo's SQLite. The questions were written from the same abstracts
they are scored on, so these figures are an upper bound for readers' own wording.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from smoke import smoke_database_url  # noqa: E402

QUESTIONS = ROOT / "ask" / "tests" / "data" / "questions.json"
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/topicsite_bench_ask"


def _ensure_database(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--no-setup", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="one repeat, own database (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.repeat = 1
    url = args.database_url or (
        smoke_database_url(DEFAULT_URL, "ask") if args.smoke else DEFAULT_URL
    )
    try:
        run(args, url)
    finally:
        if args.smoke and not args.database_url:
            from django.db import connections

            connections.close_all()
            _drop_database(url)


def _drop_database(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def run(args, url: str) -> None:
    if url.startswith("postgres") and not args.no_setup:
        _ensure_database(url)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "topicsite.settings.local")
    os.environ.pop("ASK_LLM_BASE_URL", None)

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from ask import answers, selectors
    from topics.models import Topic

    if not args.no_setup:
        from papers.categories import category_sync
        from topics.importers.reference import reference_page_import

        call_command("migrate", verbosity=0)
        category_sync()
        reference_page_import(
            data=json.loads((ROOT / "topics/data/llm-agent-training.json").read_text("utf-8"))
        )

    data = json.loads(QUESTIONS.read_text("utf-8"))
    topic = Topic.objects.get(slug=data["topic"])
    paths = {"python": selectors.topic_papers_for_question_fallback}
    if connection.vendor == "postgresql":
        paths = {"postgresql": selectors.topic_papers_for_question_postgres, **paths}

    print(f"database: {connection.vendor}; topic {topic.slug}; {len(data['questions'])} questions")
    for name, retrieve in paths.items():
        hit1 = hit3 = 0
        times: list[float] = []
        coverages: list[float] = []
        misses = []
        for item in data["questions"]:
            wanted = set(item["papers"])
            for _ in range(args.repeat):
                started = time.perf_counter()
                retrieval = retrieve(topic=topic, question=item["question"])
                answer = answers.answer_compose(
                    topic=topic, question=item["question"], retrieval=retrieval
                )
                times.append((time.perf_counter() - started) * 1000)
            coverages.append(answer.coverage)
            cited = [citation.title for citation in answer.citations]
            hit1 += bool(cited[:1] and cited[0] in wanted)
            hit3 += bool(wanted & set(cited[:3]))
            if not wanted & set(cited[:3]):
                misses.append((item["question"], cited[:3]))
        off_answered = []
        off_coverages = []
        for question in data["off_topic"]:
            retrieval = retrieve(topic=topic, question=question)
            answer = answers.answer_compose(topic=topic, question=question, retrieval=retrieval)
            off_coverages.append(answer.coverage)
            if answer.found:
                off_answered.append(question)
        count = len(data["questions"])
        print(f"\n[{name}]")
        print(f"  hit@1 {hit1 / count:.2f}   hit@3 {hit3 / count:.2f}   (target hit@3 >= 0.80)")
        print(
            f"  answer time: median {statistics.median(times):.1f} ms, "
            f"max {max(times):.1f} ms over {len(times)} answers"
        )
        print(
            f"  coverage of the best paper: answerable min {min(coverages):.2f} "
            f"(median {statistics.median(coverages):.2f}); off-topic max "
            f"{max(off_coverages):.2f}; threshold {answers.MIN_COVERAGE}"
        )
        print(f"  off-topic questions answered anyway: {len(off_answered)} of {len(off_coverages)}")
        for question, cited in misses:
            print(f"  miss: {question!r} -> {cited}")
        for question in off_answered:
            print(f"  answered off-topic: {question!r}")
        if args.smoke and not hit3:
            raise SystemExit(f"smoke: the {name} path found no question's paper")


if __name__ == "__main__":
    main()
