"""Benchmark ``manage.py import_snapshot`` on PostgreSQL: papers/s, ratio to a plain COPY, memory.

    .venv/bin/python bench/bench_snapshot_import.py [--papers 100000] [--batch-size 5000]
        [--authors real|fresh] [--gzip] [--keep] [--smoke]
        [--database-url postgres://postgres@127.0.0.1:5432/topicsite_bench]

1. Input: ``--papers`` Kaggle-format lines made by resampling the real records shipped in
   ``papers/recorded/`` (the 200 snapshot lines and the 1,000 arXivRaw records, written as
   snapshot lines by ``papers.parsers.snapshot.snapshot_line``): each line is a real record
   (title, abstract, categories, versions, affiliations as they were) under a new identifier.
   Its authors are the real ones (``--authors real``: 1,200 records' authors, so the same
   names come back again and again, fewer new authors than a real backfill meets) or have
   their surnames redrawn from the pool (``--authors fresh``: nearly every name new, more
   than a real backfill meets); the output gives the share of distinct names. Identifiers
   are ``YYMM.NNNNN`` with YYMM from 1501 to 2012 and NNNNN from 50000: valid arXiv
   identifiers that can never be real, since arXiv numbered fewer than 20,000 papers in each
   of those (closed) months. Each copy's dates (versions, ``update_date``) are moved by one
   offset: v1 on a day drawn evenly from the ten years that end where the record's last
   date falls on the day of the run (no date in the future): copies of one record keeping
   its date made the newest hundred thousand papers a hundred records over and over, a
   corpus in which a common word can be missing from the newest 80,000 papers, as in no
   real one.
2. A fresh database (dropped and created; dropped again at the end unless ``--keep``, with
   ``<name>_fresh``, its migrated copy the second fresh database is made from): migrations,
   categories, then ``manage.py import_snapshot FILE --no-tag`` in a child process, first on
   a tenth of the file and then on the whole file (each on an empty database), so the peak
   memory of both can be compared; then the whole file again (every paper unchanged).
3. A plain ``COPY`` of the rows the import wrote (every row of the paper, version, cross-list,
   author, affiliation, authorship and affiliation tables, read back with ``COPY TO``) into
   bare tables of the columns the import writes (no index, no constraint, and no generated
   column: the paper's ``search_vector`` is PostgreSQL's work, not data the import sends): the
   fastest PostgreSQL can take those rows in.

Prints papers/s (measured by the command around the import itself, and wall-clock with the
process start), the ratio import / COPY, the peak RSS of the importing process (``wait4``),
row counts and the load average (other work on the machine slows every figure). Needs
PostgreSQL only (``--no-tag``: nothing is queued).

``--smoke`` (what CI runs): 200 papers in batches of 50, on a database of its own
(``bench/smoke.py``); exits non-zero unless every paper is created, then found unchanged.
"""

from __future__ import annotations

import argparse
import datetime as dt
import email.utils
import gzip
import io
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from papers.identifiers import parse_arxiv_id  # noqa: E402
from papers.parsers.oai import parse_oai_page  # noqa: E402
from papers.parsers.snapshot import snapshot_line  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from smoke import smoke_database_url  # noqa: E402

DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/topicsite_bench"
RECORDED = ROOT / "papers" / "recorded"
SNAPSHOT_HEAD = RECORDED / "snapshot" / "arxiv-metadata-oai-snapshot_head200.jsonl"
ARXIV_RAW_PAGE = RECORDED / "oai" / "listrecords_arXivRaw_token_496549-46001.xml"
PYTHON = sys.executable
MANAGE = str(ROOT / "manage.py")

# Synthetic identifiers: months 1501-2012, numbers 50000-99999 (see the module docstring).
FIRST_NUMBER = 50_000
PER_MONTH = 100_000 - FIRST_NUMBER
MONTHS = [f"{year:02d}{month:02d}" for year in range(15, 21) for month in range(1, 13)]

# Tables the import writes, in dependency order, with their columns.
TABLES = (
    "papers_author",
    "papers_affiliation",
    "papers_paper",
    "papers_paperversion",
    "papers_paper_cross_lists",
    "papers_authorship",
    "papers_authorship_affiliations",
    "papers_paperaffiliation",
)
RESULT_LINE = re.compile(
    r"(?P<lines>\d+) lines: (?P<created>\d+) created, (?P<updated>\d+) updated, "
    r"(?P<unchanged>\d+) unchanged, (?P<rejected>\d+) rejected"
    r"(?:, (?P<duplicates>\d+) duplicates)? in (?P<seconds>[\d.]+) s"
)


