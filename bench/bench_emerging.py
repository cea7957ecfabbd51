"""Emerging-topic clusters on real papers: how coherent the clusters of ``topics.emerging`` are
at each distance threshold, how many papers they gather, and the names they suggest.

    .venv/bin/python bench/bench_emerging.py [--papers 1317] [--thresholds 0.45,0.5,0.55,0.6,0.65]
        [--min-size 5] [--smoke]

No database. The recorded arXiv papers (``papers/recorded/``, 1,317), embedded with the
project's encoder (``papers.embeddings.encoder``: title + abstract, as stored vectors are),
clustered as ``topics.emerging.emerging_clusters_refresh`` clusters the papers no topic fits
(``cluster_vectors``: average linkage on cosine distance, clusters of ``--min-size`` papers or
more). The papers' arXiv categories are not used to cluster; they judge the result:

- **clustered**: papers in a kept cluster (the rest are too isolated to suggest a topic);
- **purity**: the share of clustered papers whose primary category is their cluster's most
  common one (1.0: every cluster within one category; a topic is finer than a category, so
  a pure cluster may still be a good topic, an impure one rarely is);
- the clusters at ``topics.emerging.DISTANCE_THRESHOLD``: size, majority category and the
  suggested name and terms (``cluster_terms``, ``suggested_name``).

``--smoke`` (CI): the first 120 papers, the shipped threshold, clusters of 3 or more.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=None, help="default: all recorded")
    parser.add_argument("--thresholds", default="0.45,0.5,0.55,0.6,0.65")
    parser.add_argument("--min-size", type=int, default=None, help="default: MIN_SIZE")
    parser.add_argument("--smoke", action="store_true", help="120 papers, one threshold (CI)")
    options = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "topicsite.settings.local")
    import logging

    import django

    django.setup()
    logging.disable(logging.WARNING)
    from bench_duplicates import load_records

    from papers.embeddings.encoder import EncoderUnavailable, get_encoder, paper_text
    from topics.emerging import (
        DISTANCE_THRESHOLD,
        MIN_SIZE,
        cluster_terms,
        cluster_vectors,
        suggested_name,
    )

    thresholds = [float(value) for value in options.thresholds.split(",")]
    min_size = options.min_size or MIN_SIZE
    if options.smoke:
        options.papers, thresholds, min_size = 120, [DISTANCE_THRESHOLD], 3
    records = load_records()[: options.papers]
    try:
        encoder = get_encoder()
    except EncoderUnavailable as error:
        raise SystemExit(f"No encoder: {error}") from None
    started = time.perf_counter()
    vectors = encoder.encode([paper_text(r.title, r.abstract) for r in records])
    seconds = time.perf_counter() - started
    print(
        f"{len(records)} recorded arXiv papers embedded by {encoder.model_id} in {seconds:.0f} s "
        f"({len(records) / seconds:.1f} papers/s)"
    )
    primary = [r.categories[0] if r.categories else "?" for r in records]
    documents = [f"{r.title}. {r.abstract}" for r in records]
    print(f"{'threshold':>9}  {'clusters':>8}  {'clustered':>14}  {'purity':>6}  largest")
    shown = None
    for threshold in thresholds:
        started = time.perf_counter()
        clusters = cluster_vectors(vectors, distance_threshold=threshold, min_size=min_size)
        took = time.perf_counter() - started
        clustered = sum(len(c) for c in clusters)
        majority = sum(
            collections.Counter(primary[i] for i in c).most_common(1)[0][1] for c in clusters
        )
        purity = majority / clustered if clustered else 0.0
        print(
            f"{threshold:>9.2f}  {len(clusters):>8}  {clustered:>5} "
            f"({clustered / len(records):4.0%})     {purity:>6.2f}  "
            f"{[len(c) for c in clusters[:5]]} ({took:.1f} s)"
        )
        if threshold == DISTANCE_THRESHOLD:
            shown = clusters
    if options.smoke and not shown:
        raise SystemExit("smoke: no cluster at the shipped threshold")
    if shown:
        print(f"\nClusters at the shipped threshold {DISTANCE_THRESHOLD} (the first 12):")
        for members, terms in list(zip(shown, cluster_terms(documents, shown), strict=True))[:12]:
            category, count = collections.Counter(primary[i] for i in members).most_common(1)[0]
            print(
                f"  {len(members):>4} papers, {count} in {category}: {suggested_name(terms)!r}"
                f" ({', '.join(terms[2:6])})"
            )


if __name__ == "__main__":
    main()
