"""Retrieval quality of search on paraphrased queries: hit@1, hit@10 and MRR of BM25, of
PostgreSQL full-text search (``mode=keyword``), of semantic search (``mode=semantic``) and of
hybrid search (``mode=hybrid``) beside the fusions it was chosen over, plus the median time of
a hybrid search and of encoding its query.

    .venv/bin/python bench/bench_retrieval.py [--database-url URL] [--no-setup] [--repeat 3]
        [--smoke]

The queries are ``bench/data/paraphrased_queries.json``: 61 papers of the demo drawn at random,
each described twice from its abstract: ``query``, the way a researcher describes it ("I
remember a paper that..."), without the words of its title; ``gist``, vaguer, what a reader
half remembers (no rare terms, names or numbers; title words allowed). Both were written before
any of their rankings was seen. The script prints how many share an English stem with the
title. hit@k: the paper is among the first k results; MRR: the mean of 1/rank (0 beyond 100).

- BM25: Okapi BM25 (k1 1.5, b 0.75) over title and abstract, the project's tokens and stems
  (``ask.text.terms``), the query's words OR-ed; scikit-learn's CountVectorizer counts them.
- keyword, semantic, hybrid: ``topics.search.papers_search`` over every paper, as
  ``/api/v1/search/`` runs it (hybrid: reciprocal rank fusion of the keyword, semantic and
  any-word rankings).
- RRF keyword + semantic: reciprocal rank fusion without the any-word ranking.
- mix alpha a: ``a * cosine + (1 - a) * ts_rank / max ts_rank`` of the semantic and any-word
  rankings (a 0.3, 0.5, 0.7), the score mix reciprocal rank fusion was measured against.

By default it builds (or reuses) the PostgreSQL database ``topicsite_bench_retrieval``: migrated,
categories, the reference topic page and the recorded arXiv responses harvested (the demo's
1,347 papers), every paper embedded by ``papers.embeddings.store.embed_papers`` (Celery eager,
no worker). The database is kept, and with it the vectors: a second run embeds nothing.
``--no-setup`` reads the database as it is. ``--smoke`` (what CI runs): a database of its own
(``bench/smoke.py``, dropped at the end), only the papers of the first 8 queries and 92 others
embedded, one repeat; exits non-zero when semantic search did not run or hybrid search found
none of the 8 papers in its first ten.

Figures: see the report of issue 16 and bench/README.md.
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

QUERIES = ROOT / "bench" / "data" / "paraphrased_queries.json"
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/topicsite_bench_retrieval"
SMOKE_QUERIES = 8
SMOKE_PAPERS = 100
DEPTH = 100
MIX_ALPHAS = (0.3, 0.5, 0.7)


def _admin(url: str):
    import psycopg

    return psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True)


def _ensure_database(url: str) -> None:
    name = url.rsplit("/", 1)[1]
    with _admin(url) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def _drop_database(url: str) -> None:
    with _admin(url) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--no-setup", action="store_true")
    parser.add_argument("--repeat", type=int, default=3, help="timed hybrid searches per query")
    parser.add_argument("--smoke", action="store_true", help="8 queries, own database (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.repeat = 1
    url = args.database_url or (
        smoke_database_url(DEFAULT_URL, "retrieval") if args.smoke else DEFAULT_URL
    )
    try:
        run(args, url)
    finally:
        if args.smoke and not args.database_url:
            from django.db import connections

            connections.close_all()
            _drop_database(url)


def _setup(*, smoke_ids: list[str] | None) -> None:
    """Migrate, load the demo's papers and embed them (all, or for ``smoke_ids`` those and
    enough others to make ``SMOKE_PAPERS``). Idempotent: a second run only checks."""
    from django.core.management import call_command

    from papers.categories import category_sync
    from papers.embeddings.store import embed_papers
    from papers.models import Paper
    from topics.importers.reference import reference_page_import

    call_command("migrate", verbosity=0)
    if not Paper.objects.exists():
        category_sync()
        reference_page_import(
            data=json.loads((ROOT / "topics/data/llm-agent-training.json").read_text("utf-8"))
        )
        call_command("harvest", "--recorded", "--sync", verbosity=0)
    ids = list(Paper.objects.order_by("-submitted", "-id").values_list("id", flat=True))
    if smoke_ids is not None:
        wanted = list(Paper.objects.filter(arxiv_id__in=smoke_ids).values_list("id", flat=True))
        others = [paper_id for paper_id in ids if paper_id not in set(wanted)]
        ids = wanted + others[: SMOKE_PAPERS - len(wanted)]
    started = time.perf_counter()
    embedded = embed_papers(ids)
    seconds = time.perf_counter() - started
    rate = f", {embedded / seconds:.1f} papers/s" if embedded else ""
    print(f"setup: {len(ids)} papers to embed, {embedded} embedded now in {seconds:.1f} s{rate}")


class BM25:
    """Okapi BM25 over ``documents`` (strings), tokens from ``ask.text.terms``."""

    def __init__(self, documents: list[str], *, k1: float = 1.5, b: float = 0.75):
        import numpy as np
        from sklearn.feature_extraction.text import CountVectorizer

        from ask.text import terms

        self.vectorizer = CountVectorizer(analyzer=terms)
        counts = self.vectorizer.fit_transform(documents).tocsc().astype(np.float64)
        lengths = np.asarray(counts.sum(axis=1)).ravel()
        frequency = np.diff(counts.indptr)
        n = counts.shape[0]
        self.idf = np.log(1 + (n - frequency + 0.5) / (frequency + 0.5))
        # The term-frequency part of every (document, term) cell, computed once.
        norm = k1 * (1 - b + b * lengths / lengths.mean())
        rows = counts.indices
        counts.data = counts.data * (k1 + 1) / (counts.data + norm[rows])
        self.weights = counts.tocsr()

    def ranking(self, query: str, depth: int) -> list[int]:
        import numpy as np

        found = self.vectorizer.transform([query])
        columns = found.indices
        if not len(columns):
            return []
        scores = self.weights[:, columns] @ self.idf[columns]
        order = np.argsort(-scores)[:depth]
        return [int(i) for i in order if scores[i] > 0]


def _mix(keyword, semantic, alpha: float) -> list[int]:
    top = max((rank for _, rank in keyword), default=0.0) or 1.0
    scores: dict[int, float] = {}
    for paper_id, rank in keyword:
        scores[paper_id] = (1 - alpha) * rank / top
    floor = min((cosine for _, cosine in semantic), default=0.0)
    for paper_id, cosine in semantic:
        scores[paper_id] = scores.get(paper_id, 0.0) + alpha * cosine
    # A keyword match outside the semantic list counts the lowest cosine listed.
    for paper_id, _ in keyword:
        if paper_id not in dict(semantic):
            scores[paper_id] += alpha * floor
    return [paper_id for paper_id, _ in sorted(scores.items(), key=lambda item: -item[1])]


def _sharing_title_stems(data: list[dict], field: str) -> int:
    """How many of the queries (``field`` of each item) share an English stem with the title
    of their paper (PostgreSQL's 'english' configuration)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM unnest(%s::text[], %s::text[]) AS q(query, arxiv_id) "
            "JOIN papers_paper p ON p.arxiv_id = q.arxiv_id "
            "WHERE tsvector_to_array(to_tsvector('english', p.title)) "
            "&& tsvector_to_array(to_tsvector('english', q.query))",
            [[item[field] for item in data], [item["arxiv_id"] for item in data]],
        )
        return cursor.fetchone()[0]