def synthetic_id(index: int) -> str:
    """The ``index``-th (0-based) benchmark identifier; raises ValueError past 3.6 million."""
    month, offset = divmod(index, PER_MONTH)
    if month >= len(MONTHS):
        raise ValueError(f"at most {len(MONTHS) * PER_MONTH} synthetic identifiers")
    return f"{MONTHS[month]}.{FIRST_NUMBER + offset:05d}"


def real_pool() -> list[dict]:
    """The real records as snapshot objects: 200 Kaggle lines and 1,000 arXivRaw records."""
    pool = [json.loads(line) for line in SNAPSHOT_HEAD.read_bytes().splitlines() if line.strip()]
    page = parse_oai_page(ARXIV_RAW_PAGE.read_bytes(), source=ARXIV_RAW_PAGE.name)
    pool += [json.loads(snapshot_line(record)) for record in page.records]
    return pool


# The span write_input spreads the copies' submission dates over, ending today (days).
DATE_SPREAD_DAYS = 3650


def _redate(data: dict, rng: random.Random, as_of: dt.date) -> None:
    """Move every date of the snapshot object ``data`` (its versions' RFC 2822 ``created``,
    ``update_date``) by one offset that puts v1 on a day drawn evenly from the
    :data:`DATE_SPREAD_DAYS` before ``as_of`` while its last date stays on or before
    ``as_of`` (a record whose dates span longer starts that span before ``as_of``), in
    place."""
    created = [email.utils.parsedate_to_datetime(v["created"]) for v in data["versions"]]
    if not created:
        return
    first = created[0].date()
    last = max(
        [moment.date() for moment in created]
        + ([dt.date.fromisoformat(data["update_date"])] if data.get("update_date") else [])
    )
    latest_start = as_of - (last - first)
    submitted = latest_start - dt.timedelta(days=rng.randrange(DATE_SPREAD_DAYS))
    submitted = min(submitted, latest_start)
    offset = submitted - first
    data["versions"] = [
        {**version, "created": email.utils.format_datetime(moment + offset, usegmt=True)}
        for version, moment in zip(data["versions"], created, strict=True)
    ]
    if data.get("update_date"):
        updated = dt.date.fromisoformat(data["update_date"]) + offset
        data["update_date"] = updated.isoformat()


def write_input(path: Path, papers: int, *, fresh_authors: bool, seed: int = 20260401) -> dict:
    """Write ``papers`` resampled lines to ``path`` (gzip when it ends in .gz), with surnames
    redrawn when ``fresh_authors``; returns counts."""
    pool = real_pool()
    real_ids = {parse_arxiv_id(data["id"])[0] for data in pool}
    surnames = sorted(
        {entry[0].split()[-1] for data in pool for entry in data["authors_parsed"] if entry[0]}
    )
    rng = random.Random(seed)
    as_of = dt.date.today()
    authorships = 0
    names = set()
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as out:
        for index in range(papers):
            data = dict(rng.choice(pool))
            arxiv_id = synthetic_id(index)
            if parse_arxiv_id(arxiv_id) != (arxiv_id, None) or arxiv_id in real_ids:
                raise AssertionError(f"{arxiv_id} is not a valid, unused identifier")
            data["id"] = arxiv_id
            _redate(data, rng, as_of)
            parsed = []
            for keyname, forenames, suffix, *affiliations in data["authors_parsed"]:
                words = keyname.split()
                if not forenames and len(words) > 1:
                    # A name the source did not split (an arXivRaw line): first names, surname.
                    forenames, keyname = " ".join(words[:-1]), words[-1]
                if forenames and fresh_authors:
                    keyname = rng.choice(surnames)
                parsed.append([keyname, forenames, suffix, *affiliations])
                names.add((keyname, forenames, suffix))
            data["authors_parsed"] = parsed
            data["authors"] = ", ".join(
                " ".join(part for part in (forenames, keyname, suffix) if part)
                + "".join(f" ({affiliation})" for affiliation in affiliations)
                for keyname, forenames, suffix, *affiliations in parsed
            )
            authorships += len(parsed)
            out.write(json.dumps(data, ensure_ascii=False) + "\n")
    return {
        "pool": len(pool),
        "authorships": authorships,
        "names": len(names),
        "bytes": path.stat().st_size,
    }


def database_admin(url: str):
    """A connection to the server's ``postgres`` database, to create and drop ``url``'s."""
    parts = urlsplit(url)
    return psycopg.connect(urlunsplit(parts._replace(path="/postgres")), autocommit=True)


