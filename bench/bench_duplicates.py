"""Near-duplicate separation: how well the TF-IDF similarity of ``papers.duplicates`` tells planted
copies of a paper from real companion papers, and the threshold it is linked at.

    .venv/bin/python bench/bench_duplicates.py [--copies 400] [--seed 16] [--smoke]

Data, shipped in the repository, no database needed: the 1,317 arXiv papers the demo harvests
(``papers/recorded/``).

- **Planted copies**: for ``--copies`` papers picked at random (fixed seed), a copy with light
  edits, one kind each, in turn: whitespace (line breaks and doubled spaces), TeX (a word
  wrapped in ``\\emph{}``, an accent written ``{\\'e}``, ``$`` around a number), a version
  note appended to the abstract ("This version corrects typos and updates references."),
  a typo (two letters swapped in a word of the title and of the abstract), and all four.
- **Companion papers**: every pair of different papers sharing one of their first three
  authors (an author with fewer than 15 papers here, so not a collaboration's name list): the
  same people writing on a related topic, what must not be linked.

Each pair is scored as detection scores it (``papers.duplicates.text_similarities``) in two
settings: the IDF fitted on the whole corpus (a big harvest batch) and on a small block (the
pair plus 20 other papers, a single paper's detection). Printed: the distribution of each
class, the gap between the lowest copy and the highest companion, and precision/recall at
``papers.duplicates.DUPLICATE_THRESHOLD``. ``--smoke`` (CI): 40 copies.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

EDITS = ("whitespace", "tex", "version note", "typo", "all")
BLOCK_OTHERS = 20


def load_records() -> list:
    from papers.sources.recorded import recorded_sources

    papers = {}
    for source in recorded_sources():
        for chunk in source.chunks():
            for record in chunk.records:
                papers[record.arxiv_id] = record
    return [papers[key] for key in sorted(papers)]


def _typo(text: str, rng: random.Random) -> str:
    words = [i for i, w in enumerate(text.split(" ")) if len(w) > 5 and w.isalpha()]
    if not words:
        return text
    parts = text.split(" ")
    i = rng.choice(words)
    w = parts[i]
    k = rng.randrange(1, len(w) - 2)
    parts[i] = w[:k] + w[k + 1] + w[k] + w[k + 2 :]
    return " ".join(parts)


def _tex(text: str, rng: random.Random) -> str:
    parts = text.split(" ")
    long = [i for i, w in enumerate(parts) if len(w) > 6 and w.isalpha()]
    if long:
        i = rng.choice(long)
        parts[i] = "\\emph{" + parts[i] + "}"
    text = " ".join(parts).replace("e", "{\\'e}", 1)
    return text.replace(" 2 ", " $2$ ", 1)


def plant(title: str, abstract: str, edit: str, rng: random.Random) -> tuple[str, str]:
    """A copy of (``title``, ``abstract``) with the light ``edit`` (one of :data:`EDITS`)."""
    if edit in ("whitespace", "all"):
        abstract = abstract.replace(". ", ".\n  ").replace(", ", ",  ")
        title = "  " + title.replace(" ", "\n ", 1)
    if edit in ("tex", "all"):
        abstract = _tex(abstract, rng)
    if edit in ("version note", "all"):
        abstract = abstract + " This version corrects typos and updates references."
    if edit in ("typo", "all"):
        title, abstract = _typo(title, rng), _typo(abstract, rng)
    return title, abstract


def companions(records: list) -> list[tuple[int, int]]:
    by_author = collections.defaultdict(set)
    for i, record in enumerate(records):
        for author in record.authors[:3]:
            by_author[author.name].add(i)
    pairs = set()
    for ids in by_author.values():
        if len(ids) < 15:
            pairs.update(itertools.combinations(sorted(ids), 2))
    return sorted(pairs)


def describe(name: str, values: np.ndarray) -> None:
    q = np.percentile(values, [0, 5, 50, 95, 100])
    print(
        f"  {name:<22} n={len(values):<5} min {q[0]:.3f}  p5 {q[1]:.3f}  median {q[2]:.3f}"
        f"  p95 {q[3]:.3f}  max {q[4]:.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=400)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--smoke", action="store_true", help="40 copies (CI)")
    options = parser.parse_args()
    if options.smoke:
        options.copies = 40

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "topicsite.settings.local")
    import logging

    import django

    django.setup()
    logging.disable(logging.WARNING)
    from papers.duplicates import DUPLICATE_THRESHOLD, duplicate_text, text_similarities

    started = time.perf_counter()
    rng = random.Random(options.seed)
    records = load_records()
    titles = [duplicate_text(r.title) for r in records]
    abstracts = [duplicate_text(r.abstract) for r in records]
    picked = rng.sample(range(len(records)), min(options.copies, len(records)))
    copies, copy_edits = [], []
    all_titles, all_abstracts = list(titles), list(abstracts)
    for n, i in enumerate(picked):
        edit = EDITS[n % len(EDITS)]
        title, abstract = plant(records[i].title, records[i].abstract, edit, rng)
        all_titles.append(duplicate_text(title))
        all_abstracts.append(duplicate_text(abstract))
        copies.append((i, len(records) + n))
        copy_edits.append(edit)
    companion_pairs = companions(records)
    if options.smoke:
        companion_pairs = companion_pairs[:40]

    # The whole corpus as one block: IDF of a big batch.
    corpus_copies = np.array(text_similarities(all_titles, all_abstracts, copies))
    corpus_companions = np.array(text_similarities(all_titles, all_abstracts, companion_pairs))

    # Small blocks: the pair and 20 other papers, as when one paper is checked alone.
    def block_score(a: int, b: int) -> float:
        others = rng.sample(range(len(records)), BLOCK_OTHERS)
        block = [a, b] + [k for k in others if k not in (a, b)]
        return text_similarities(
            [all_titles[k] for k in block], [all_abstracts[k] for k in block], [(0, 1)]
        )[0]

    block_copies = np.array([block_score(a, b) for a, b in copies])
    block_companions = np.array([block_score(a, b) for a, b in companion_pairs])

    print(
        f"{len(records)} recorded arXiv papers; {len(copies)} planted copies "
        f"({', '.join(EDITS)} in turn); {len(companion_pairs)} companion pairs "
        "(a shared author among the first three)"
    )
    for label, planted, real in (
        ("IDF over the corpus", corpus_copies, corpus_companions),
        (f"IDF over a block of {BLOCK_OTHERS + 2}", block_copies, block_companions),
    ):
        print(f"{label}:")
        describe("planted copies", planted)
        for edit in EDITS:
            describe(f"  {edit}", planted[[e == edit for e in copy_edits]])
        describe("companion papers", real)
        print(f"  gap (lowest copy - highest companion): {planted.min() - real.max():+.3f}")
        found = (planted >= DUPLICATE_THRESHOLD).sum()
        wrong = (real >= DUPLICATE_THRESHOLD).sum()
        print(
            f"  at threshold {DUPLICATE_THRESHOLD}: recall {found / len(planted):.3f} "
            f"({found}/{len(planted)}), companions linked {wrong}/{len(real)}, "
            f"precision {found / max(1, found + wrong):.3f}"
        )
    print(f"{time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
