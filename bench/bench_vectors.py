"""Vector search for similar papers: index build rate, query latency, memory per web process
and recall@10 against exact search.

    .venv/bin/python bench/bench_vectors.py [--vectors 1000000] [--queries 200] [--seed 7]
        [--database-url postgres://postgres@127.0.0.1:5432/topicsite_bench_vectors] [--keep]
    .venv/bin/python bench/bench_vectors.py --compare [--sizes 10000,100000,1000000]
    .venv/bin/python bench/bench_vectors.py --smoke

Default: the path that ships, end to end. A database of its own gets ``--vectors`` papers
(minimal rows written with binary COPY; 1% withdrawn) and as many ``PaperEmbedding`` rows of
384 float32 dimensions, drawn as clusters (about 100 points round each random centre, each
its centre plus noise, so that a paper's ten nearest are its cluster's, as related papers
are, and recall means something). Then:

1. ``IndexWriter.rebuild()`` (``manage.py embed --rebuild-index``): read every vector from
   PostgreSQL and build the usearch file; vectors per second.
2. A web process's view: the memory it gains opening the file (memory-mapped) and running the
   queries (RSS delta: pages of the file the searches touched, shared through the page cache
   by every process that maps it), then ``similar_ranked`` and ``similar_papers`` (the paper
   page's call: its vector, the index, liveness and the papers, from PostgreSQL) on
   ``--queries`` random papers: median and 95th percentile milliseconds.
3. Recall@10 of ``similar_ranked`` against exact search over all vectors (live papers only,
   the paper itself left out).

``--compare``: the libraries side by side on the same clustered vectors, without a database,
at each of ``--sizes``: exact numpy (the matrix in memory), usearch HNSW with half precision
storage, and float32 and int8 too up to 10,000 (built, saved, memory-mapped with
``view=True``), half precision again with efConstruction 40 (the graph shipped before the 1M
measurement showed its recall falling apart), and faiss ``IndexHNSWFlat`` when ``faiss``
imports; both with the shipped graph settings (``papers.embeddings.index``: M=16,
efConstruction=128, ef=128, inner product). faiss is not a dependency:
``pip install --target /tmp/faiss faiss-cpu==1.15.1``, then ``PYTHONPATH=/tmp/faiss``.
Build rate, median query milliseconds (k=30: ten results and the margin ``nearest`` asks
for), the RSS a fresh process gains opening the file and running the queries (a web
process's cost), file size, recall@10.

``--smoke`` (what CI runs): 5,000 vectors, 50 queries, on a database of its own
(``bench/smoke.py``, dropped at the end), then ``--compare`` at 2,000; exits non-zero when the
index is missing vectors or recall@10 is below 0.9.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from smoke import smoke_database_url  # noqa: E402

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/topicsite_bench_vectors"
DIMENSION = 384
PER_CENTRE = 100  # points per cluster: a paper's ten nearest are of its own cluster
NOISE = 0.06  # per dimension: a point's cosine to its centre is about 0.65, to a sibling 0.4
K = 10
ASKED = 30  # what nearest() asks the index for k = 10 (k + max(10, k) + the paper itself)
WRITE_CHUNK = 20_000
MODEL = "bench/clustered-384"


def rss_bytes() -> int:
    """This process's resident set size (Linux ``/proc/self/status``, VmRSS)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


CHILD = """
import sys, time
import numpy as np
sys.path.insert(0, {bench!r})
from bench_vectors import rss_bytes
queries = np.load({queries!r})
{imports}
before = rss_bytes()
{open}
for query in queries:
    search(query)
print(rss_bytes() - before)
"""

OPENERS = {
    "usearch": (
        "from usearch.index import Index",
        "index = Index.restore({path!r}, view=True)\n"
        "index.expansion_search = {ef}\n"
        "search = lambda query: index.search(query, {asked})",
    ),
    "faiss": (
        "import faiss",
        "index = faiss.read_index({path!r})\n"
        "index.hnsw.efSearch = {ef}\n"
        "search = lambda query: index.search(query.reshape(1, -1), {asked})",
    ),
}


def process_rss(kind: str, path: str, queries: np.ndarray, ef: int) -> float:
    """MiB a fresh process (a web process) gains opening the index at ``path`` (``kind``:
    usearch memory-mapped, or faiss read into memory) and searching ``queries``."""
    import subprocess

    with tempfile.NamedTemporaryFile(suffix=".npy") as handle:
        np.save(handle.name, queries)
        imports, opener = OPENERS[kind]
        script = CHILD.format(
            bench=str(ROOT / "bench"),
            queries=handle.name,
            imports=imports,
            open=opener.format(path=path, ef=ef, asked=ASKED),
        )
        result = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True
        )
    return int(result.stdout.strip().splitlines()[-1]) / 2**20