def recreate_database(url: str) -> None:
    """Drop ``url``'s database and make it anew, migrated and with the categories loaded. The
    first call in a process migrates and keeps a copy (``<name>_fresh``); later calls copy it
    (``CREATE DATABASE … TEMPLATE``), which takes a fraction of the migrations' time."""
    name = urlsplit(url).path.lstrip("/")
    fresh = f"{name}_fresh"
    with database_admin(url) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if url in _FRESH_COPIES:
            admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{fresh}"')
            return
        admin.execute(f'DROP DATABASE IF EXISTS "{fresh}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    environment = {**os.environ, "DATABASE_URL": url}
    environment.pop("REDIS_URL", None)
    for command in (["migrate", "-v0"], ["load_categories"]):
        subprocess.run(
            [PYTHON, MANAGE, *command], env=environment, check=True, stdout=subprocess.DEVNULL
        )
    with database_admin(url) as admin:
        admin.execute(f'CREATE DATABASE "{fresh}" TEMPLATE "{name}"')
    _FRESH_COPIES.add(url)


# Databases recreate_database has migrated in this process, with a fresh copy kept.
_FRESH_COPIES: set[str] = set()


def drop_database(url: str) -> None:
    """Drop ``url``'s database and its fresh copy, if there."""
    name = urlsplit(url).path.lstrip("/")
    with database_admin(url) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'DROP DATABASE IF EXISTS "{name}_fresh" WITH (FORCE)')
    _FRESH_COPIES.discard(url)


def run_import(url: str, path: Path, batch_size: int) -> dict:
    """``manage.py import_snapshot`` in a child process: its figures, wall time and peak RSS."""
    environment = {**os.environ, "DATABASE_URL": url, "DJANGO_DEBUG": "false"}
    # No Redis: nothing to queue (--no-tag), and the benchmark measures the import alone.
    environment.pop("REDIS_URL", None)
    command = [PYTHON, MANAGE, "import_snapshot", str(path), "--no-tag"]
    command += ["--batch-size", str(batch_size)]
    started = time.monotonic()
    with tempfile.TemporaryFile() as output, tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(command, env=environment, stdout=output, stderr=errors)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - started
        output.seek(0)
        errors.seek(0)
        text, error_text = output.read().decode(), errors.read().decode()
    if process.returncode != 0:
        raise SystemExit(f"import_snapshot failed ({process.returncode}):\n{text}\n{error_text}")
    match = RESULT_LINE.search(text)
    if not match:
        raise SystemExit(f"unexpected output from import_snapshot:\n{text}")
    figures = {name: float(value or 0) for name, value in match.groupdict().items()}
    papers = figures["created"] + figures["updated"] + figures["unchanged"]
    return {
        **figures,
        "papers": papers,
        # The command prints its time to 0.1 s: a tiny import can print 0.0.
        "rate": papers / max(figures["seconds"], 0.05),
        "wall": wall,
        "wall_rate": papers / wall,
        "max_rss_mb": usage.ru_maxrss / 1024,  # Linux reports kilobytes
    }


def written_columns(cursor, table: str) -> str:
    """``table``'s columns a writer sends, comma-separated, in table order: every column but
    the generated ones (PostgreSQL computes those, and ``COPY TO`` leaves them out)."""
    cursor.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
        "AND NOT attisdropped AND attgenerated = '' ORDER BY attnum",
        [table],
    )
    return ", ".join(f'"{name}"' for (name,) in cursor.fetchall())


