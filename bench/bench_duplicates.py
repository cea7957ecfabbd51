"""Near-duplicate separation: how well the TF-IDF similarity of ``papers.duplicates`` tells planted
copies of a paper from real companion papers, and the threshold it is linked at.

    .venv/bin/python bench/bench_duplicates.py [--copies 400] [--stored 200] [--seed 16]
        [--no-database] [--keep] [--smoke]
        [--database-url postgres://postgres@127.0.0.1:5432/topicsite_bench_duplicates]

Data, shipped in the repository: the 1,317 arXiv papers the demo harvests
(``papers/recorded/``). Part 1 needs no database; part 2 works in a database of its own
(dropped and created, dropped again at the end unless ``--keep``).

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
``papers.duplicates.DUPLICATE_THRESHOLD``.

Part 2, end to end in PostgreSQL: the recorded papers harvested (detection runs on each stored
batch, as always: how many real pairs it links), then ``--stored`` of them stored again as
local copies (no arXiv id; edits as above in turn; half keep the first author, half have no
authors) and detected in one batch (``papers.duplicates.duplicates_detect``: blocking,
similarity, links). Printed: copies linked to their arXiv paper, other pairs linked, papers/s.

``--smoke`` (CI): 40 copies in each part, a database of its own (``bench/smoke.py``); exits
non-zero when no planted copy is linked.
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
from urllib.parse import urlsplit, urlunsplit

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from smoke import smoke_database_url  # noqa: E402

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/topicsite_bench_duplicates"

EDITS = ("whitespace", "tex", "version note", "typo", "all")
BLOCK_OTHERS = 20


def recreate_database(url: str, *, drop_only: bool = False) -> None:
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    admin_url = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if not drop_only:
            connection.execute(f'CREATE DATABASE "{name}"')


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
    parser.add_argument(
        "--stored", type=int, default=200, help="Planted copies stored in PostgreSQL (part 2)."
    )
    parser.add_argument("--no-database", action="store_true", help="Part 1 only.")
    parser.add_argument("--database-url", default=None, help=f"default {DEFAULT_DATABASE_URL}")
    parser.add_argument("--keep", action="store_true", help="Keep the database afterwards.")
    parser.add_argument("--smoke", action="store_true", help="40 copies, own database (CI)")
    options = parser.parse_args()
    if options.smoke:
        options.copies = options.stored = 40
    options.database_url = options.database_url or (
        smoke_database_url(DEFAULT_DATABASE_URL, "duplicates")
        if options.smoke
        else DEFAULT_DATABASE_URL
    )

    if not options.no_database:
        recreate_database(options.database_url)
        os.environ["DATABASE_URL"] = options.database_url
    # No broker: stored papers are tagged and checked in the harvest, as on the embedded default.
    os.environ.pop("REDIS_URL", None)
    os.environ["DJANGO_SETTINGS_MODULE"] = "topicsite.settings.local"
    import logging

    import django

    django.setup()
    logging.disable(logging.WARNING)
    separation(options)
    if options.no_database:
        return
    try:
        stored(options)
    finally:
        from django.db import connections

        connections.close_all()
        if not options.keep:
            recreate_database(options.database_url, drop_only=True)


def separation(options) -> None:
    """Part 1: the similarity of planted copies and companion papers, no database."""
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


def stored(options) -> None:
    """Part 2: detection end to end in PostgreSQL (blocking, similarity, links)."""
    from io import StringIO

    from django.core.management import call_command
    from django.db import connection

    from papers.duplicates import duplicates_detect
    from papers.models import Authorship, Paper, PaperDuplicate

    print(f"\nIn PostgreSQL ({options.database_url.rsplit('/', 1)[-1]}):")
    quiet = StringIO()
    for command, *arguments in (
        ("migrate", "--noinput"),
        ("load_categories",),
        ("harvest", "--recorded"),
    ):
        call_command(command, *arguments, stdout=quiet, verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE papers_paper")  # as autovacuum would after a bulk load
    real = Paper.objects.count()
    linked_real = PaperDuplicate.objects.count()
    print(
        f"  harvest of the recorded papers (detection ran on each stored batch): {real} papers, "
        f"{linked_real} pairs linked"
    )
    rng = random.Random(options.seed + 1)
    originals = rng.sample(list(Paper.objects.order_by("pk")), min(options.stored, real))
    pairs = []
    for n, original in enumerate(originals):
        title, abstract = plant(original.title, original.abstract, EDITS[n % len(EDITS)], rng)
        copy = Paper.objects.create(
            import_key=f"bench-duplicates:{original.pk}",
            title=title,
            abstract=abstract,
            primary_category_id=original.primary_category_id,
            submitted=original.submitted,
        )
        first = Authorship.objects.filter(paper=original, position=0).first()
        if first is not None and n % 2 == 0:  # half keep the first author, half have none
            Authorship.objects.create(paper=copy, author_id=first.author_id, position=0)
        pairs.append((copy.pk, original.pk))
    started = time.perf_counter()
    result = duplicates_detect(paper_ids=[copy for copy, _ in pairs])
    seconds = time.perf_counter() - started
    links = set(PaperDuplicate.objects.values_list("paper_id", "original_id"))
    found = sum(pair in links for pair in pairs)
    wrong = len(links) - found - linked_real
    print(
        f"  {len(pairs)} planted local copies stored, detected in one batch: {found} linked to "
        f"their arXiv paper (recall {found / len(pairs):.3f}), {wrong} other pairs linked; "
        f"{result.compared} pairs compared, {seconds:.1f} s ({len(pairs) / seconds:.0f} papers/s)"
    )
    if options.smoke and (found == 0 or result.compared == 0):
        raise SystemExit("smoke: detection linked no planted copy")


if __name__ == "__main__":
    main()
