"""Build a benchmark corpus of N papers on PostgreSQL by resampling the real recorded records.

    .venv/bin/python bench/make_corpus.py [--papers 1000000] [--seed 7]
        [--database-url postgres://postgres@127.0.0.1:5432/topicsite_bench_corpus]
        [--as-of 2026-11-30] [--keep-existing] [--smoke]

What it makes (the figures are printed at the end):

1. A fresh database (dropped and created, unless ``--keep-existing`` and it has a corpus),
   migrated and filled as the demo is: arXiv's categories, the reference topic page (58 topics,
   30 papers), the recorded arXiv responses (1,317 real papers with their authors and
   affiliations), the demo taxonomy, and OpenAlex's "Computer Science" and "Mathematics"
   fields as topics: about 500 topics in all, four levels deep at most.
2. ``--papers`` papers, each a real paper's title, abstract, primary category, cross-lists and
   author list (the same ``Author`` rows, so author filters hit real names), under an arXiv
   identifier that cannot clash with a real one: ``YYMM.NNNNN`` with ``NNNNN`` from 60000 up,
   where arXiv has never numbered a month past 30000 (its busiest months in 2024-2025 stayed
   under 30,000 submissions). Submitted dates cover the ten years before ``--as-of``, month
   by month in proportion to arXiv's growth (about 10.6% more submissions each year, from
   113,000 in 2016 to 280,000 in 2025), spread evenly over each month's days.
3. About three accepted assignments per paper (2 to 4), to leaf topics drawn with a Zipf-like
   weight (rank ** -0.8), so a few topics are large and most are small, as on a real site;
   source ``rule`` or ``classifier`` with a score. No history rows are written for them
   (``tag`` would write them; the pages never read history).
4. Unless ``--no-vectors``: the real papers embedded with the project's encoder
   (``papers.embeddings.store.embed_papers``) and each resampled paper given its source's
   vector plus Gaussian noise (``VECTOR_NOISE`` per dimension: a cosine of about 0.9 to its
   source, so the copies of one paper are near each other without being one point), written
   as ``PaperEmbedding`` rows; then the similar-papers index built from them
   (``manage.py embed --rebuild-index``), so similar papers and hybrid search run as on a
   site whose papers are all embedded.

Everything is written with binary COPY in chunks, then ``ANALYZE``. At 1,000,000 papers it
takes about 25 minutes (on a loaded machine) and 2.5 GB.

``--smoke`` (what CI runs): 2,000 papers on a database of its own (``bench/smoke.py``), the
corpus ``bench_scale.py``, ``bench_load.py``, ``bench_topic_index.py`` and
``bench_paging.py`` read with ``--smoke`` (each builds it first if it is missing:
``smoke_corpus_ensure``). It is kept for them; drop it with ``dropdb``.
"""

from __future__ import annotations

import argparse
import calendar
import datetime as dt
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from smoke import smoke_database_url  # noqa: E402

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/topicsite_bench_corpus"
# arXiv numbers at most ~30,000 papers a month; ours start far above any real number.
FIRST_NUMBER = 60_000
YEARLY_GROWTH = 1.106
CHUNK = 20_000
OPENALEX_FIELDS = ("Computer Science", "Mathematics")
SOURCE = "bench-corpus"
SMOKE_PAPERS = 2_000
# Per-dimension standard deviation of the noise added to a resampled paper's vector: with 384
# dimensions, a cosine of about 1 / sqrt(1 + 384 * 0.025**2) = 0.90 to its source's.
VECTOR_NOISE = 0.025


def smoke_corpus_url() -> str:
    """The database of the ``--smoke`` corpus (``bench/smoke.py``)."""
    return smoke_database_url(DEFAULT_DATABASE_URL, "corpus")


def smoke_corpus_ensure(url: str) -> None:
    """Build the ``--smoke`` corpus at ``url`` unless it is there, in a child process (the
    caller may have set Django up on another database already)."""
    if corpus_size(url) != SMOKE_PAPERS:
        command = [sys.executable, __file__, "--smoke", "--keep-existing", "--database-url", url]
        subprocess.run(command, check=True)


def recreate_database(url: str) -> None:
    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin_url = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{name}"')


def months_back(as_of: dt.date, count: int) -> list[dt.date]:
    """The first days of the ``count`` months up to and including ``as_of``'s, oldest first."""
    year, month = as_of.year, as_of.month
    months = []
    for _ in range(count):
        months.append(dt.date(year, month, 1))
        year, month = (year, month - 1) if month > 1 else (year - 1, 12)
    return months[::-1]