def clustered(count: int, seed: int) -> np.ndarray:
    """``count`` L2-normalised float32 vectors of DIMENSION, in clusters of PER_CENTRE."""
    rng = np.random.default_rng(seed)
    centre_count = max(1, count // PER_CENTRE)
    centres = rng.standard_normal((centre_count, DIMENSION), dtype=np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    vectors = np.empty((count, DIMENSION), dtype=np.float32)
    for start in range(0, count, 100_000):
        stop = min(start + 100_000, count)
        block = centres[rng.integers(0, centre_count, stop - start)]
        block += NOISE * rng.standard_normal(block.shape, dtype=np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        vectors[start:stop] = block
    return vectors


def exact_top(vectors: np.ndarray, query: np.ndarray, k: int, allowed=None) -> list[int]:
    """Row numbers of the ``k`` rows of ``vectors`` nearest ``query`` (row numbers in
    ``allowed`` only, when given), best first."""
    scores = vectors @ query
    if allowed is not None:
        scores = np.where(allowed, scores, -np.inf)
    top = np.argpartition(-scores, k)[: k + 1]
    return [int(i) for i in top[np.argsort(-scores[top])]]


def milliseconds(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[int(0.95 * (len(ordered) - 1))] * 1000


# --- the shipped path, end to end ------------------------------------------------------------


def recreate_database(url: str, *, drop_only: bool = False) -> None:
    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin_url = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if not drop_only:
            connection.execute(f'CREATE DATABASE "{name}"')


def write_corpus(count: int, vectors: np.ndarray, seed: int) -> list[int]:
    """``count`` minimal papers (1% withdrawn) and their vectors; returns the paper ids."""
    import datetime as dt

    from django.db import connection
    from django.utils import timezone

    from papers.ingest.postgres import rows_copy
    from papers.models import Category, Paper

    category, _ = Category.objects.get_or_create(
        code="cs.CL",
        defaults={
            "name": "Computation and Language",
            "archive": "cs",
            "archive_name": "Computer Science",
            "group": "grp_cs",
            "group_name": "Computer Science",
        },
    )
    rng = np.random.default_rng(seed + 1)
    withdrawn = rng.random(count) < 0.01
    now = timezone.now()
    columns = (
        "created_at", "updated_at", "arxiv_id", "latest_version", "title", "title_raw",
        "abstract", "abstract_raw", "comments", "journal_ref", "doi", "report_no", "license",
        "submitter", "primary_category_id", "submitted", "withdrawn", "author_count",
        "affiliation_count", "source",
    )  # fmt: skip
    first = dt.date(2016, 1, 1)
    with connection.cursor() as cursor:
        for start in range(0, count, WRITE_CHUNK):
            rows = (
                (
                    now,
                    now,
                    f"bench-vectors/{n:07d}",
                    1,
                    f"Paper {n}",
                    f"Paper {n}",
                    "",
                    "",
                    "",
                    "",
                    "",
                    "",
                    "",
                    "",
                    category.pk,
                    first + dt.timedelta(days=n % 3650),
                    bool(withdrawn[n]),
                    0,
                    0,
                    "bench",
                )  # fmt: skip
                for n in range(start, min(start + WRITE_CHUNK, count))
            )
            rows_copy(cursor, "papers_paper", columns, rows)
    ids = list(Paper.objects.order_by("arxiv_id").values_list("pk", flat=True))
    with connection.cursor() as cursor:
        for start in range(0, count, WRITE_CHUNK):
            rows = (
                (ids[n], MODEL, DIMENSION, "0" * 64, vectors[n].astype("<f4").tobytes(), now)
                for n in range(start, min(start + WRITE_CHUNK, count))
            )
            rows_copy(
                cursor,
                "papers_paperembedding",
                ("paper_id", "model", "dimension", "text_sha256", "vector", "embedded_at"),
                rows,
            )
        cursor.execute("ANALYZE papers_paper")
        cursor.execute("ANALYZE papers_paperembedding")
    return ids


def run_shipped(options) -> bool:
    from django.conf import settings

    from papers.embeddings import index as vector_index
    from papers.embeddings.index import IndexWriter, index_path
    from papers.embeddings.similar import similar_papers, similar_ranked
    from papers.models import Paper

    settings.EMBEDDING_INDEX_DIR = Path(options.index_dir)
    count = options.vectors
    started = time.perf_counter()
    vectors = clustered(count, options.seed)
    ids = write_corpus(count, vectors, options.seed)
    print(f"Wrote {count:,} papers and vectors in {time.perf_counter() - started:.0f} s.")

    writer = IndexWriter(MODEL, DIMENSION)
    started = time.perf_counter()
    indexed = writer.rebuild()
    seconds = time.perf_counter() - started
    path = index_path(MODEL)
    print(
        f"Index rebuilt from PostgreSQL: {indexed:,} vectors in {seconds:.1f} s "
        f"({indexed / seconds:,.0f} vectors/s), file {path.stat().st_size / 2**20:,.0f} MiB"
    )
    # Another process's view: the writer's copy is gone, the file is all there is.
    del writer
    vector_index._writers.clear()
    gc.collect()

    rng = np.random.default_rng(options.seed + 2)
    live = ~np.array(
        Paper.objects.order_by("arxiv_id").values_list("withdrawn", flat=True), dtype=bool
    )
    sample = [int(i) for i in rng.choice(np.flatnonzero(live), options.queries, replace=False)]
    before = rss_bytes()
    similar_ranked(ids[sample[0]])  # opens the file
    opened = rss_bytes()
    ranked_times, page_times, hits = [], [], 0
    for row in sample:
        started = time.perf_counter()
        found = similar_ranked(ids[row])
        ranked_times.append(time.perf_counter() - started)
        expected = [r for r in exact_top(vectors, vectors[row], K + 1, live) if r != row][:K]
        hits += len({ids[r] for r in expected} & {pid for pid, _ in found})
    after_queries = rss_bytes()
    papers = list(Paper.objects.filter(pk__in=[ids[row] for row in sample]))
    for paper in papers:
        started = time.perf_counter()
        similar_papers(paper)
        page_times.append(time.perf_counter() - started)
    recall = hits / (K * len(sample))
    ranked_median, ranked_p95 = milliseconds(ranked_times)
    page_median, page_p95 = milliseconds(page_times)
    print(
        f"Web process: RSS +{(opened - before) / 2**20:,.1f} MiB opening the index, "
        f"+{(after_queries - before) / 2**20:,.1f} MiB after {len(sample)} queries "
        "(memory-mapped pages, shared by every process mapping the file)"
    )
    print(
        f"similar_ranked (index + liveness query): median {ranked_median:.2f} ms, "
        f"p95 {ranked_p95:.2f} ms"
    )
    print(
        f"similar_papers (the paper page's call, 2 queries): median {page_median:.2f} ms, "
        f"p95 {page_p95:.2f} ms"
    )
    print(f"recall@{K} vs exact search (live papers): {recall:.3f}")
    return indexed == count and recall >= 0.9


# --- the libraries side by side ----------------------------------------------------------------


# faiss's default efConstruction, which the index shipped with before recall at 1M was measured.
FAISS_EXPANSION_ADD = 40


def compare(size: int, queries: int, seed: int) -> None:
    from papers.embeddings.index import CONNECTIVITY, EXPANSION_ADD, EXPANSION_SEARCH

    vectors = clustered(size, seed)
    rng = np.random.default_rng(seed + 3)
    sample = rng.choice(size, min(queries, size), replace=False)
    truth = {int(row): exact_top(vectors, vectors[row], K + 1)[: K + 1] for row in sample}

    def recall(search) -> float:
        hits = 0
        for row in sample:
            expected = [r for r in truth[int(row)] if r != row][:K]
            found = [r for r in search(vectors[row]) if r != row][:K]
            hits += len(set(expected) & set(found))
        return hits / (K * len(sample))

    def latency(search) -> float:
        times = []
        for row in sample:
            started = time.perf_counter()
            search(vectors[row])
            times.append(time.perf_counter() - started)
        return milliseconds(times)[0]

    print(f"\n{size:,} vectors of {DIMENSION} dimensions (clustered), k={ASKED}:")
    print(f"  {'index':<24}{'build/s':>10}{'median ms':>11}{'RSS MiB':>10}{'file MiB':>10}"
          f"{'recall@10':>11}")  # fmt: skip

    def row(name, rate, ms, rss, file_mib, rec):
        rate_text = f"{rate:,.0f}" if rate else "-"
        file_text = f"{file_mib:,.0f}" if file_mib is not None else "-"
        print(f"  {name:<24}{rate_text:>10}{ms:>11.2f}{rss:>10,.0f}{file_text:>10}{rec:>11.3f}")

    def numpy_search(query):
        scores = vectors @ query
        top = np.argpartition(-scores, ASKED)[:ASKED]
        return top[np.argsort(-scores[top])]

    row("numpy exact", None, latency(numpy_search), vectors.nbytes / 2**20, None, 1.0)

    from usearch.index import Index

    keys = np.arange(size, dtype=np.uint64)
    with tempfile.TemporaryDirectory() as directory:
        variants = [
            (dtype, EXPANSION_ADD)
            for dtype in (("f32", "f16", "i8") if size <= 10_000 else ("f16",))
        ]
        if EXPANSION_ADD != FAISS_EXPANSION_ADD:  # the cheaper graph the shipped one replaced
            variants.append(("f16", FAISS_EXPANSION_ADD))
        for dtype, expansion_add in variants:
            index = Index(
                ndim=DIMENSION,
                metric="ip",
                dtype=dtype,
                connectivity=CONNECTIVITY,
                expansion_add=expansion_add,
            )
            started = time.perf_counter()
            index.add(keys, vectors)
            rate = size / (time.perf_counter() - started)
            path = os.path.join(directory, f"{dtype}.usearch")
            index.save(path)
            del index
            gc.collect()
            rss = process_rss("usearch", path, vectors[sample], EXPANSION_SEARCH)
            view = Index.restore(path, view=True)
            view.expansion_search = EXPANSION_SEARCH

            def search(query, view=view):
                return view.search(query, ASKED).keys.astype(np.int64)

            ms = latency(search)
            rec = recall(search)
            name = f"usearch {dtype} efC={expansion_add}"
            row(name, rate, ms, rss, os.path.getsize(path) / 2**20, rec)
            del view
            gc.collect()

        try:
            import faiss
        except ImportError:
            print("  faiss: not importable (see the module docstring); left out")
            return
        faiss.omp_set_num_threads(os.cpu_count() or 1)
        index = faiss.IndexHNSWFlat(DIMENSION, CONNECTIVITY, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = EXPANSION_ADD
        started = time.perf_counter()
        index.add(vectors)
        rate = size / (time.perf_counter() - started)
        path = os.path.join(directory, "faiss.index")
        faiss.write_index(index, path)
        del index
        gc.collect()
        rss = process_rss("faiss", path, vectors[sample], EXPANSION_SEARCH)
        index = faiss.read_index(path)
        index.hnsw.efSearch = EXPANSION_SEARCH

        def faiss_search(query):
            return index.search(query.reshape(1, -1), ASKED)[1][0]

        ms = latency(faiss_search)
        rec = recall(faiss_search)
        row("faiss HNSWFlat (read)", rate, ms, rss, os.path.getsize(path) / 2**20, rec)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vectors", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--database-url", default=None, help=f"default {DEFAULT_DATABASE_URL}")
    parser.add_argument("--keep", action="store_true", help="Keep the database afterwards.")
    parser.add_argument("--compare", action="store_true", help="The libraries side by side.")
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--smoke", action="store_true", help="5,000 vectors, own database (CI)")
    options = parser.parse_args()
    if options.smoke:
        options.vectors, options.queries, options.sizes = 5_000, 50, "2000"
    if options.compare:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "topicsite.settings.local")
        import django

        django.setup()
        for size in (int(s) for s in options.sizes.split(",")):
            compare(size, options.queries, options.seed)
        return
    options.database_url = options.database_url or (
        smoke_database_url(DEFAULT_DATABASE_URL, "vectors")
        if options.smoke
        else DEFAULT_DATABASE_URL
    )
    recreate_database(options.database_url)
    os.environ["DATABASE_URL"] = options.database_url
    os.environ.pop("REDIS_URL", None)
    os.environ["DJANGO_SETTINGS_MODULE"] = "topicsite.settings.local"
    import django

    django.setup()
    ok = False
    with tempfile.TemporaryDirectory(prefix="bench-vectors-") as index_dir:
        options.index_dir = index_dir
        try:
            from django.core.management import call_command

            call_command("migrate", "--noinput", verbosity=0)
            ok = run_shipped(options)
        finally:
            from django.db import connections

            connections.close_all()
            if not options.keep:
                recreate_database(options.database_url, drop_only=True)
    if options.smoke:
        for size in (int(s) for s in options.sizes.split(",")):
            compare(size, options.queries, options.seed)
    if not ok:
        raise SystemExit("the index is missing vectors or recall@10 is below 0.9")


if __name__ == "__main__":
    main()