def plain_copy(url: str) -> dict:
    """Time a COPY of every row the import wrote into bare tables of the columns it writes."""
    with psycopg.connect(url) as conn, conn.cursor() as cursor:
        dumps = {}
        counts = {}
        columns = {}
        for table in TABLES:
            columns[table] = written_columns(cursor, table)
            buffer = io.BytesIO()
            with cursor.copy(f"COPY {table} ({columns[table]}) TO STDOUT") as copy:
                for data in copy:
                    buffer.write(data)
            dumps[table] = buffer.getvalue()
            counts[table] = cursor.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            cursor.execute(f"DROP TABLE IF EXISTS bare_{table}")
            cursor.execute(
                f"CREATE TABLE bare_{table} AS SELECT {columns[table]} FROM {table} WITH NO DATA"
            )
        conn.commit()
        started = time.monotonic()
        for table in TABLES:
            with cursor.copy(f"COPY bare_{table} ({columns[table]}) FROM STDIN") as copy:
                copy.write(dumps[table])
        conn.commit()
        seconds = time.monotonic() - started
        for table in TABLES:
            cursor.execute(f"DROP TABLE bare_{table}")
        conn.commit()
    return {
        "seconds": seconds,
        "counts": counts,
        "megabytes": sum(map(len, dumps.values())) / 2**20,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=100_000)
    parser.add_argument("--batch-size", type=int, default=5_000)
    parser.add_argument("--database-url", default=None, help=f"default {DEFAULT_URL}")
    parser.add_argument(
        "--authors",
        choices=("real", "fresh"),
        default="real",
        help="authors as in the real records, or with surnames redrawn (nearly all new names)",
    )
    parser.add_argument("--gzip", action="store_true", help="write the input gzip-compressed")
    parser.add_argument("--keep", action="store_true", help="keep the database and the input")
    parser.add_argument(
        "--smoke", action="store_true", help="200 papers, batches of 50, its own database (CI)"
    )
    options = parser.parse_args()
    if options.smoke:
        options.papers, options.batch_size = 200, 50
    url = options.database_url or (
        smoke_database_url(DEFAULT_URL, "snapshot") if options.smoke else DEFAULT_URL
    )

    workdir = Path(tempfile.mkdtemp(prefix="bench-snapshot-"))
    suffix = ".jsonl.gz" if options.gzip else ".jsonl"
    full = workdir / f"snapshot-{options.papers}{suffix}"
    tenth = workdir / f"snapshot-{options.papers // 10}{suffix}"
    started = time.monotonic()
    fresh = options.authors == "fresh"
    stats = write_input(full, options.papers, fresh_authors=fresh)
    write_input(tenth, options.papers // 10, fresh_authors=fresh)
    print(
        f"input: {options.papers:,} papers resampled from {stats['pool']:,} real records, "
        f"{stats['authorships'] / options.papers:.1f} authors per paper, "
        f"{stats['names']:,} distinct author names ({options.authors} authors: "
        f"{stats['names'] / stats['authorships']:.0%} of authorships), "
        f"{stats['bytes'] / 2**20:.0f} MB ({time.monotonic() - started:.0f} s to write)"
    )

    load_before = os.getloadavg()[0]
    try:
        recreate_database(url)
        small = run_import(url, tenth, options.batch_size)
        recreate_database(url)
        result = run_import(url, full, options.batch_size)
        copy = plain_copy(url)
        again = run_import(url, full, options.batch_size)
    finally:
        if not options.keep:
            drop_database(url)
            for path in (full, tenth):
                path.unlink(missing_ok=True)
            workdir.rmdir()

    copy_rate = result["papers"] / copy["seconds"]
    print(
        f"import_snapshot: {result['papers']:,.0f} papers in {result['seconds']:.1f} s = "
        f"{result['rate']:,.0f} papers/s (wall with process start {result['wall']:.1f} s = "
        f"{result['wall_rate']:,.0f} papers/s), batch size {options.batch_size:,}"
    )
    print(
        f"plain COPY of the same rows ({copy['megabytes']:.0f} MB) into bare tables: "
        f"{copy['seconds']:.2f} s = {copy_rate:,.0f} papers/s; "
        f"ratio import/COPY = {result['rate'] / copy_rate:.2f} "
        f"(COPY alone is {copy_rate / result['rate']:.1f}x faster)"
    )
    print(
        f"peak RSS of the importing process: {result['max_rss_mb']:.0f} MB for "
        f"{result['papers']:,.0f} papers, {small['max_rss_mb']:.0f} MB for "
        f"{small['papers']:,.0f} papers"
    )
    print(
        f"re-import of the same file (every paper unchanged): {again['rate']:,.0f} papers/s "
        f"({again['unchanged']:,.0f} unchanged, {again['created'] + again['updated']:,.0f} "
        "written)"
    )
    print("rows: " + ", ".join(f"{table} {count:,}" for table, count in copy["counts"].items()))
    print(
        f"load average (1 min) {load_before:.2f} before, {os.getloadavg()[0]:.2f} after, on "
        f"{os.cpu_count()} CPUs: other work on the machine slows every figure"
    )
    if options.smoke:
        expected = (options.papers // 10, options.papers, options.papers)
        found = (small["created"], result["created"], again["unchanged"])
        if found != expected or small["rejected"] or result["rejected"] or again["rejected"]:
            raise SystemExit(
                f"smoke: expected {expected} papers created, created, unchanged; got {found} "
                f"(rejected {small['rejected']:.0f}, {result['rejected']:.0f}, "
                f"{again['rejected']:.0f})"
            )


if __name__ == "__main__":
    main()