def monthly_counts(total: int, months: list[dt.date]) -> list[int]:
    """``total`` papers split over ``months`` in proportion to arXiv's yearly growth."""
    weights = [YEARLY_GROWTH ** (index / 12) for index in range(len(months))]
    scale = total / sum(weights)
    counts = [int(weight * scale) for weight in weights]
    for index in range(total - sum(counts)):
        counts[-1 - index % len(counts)] += 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--database-url", default=None, help=f"default {DEFAULT_DATABASE_URL}")
    parser.add_argument("--as-of", type=dt.date.fromisoformat, default=dt.date.today())
    parser.add_argument(
        "--keep-existing",
        action="store_true",
        help="Reuse the database when it already holds a corpus of this size.",
    )
    parser.add_argument(
        "--no-vectors", action="store_true", help="No embeddings (no encoder needed)."
    )
    parser.add_argument(
        "--smoke", action="store_true", help=f"{SMOKE_PAPERS:,} papers on its own database (CI)"
    )
    options = parser.parse_args()
    if options.smoke:
        options.papers = SMOKE_PAPERS
    options.database_url = options.database_url or (
        smoke_corpus_url() if options.smoke else DEFAULT_DATABASE_URL
    )
    if options.papers < 1:
        parser.error("--papers must be at least 1")

    os.environ["DATABASE_URL"] = options.database_url
    os.environ.pop("REDIS_URL", None)
    os.environ["DJANGO_SETTINGS_MODULE"] = "topicsite.settings.local"
    if options.keep_existing and corpus_size(options.database_url) == options.papers:
        print(f"{options.database_url} already holds {options.papers:,} corpus papers.")
        return
    recreate_database(options.database_url)
    import django

    django.setup()
    build(options)


def embed_real_papers() -> tuple[dict[int, tuple[str, np.ndarray]], str, int]:
    """Embed the stored real papers; ``({paper id: (text SHA-256, vector)}, model id,
    dimension)``. Raises ``EncoderUnavailable`` without the model (use ``--no-vectors``)."""
    from papers.embeddings.encoder import get_encoder
    from papers.embeddings.store import embed_papers
    from papers.embeddings.vectors import vector_from_bytes
    from papers.models import Paper, PaperEmbedding

    encoder = get_encoder()
    started = time.perf_counter()
    ids = list(Paper.objects.order_by("pk").values_list("pk", flat=True))
    embed_papers(ids, encoder=encoder, update_index=False)
    rows = PaperEmbedding.objects.filter(model=encoder.model_id).values_list(
        "paper_id", "text_sha256", "vector"
    )
    vectors = {pk: (sha, vector_from_bytes(data)) for pk, sha, data in rows}
    print(f"Embedded the {len(vectors):,} real papers in {time.perf_counter() - started:.0f} s.")
    return vectors, encoder.model_id, encoder.dimension


def corpus_size(url: str) -> int | None:
    try:
        with psycopg.connect(url) as connection:
            row = connection.execute(
                "SELECT count(*) FROM papers_paper WHERE source = %s", [SOURCE]
            ).fetchone()
            return row[0]
    except psycopg.Error:
        return None


