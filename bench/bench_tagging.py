"""Benchmark tagging (``topics.tagging.engine.papers_tag``) on PostgreSQL: papers/s for rules only,
for rules + classifier, with and without history rows for machine writes, and with papers'
vectors stored (rules + classifier + semantic similarity).

    .venv/bin/python bench/bench_tagging.py [--papers 50000] [--workers 2]
        [--openalex-field NAME] [--repeats 3] [--keep] [--smoke]
        [--database-url postgres://postgres@127.0.0.1:5432/topicsite_bench_tagging]

1. A fresh database (dropped and created; dropped again at the end unless ``--keep``), filled
   as the demo does: migrations, categories, the reference page, the recorded arXiv
   responses (1,317 real papers), the demo taxonomy (a topic per arXiv archive with category
   rules, keyword rules on some reference topics); with ``--openalex-field`` also that field
   of the OpenAlex taxonomy (``import_openalex_topics --field``), whose topics carry keyword
   rules built from their names and descriptions. Then ``tag --all``.
2. A classifier trained on those labels (``classifier_train``), stored, then switched off.
3. ``--papers`` papers made by resampling the stored real papers (title, abstract, primary
   category, cross-lists as they are) under new keys, written in bulk.
4. Timed ``papers_tag`` over all of them in batches of ``TAG_BATCH_SIZE``: rules only, first
   run (writes every assignment) and second run (writes nothing); the same with the
   classifier active (loaded before the clock starts; load time printed apart); and rules +
   classifier with ``TOPICS_TAGGING_HISTORY`` off, to show what the history rows cost; then
   with vectors: the real papers embedded (``papers.embeddings.store.embed_papers``; at most
   ``--embedded`` of them) and each resampled paper given its source's vector (same text, same
   model), so rules, classifier and semantic similarity (``topics.tagging.semantic``, the
   model built before the clock starts) all run.
   Assignments of the resampled papers are deleted between configurations. Each run goes in
   one process, then split in ``--workers`` forked processes (each tagging its share, as that
   many Celery worker processes on the ``tag`` queue would), timed from start to the last one
   done.

Prints topics (with a rule, with a model), papers/s per run (wall clock; the median of
``--repeats`` rounds of first and second run, every round's rate beside it: on a shared
machine one run can be 15% off the next) and per CPU second of
the tagging processes (user + system, threads and forked children included; PostgreSQL's own
work is not in it: what the rate would be with a core to itself for the Python, while the
server keeps up), assignments written, the load average (other work on the machine slows
every wall-clock figure), and the ratios rules + classifier /
rules only and with / without history. Needs PostgreSQL only (no Redis: tasks run
in-process).

``--smoke`` (what CI runs): 2,000 papers (two batches), 2 workers, 200 real papers embedded,
on a database of its own
(``bench/smoke.py``, dropped at the end); exits non-zero if a first run writes no assignment,
a second run writes any, or the classifier stored no model.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from smoke import smoke_database_url  # noqa: E402

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/topicsite_bench_tagging"
RESAMPLED_PREFIX = "bench-tagging:"
WRITE_CHUNK = 5000


def recreate_database(url: str, *, drop_only: bool = False) -> None:
    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin_url = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if not drop_only:
            connection.execute(f'CREATE DATABASE "{name}"')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=50_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--openalex-field", default=None)
    parser.add_argument("--database-url", default=None, help=f"default {DEFAULT_DATABASE_URL}")
    parser.add_argument("--keep", action="store_true", help="Keep the database afterwards.")
    parser.add_argument(
        "--embedded", type=int, default=None, help="real papers to embed (default: all)"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="Runs of each configuration; the median is printed, with every run's rate "
        "(default 3; 1 under --smoke).",
    )
    parser.add_argument("--smoke", action="store_true", help="2,000 papers, own database (CI)")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="Also profile a first run with vectors, one process (cProfile, top 30 by own time).",
    )
    options = parser.parse_args()
    if options.smoke:
        options.papers, options.workers, options.repeats = 2_000, 2, 1
        options.embedded = 200
    options.database_url = options.database_url or (
        smoke_database_url(DEFAULT_DATABASE_URL, "tagging")
        if options.smoke
        else DEFAULT_DATABASE_URL
    )

    recreate_database(options.database_url)
    os.environ["DATABASE_URL"] = options.database_url
    os.environ.pop("REDIS_URL", None)
    os.environ["DJANGO_SETTINGS_MODULE"] = "topicsite.settings.local"
    import django

    django.setup()
    try:
        run(options)
    finally:
        from django.db import connections

        connections.close_all()
        if not options.keep:
            recreate_database(options.database_url, drop_only=True)


def run(options) -> None:
    import logging
    from io import StringIO

    from django.core.management import call_command
    from django.db.models import Count
    from django.test import override_settings

    from papers.models import Paper
    from topics.models import Assignment, ClassifierModel, Topic
    from topics.tagging.classifier import classifier_active
    from topics.tagging.engine import TAG_BATCH_SIZE
    from topics.tagging.semantic import semantic_active
    from topics.tagging.training import classifier_train

    logging.disable(logging.INFO)
    quiet = StringIO()
    print("Setting up the database (migrations, categories, reference page, recorded arXiv)...")
    for command, *arguments in (
        ("migrate", "--noinput"),
        ("load_categories",),
        ("import_reference_page",),
        ("harvest", "--recorded"),
        ("load_demo_taxonomy",),
    ):
        call_command(command, *arguments, stdout=quiet, verbosity=0)
    if options.openalex_field:
        call_command("import_openalex_topics", "--field", options.openalex_field, stdout=quiet)
    call_command("tag", "--all", stdout=quiet)

    started = time.perf_counter()
    stored = classifier_train(apply=False)
    training_seconds = time.perf_counter() - started
    if options.smoke and not stored.topic_count:
        raise SystemExit("smoke: the classifier stored no topic model")
    ClassifierModel.objects.update(active=False)

    real = list(
        Paper.objects.order_by("pk").values(
            "pk", "title", "abstract", "primary_category_id", "submitted"
        )
    )
    cross_lists: dict[int, list[int]] = {}
    for paper_id, category_id in Paper.cross_lists.through.objects.values_list(
        "paper_id", "category_id"
    ):
        cross_lists.setdefault(paper_id, []).append(category_id)
    print(f"Resampling {len(real)} real papers to {options.papers} papers...")
    through = Paper.cross_lists.through
    for start in range(0, options.papers, WRITE_CHUNK):
        numbers = range(start, min(start + WRITE_CHUNK, options.papers))
        sources = [real[number % len(real)] for number in numbers]
        created = Paper.objects.bulk_create(
            [
                Paper(
                    import_key=f"{RESAMPLED_PREFIX}{number}",
                    title=source["title"],
                    abstract=source["abstract"],
                    primary_category_id=source["primary_category_id"],
                    submitted=source["submitted"],
                    source="bench",
                )
                for number, source in zip(numbers, sources, strict=True)
            ]
        )
        through.objects.bulk_create(
            [
                through(paper_id=paper.pk, category_id=category_id)
                for paper, source in zip(created, sources, strict=True)
                for category_id in cross_lists.get(source["pk"], ())
            ]
        )
    paper_ids = list(
        Paper.objects.filter(import_key__startswith=RESAMPLED_PREFIX)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    resampled = Assignment.objects.filter(paper__import_key__startswith=RESAMPLED_PREFIX)

    topics = Topic.objects.filter(active=True)
    with_rule = topics.exclude(rule_query="", rule_categories__isnull=True).distinct().count()
    print(
        f"Topics: {topics.count()} active, {with_rule} with a rule, {stored.topic_count} with a "
        f"classifier model (v{stored.version}, trained in {training_seconds:.1f} s on "
        f"{stored.metrics['papers']} papers, {stored.metrics['features']} features)."
    )
    print(f"Papers tagged per run: {len(paper_ids)}, in batches of {TAG_BATCH_SIZE}.")
    print()

    def timed(label: str) -> float:
        first_rates = []
        for workers in sorted({1, options.workers}):
            # (seconds, CPU seconds, assignments written) per repeat, per run
            runs: dict[str, list[tuple[float, float, int]]] = {"first run": [], "second run": []}
            for _ in range(options.repeats):
                resampled.delete()
                for run_name, timings in runs.items():
                    cpu_before = _cpu_seconds()
                    started = time.perf_counter()
                    written = tag_in_processes(paper_ids, workers)
                    timings.append(
                        (time.perf_counter() - started, _cpu_seconds() - cpu_before, written)
                    )
                    if options.smoke and (not written if run_name == "first run" else written):
                        raise SystemExit(
                            f"smoke: {label}, {run_name}: {written} assignments written"
                        )
            for run_name, timings in runs.items():
                seconds, cpu, written = sorted(timings)[len(timings) // 2]  # the median run
                rate = len(paper_ids) / seconds
                if run_name == "first run":
                    first_rates.append(rate)
                spread = ""
                if len(timings) > 1:
                    rates = sorted(len(paper_ids) / timing[0] for timing in timings)
                    spread = f"runs {' '.join(f'{value:,.0f}' for value in rates)}; "
                print(
                    f"  {label:<36} {workers} proc. {run_name:<10} {rate:>8,.0f} papers/s  "
                    f"{len(paper_ids) / cpu:>8,.0f} per CPU s  "
                    f"({written:,} assignments written in {seconds:.2f} s; {spread}"
                    f"load average {os.getloadavg()[0]:.1f})"
                )
        return first_rates[0]

    print(f"papers_tag (machine: {os.cpu_count()} CPUs):")
    rules_only = timed("rules only")
    ClassifierModel.objects.filter(pk=stored.pk).update(active=True)
    started = time.perf_counter()
    classifier_active()
    print(f"  (classifier v{stored.version} loaded in {time.perf_counter() - started:.2f} s)")
    with_classifier = timed("rules + classifier")
    with override_settings(TOPICS_TAGGING_HISTORY=False):
        without_history = timed("rules + classifier, no history rows")
    by_state = {
        f"{source} {state}": count
        for source, state, count in resampled.order_by()
        .values_list("source", "state")
        .annotate(count=Count("id"))
    }
    print()
    print(f"Assignments of the resampled papers after the rules + classifier runs: {by_state}")

    embedded, embed_seconds = vectors_store(real, paper_ids, options.embedded)
    started = time.perf_counter()
    model = semantic_active()
    print(
        f"  ({embedded} of {len(real)} real papers embedded in {embed_seconds:.0f} s, their "
        f"vectors given to the resampled papers with the same text; semantic model of "
        f"{model.topic_count} topics built in {time.perf_counter() - started:.2f} s)"
    )
    with_vectors = timed("rules + classifier + semantic")
    if options.profile:
        profile_first_run(resampled, paper_ids)
    by_source = {
        f"{source} {state}": count
        for source, state, count in resampled.order_by()
        .values_list("source", "state")
        .annotate(count=Count("id"))
    }
    if options.smoke and not any(key.startswith("semantic") for key in by_source):
        raise SystemExit("smoke: semantic similarity wrote no assignment")
    print()
    print(f"Assignments of the resampled papers after the last run: {by_source}")
    print(
        f"rules + classifier / rules only: {with_classifier / rules_only:.2f}; "
        f"with history / without history (first runs): {with_classifier / without_history:.2f}; "
        f"with vectors: {with_vectors:,.0f} papers/s in one process "
        f"({with_vectors / with_classifier:.2f} of rules + classifier)"
    )


def vectors_store(real: list[dict], paper_ids: list[int], limit: int | None) -> tuple[int, float]:
    """Embed the first ``limit`` real papers (all for ``None``) with the project's pipeline,
    then give each resampled paper (``paper_ids``, made from ``real`` in order) its source's
    stored vector. Returns (real papers embedded, seconds the embedding took)."""
    from papers.embeddings.store import embed_papers
    from papers.models import PaperEmbedding

    sources = [paper["pk"] for paper in real[:limit]]
    started = time.perf_counter()
    embed_papers(sources)
    seconds = time.perf_counter() - started
    stored = {row.paper_id: row for row in PaperEmbedding.objects.filter(paper_id__in=sources)}
    copies = []
    for number, paper_id in enumerate(paper_ids):
        source = stored.get(real[number % len(real)]["pk"])
        if source is not None:
            copies.append(
                PaperEmbedding(
                    paper_id=paper_id,
                    model=source.model,
                    dimension=source.dimension,
                    text_sha256=source.text_sha256,
                    vector=source.vector,
                )
            )
    PaperEmbedding.objects.bulk_create(copies, batch_size=WRITE_CHUNK)
    return len(stored), seconds


def profile_first_run(resampled, paper_ids: list[int]) -> None:
    """Print where a first run's time goes (one process, cProfile, top 30 by own time)."""
    import cProfile
    import pstats

    from topics.tagging.engine import papers_tag

    resampled.delete()
    profiler = cProfile.Profile()
    profiler.runcall(papers_tag, paper_ids=paper_ids)
    print()
    print("Profile of one first run with vectors, one process (top 30 by own time):")
    pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(30)


def _cpu_seconds() -> float:
    """CPU seconds (user + system) this process, its threads and its reaped children have
    used so far: the tagging processes' own work, whatever else runs on the machine (the
    database server's is not in it)."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def tag_in_processes(paper_ids: list[int], workers: int) -> int:
    """``papers_tag`` over ``paper_ids``, here or split in ``workers`` forked processes (each
    with its own database connection, and the parent's loaded classifier); returns the number
    of assignments written."""
    from django.db import connections

    from topics.tagging.engine import papers_tag

    if workers == 1:
        return papers_tag(paper_ids=paper_ids)
    import multiprocessing

    connections.close_all()
    share = -(-len(paper_ids) // workers)
    slices = [paper_ids[start : start + share] for start in range(0, len(paper_ids), share)]
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        return sum(pool.map(_tag_share, slices))


def _tag_share(paper_ids: list[int]) -> int:
    from django.db import connections

    from topics.tagging.engine import papers_tag

    try:
        return papers_tag(paper_ids=paper_ids)
    finally:
        connections.close_all()


if __name__ == "__main__":
    main()