def _score(rankings: dict[str, list[int]], targets: dict[str, int]) -> tuple[float, float, float]:
    hit1 = hit10 = reciprocal = 0.0
    for query, target in targets.items():
        ranking = rankings[query][:DEPTH]
        if target in ranking:
            position = ranking.index(target) + 1
            hit1 += position == 1
            hit10 += position <= 10
            reciprocal += 1 / position
    n = len(targets)
    return hit1 / n, hit10 / n, reciprocal / n


def run(args, url: str) -> None:
    if url.startswith("postgres") and not args.no_setup:
        _ensure_database(url)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "topicsite.settings.local")
    # Celery eager (tagging and embedding run here, no worker); caches in process memory.
    os.environ.pop("REDIS_URL", None)

    import django

    django.setup()
    from django.db import connection

    from papers.models import Paper
    from topics.search import any_word_ranked, fuse, papers_search

    data = json.loads(QUERIES.read_text("utf-8"))["queries"]
    if args.smoke:
        data = data[:SMOKE_QUERIES]
    if not args.no_setup:
        _setup(smoke_ids=[item["arxiv_id"] for item in data] if args.smoke else None)

    by_arxiv_id = dict(Paper.objects.values_list("arxiv_id", "id"))
    missing = [item["arxiv_id"] for item in data if item["arxiv_id"] not in by_arxiv_id]
    if missing:
        raise SystemExit(f"papers of these queries are not stored: {', '.join(missing)}")
    papers = list(Paper.objects.values_list("id", "title", "abstract"))
    bm25 = BM25([f"{title}\n{abstract}" for _, title, abstract in papers])
    print(f"database: {connection.vendor}; {len(papers):,} papers; {len(data)} queries")
    figures = {}
    modes_seen = set()
    for field in ("query", "gist"):
        targets = {item[field]: by_arxiv_id[item["arxiv_id"]] for item in data}
        print(
            f"\n[{field}] {_sharing_title_stems(data, field)} of {len(data)} share a stem "
            "with their paper's title"
        )
        rankings: dict[str, dict[str, list[int]]] = {"BM25": {}, "keyword (PostgreSQL FTS)": {}}
        rankings |= {"semantic": {}, "hybrid": {}, "RRF keyword + semantic": {}}
        rankings |= {f"mix alpha {alpha}": {} for alpha in MIX_ALPHAS}
        for query in targets:
            rankings["BM25"][query] = [papers[i][0] for i in bm25.ranking(query, DEPTH)]
            keyword = papers_search(q=query, mode="keyword").ranked
            semantic_results = papers_search(q=query, mode="semantic")
            modes_seen.add(semantic_results.mode)
            semantic = semantic_results.ranked
            hybrid = papers_search(q=query, mode="hybrid")
            modes_seen.add(hybrid.mode)
            candidates = [paper_id for paper_id, _ in hybrid.ranked]
            words = any_word_ranked(candidates, query)
            rankings["keyword (PostgreSQL FTS)"][query] = [paper_id for paper_id, _ in keyword]
            rankings["semantic"][query] = [paper_id for paper_id, _ in semantic]
            rankings["hybrid"][query] = candidates
            rankings["RRF keyword + semantic"][query] = [
                paper_id for paper_id, _ in fuse([keyword, semantic])
            ]
            for alpha in MIX_ALPHAS:
                rankings[f"mix alpha {alpha}"][query] = _mix(words, semantic, alpha)
        print(f"{'ranking':<26} {'hit@1':>6} {'hit@10':>7} {'MRR':>6}")
        for name, ranked in rankings.items():
            figures[field, name] = _score(ranked, targets)
            hit1, hit10, mrr = figures[field, name]
            print(f"{name:<26} {hit1:6.2f} {hit10:7.2f} {mrr:6.3f}")
    print("targets: hybrid hit@10 >= 0.85, hit@1 >= 0.50")

    times = []
    encoding = []
    from papers.embeddings.encoder import get_encoder

    for _ in range(args.repeat):
        for item in data:
            for field in ("query", "gist"):
                started = time.perf_counter()
                papers_search(q=item[field], mode="hybrid")
                times.append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                get_encoder().encode([item[field]])
                encoding.append((time.perf_counter() - started) * 1000)
    print(
        f"hybrid search time: median {statistics.median(times):.1f} ms, max {max(times):.1f} ms "
        f"over {len(times)} searches ({len(papers):,} papers), of which encoding the query: "
        f"median {statistics.median(encoding):.1f} ms"
    )
    if args.smoke:
        if modes_seen != {"semantic", "hybrid"}:
            raise SystemExit(f"smoke: semantic search did not run (modes {modes_seen})")
        if not figures["query", "hybrid"][1]:
            raise SystemExit("smoke: hybrid search found no query's paper in its first ten")


if __name__ == "__main__":
    main()