def build(options) -> None:
    import logging
    from io import StringIO

    from django.core.management import call_command
    from django.db import connection
    from django.utils import timezone

    from papers.embeddings.vectors import vector_to_bytes
    from papers.ingest.postgres import rows_copy
    from papers.models import Authorship, Paper
    from topics.models import Assignment, Topic

    logging.disable(logging.INFO)
    quiet = StringIO()
    started = time.perf_counter()
    print("Migrating and loading the demo data and the OpenAlex topics...")
    for command, *arguments in (
        ("migrate", "--noinput"),
        ("load_categories",),
        ("import_reference_page",),
        ("harvest", "--recorded"),
        ("load_demo_taxonomy",),
        *(("import_openalex_topics", "--field", field) for field in OPENALEX_FIELDS),
    ):
        call_command(command, *arguments, stdout=quiet, verbosity=0)

    rng = random.Random(options.seed)
    noise = np.random.default_rng(options.seed)
    real_vectors, model, dimension = {}, "", 0
    if not options.no_vectors:
        real_vectors, model, dimension = embed_real_papers()
    real = list(
        Paper.objects.filter(arxiv_id__isnull=False)
        .order_by("pk")
        .values("pk", "title", "abstract", "primary_category_id", "author_count")
    )
    cross_lists: dict[int, list[int]] = {}
    for paper_id, category_id in Paper.cross_lists.through.objects.values_list(
        "paper_id", "category_id"
    ):
        cross_lists.setdefault(paper_id, []).append(category_id)
    authors: dict[int, list[int]] = {}
    for paper_id, author_id in Authorship.objects.order_by("paper_id", "position").values_list(
        "paper_id", "author_id"
    ):
        authors.setdefault(paper_id, []).append(author_id)

    leaves = list(
        Topic.objects.filter(active=True, children__isnull=True)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    rng.shuffle(leaves)
    weights = [(rank + 1) ** -0.8 for rank in range(len(leaves))]

    months = months_back(options.as_of, 120)
    counts = monthly_counts(options.papers, months)
    if max(counts) > 99_999 - FIRST_NUMBER:
        raise SystemExit(f"{options.papers:,} papers need more than 5-digit numbers in a month.")
    now = timezone.now()
    print(
        f"Writing {options.papers:,} papers ({len(real)} real ones resampled) over "
        f"{months[0]:%Y-%m} to {months[-1]:%Y-%m}, ~3 assignments each to {len(leaves)} leaf "
        f"topics..."
    )
    paper_columns = (
        "created_at",
        "updated_at",
        "arxiv_id",
        "latest_version",
        "title",
        "title_raw",
        "abstract",
        "abstract_raw",
        "comments",
        "journal_ref",
        "doi",
        "report_no",
        "license",
        "submitter",
        "primary_category_id",
        "submitted",
        "withdrawn",
        "author_count",
        "affiliation_count",
        "source",
    )
    written = assignments = 0
    pending: list[tuple] = []  # (arxiv_id, real paper dict, submitted)

    def flush() -> None:
        nonlocal assignments
        if not pending:
            return
        with connection.cursor() as cursor:
            rows = [
                (
                    now,
                    now,
                    arxiv_id,
                    1,
                    source["title"],
                    "",
                    source["abstract"],
                    "",
                    "",
                    "",
                    "",
                    "",
                    "",
                    "",
                    source["primary_category_id"],
                    submitted,
                    False,
                    source["author_count"],
                    0,
                    SOURCE,
                )
                for arxiv_id, source, submitted in pending
            ]
            rows_copy(cursor, "papers_paper", paper_columns, rows)
            cursor.execute(
                "SELECT arxiv_id, id FROM papers_paper WHERE arxiv_id = ANY(%s)",
                [[arxiv_id for arxiv_id, _, _ in pending]],
            )
            ids = dict(cursor.fetchall())
            cross, authorships, tagged, embeddings = [], [], [], []
            for arxiv_id, source, _ in pending:
                pk = ids[arxiv_id]
                if source["pk"] in real_vectors:
                    sha, vector = real_vectors[source["pk"]]
                    copy = vector + noise.normal(0.0, VECTOR_NOISE, dimension).astype(np.float32)
                    copy /= np.linalg.norm(copy)
                    embeddings.append((pk, model, dimension, sha, vector_to_bytes(copy), now))
                cross.extend((pk, category) for category in cross_lists.get(source["pk"], ()))
                authorships.extend(
                    (pk, author, position)
                    for position, author in enumerate(authors.get(source["pk"], ()))
                )
                chosen = set(rng.choices(leaves, weights, k=rng.choice((2, 3, 3, 4))))
                for topic in chosen:
                    score = round(rng.uniform(0.5, 1.0), 3)
                    kind = Assignment.Source.RULE if score > 0.8 else Assignment.Source.CLASSIFIER
                    tagged.append((now, now, pk, topic, kind, Assignment.State.ACCEPTED, score))
            rows_copy(cursor, "papers_paper_cross_lists", ("paper_id", "category_id"), cross)
            rows_copy(
                cursor, "papers_authorship", ("paper_id", "author_id", "position"), authorships
            )
            rows_copy(
                cursor,
                "topics_assignment",
                (
                    "created_at",
                    "updated_at",
                    "paper_id",
                    "topic_id",
                    "source",
                    "state",
                    "score",
                ),
                tagged,
            )
            rows_copy(
                cursor,
                "papers_paperembedding",
                ("paper_id", "model", "dimension", "text_sha256", "vector", "embedded_at"),
                embeddings,
            )
            assignments += len(tagged)
        pending.clear()

    for month, count in zip(months, counts, strict=True):
        days = calendar.monthrange(month.year, month.month)[1]
        last_day = min(days, (options.as_of - month).days + 1)
        for number in range(count):
            submitted = month + dt.timedelta(days=number * last_day // max(count, 1))
            arxiv_id = f"{month:%y%m}.{FIRST_NUMBER + number:05d}"
            pending.append((arxiv_id, rng.choice(real), submitted))
            written += 1
            if len(pending) >= CHUNK:
                flush()
                print(f"  {written:,} papers", end="\r", flush=True)
                if written // CHUNK in (1, 5, 25):
                    # Fresh statistics while the tables grow: without autovacuum the planner
                    # would keep its empty-table estimates for the foreign-key checks.
                    with connection.cursor() as cursor:
                        cursor.execute("ANALYZE")
    flush()
    print()
    with connection.cursor() as cursor:
        # VACUUM too, as autovacuum would after a bulk load (it may be off on the server):
        # without the visibility map every index-only scan fetches each row from the table.
        cursor.execute("VACUUM (ANALYZE)")
    if real_vectors:
        from papers.embeddings.index import index_writer

        built = time.perf_counter()
        indexed = index_writer(model, dimension).rebuild()
        print(f"Similar-papers index: {indexed:,} vectors in {time.perf_counter() - built:.0f} s.")
    topics = Topic.objects.filter(active=True).count()
    print(
        f"Done in {time.perf_counter() - started:.0f} s: {Paper.objects.count():,} papers "
        f"({written:,} resampled), {topics} active topics, {assignments:,} assignments "
        f"({assignments / max(written, 1):.2f} per resampled paper)."
    )


if __name__ == "__main__":
    main()
