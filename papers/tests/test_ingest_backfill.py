"""snapshot_import and ``manage.py import_snapshot`` on the real snapshot head and arXivRaw page.

The backfill writes with COPY and set-based SQL instead of the ORM; the point of most tests
here is that the database ends up exactly as ``papers_upsert`` leaves it for the same records.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from papers.ingest import papers_upsert
from papers.ingest.backfill import SnapshotImportError, read_ahead, snapshot_import
from papers.models import (
    Affiliation,
    Author,
    Authorship,
    Category,
    Paper,
    PaperAffiliation,
    PaperVersion,
)
from papers.parsers.oai import parse_oai_page
from papers.parsers.snapshot import iter_snapshot, snapshot_line
from papers.records import Version

from .conftest import ARXIV_RAW_PAGE, SNAPSHOT_HEAD

ROOT = Path(__file__).resolve().parents[2]


def natural_state() -> dict:
    """Every column of every table ingestion writes, keyed by natural keys instead of ids.

    Authorship affiliations are listed per authorship in id order, the order they are read
    back in; timestamps are left out (the two ways run at different times).
    """
    paper_fields = [
        field.attname
        for field in Paper._meta.concrete_fields
        if field.attname not in ("id", "created_at", "updated_at", "primary_category_id")
    ]
    through = Authorship.affiliations.through
    affiliations: dict[int, list[str]] = {}
    for authorship_id, name in through.objects.order_by("pk").values_list(
        "authorship_id", "affiliation__name"
    ):
        affiliations.setdefault(authorship_id, []).append(name)
    return {
        "papers": sorted(
            Paper.objects.values_list(*paper_fields, "primary_category__code"),
            key=lambda row: row[0],
        ),
        "cross_lists": sorted(
            Paper.cross_lists.through.objects.values_list("paper__arxiv_id", "category__code")
        ),
        "versions": sorted(
            PaperVersion.objects.values_list(
                "paper__arxiv_id", "number", "submitted", "size_kb", "source_type"
            )
        ),
        "authors": sorted(Author.objects.values_list("name", "keyname", "forenames", "suffix")),
        "affiliations": sorted(Affiliation.objects.values_list("name", flat=True)),
        "authorships": sorted(
            (arxiv_id, position, name, tuple(affiliations.get(pk, ())))
            for pk, arxiv_id, position, name in Authorship.objects.values_list(
                "pk", "paper__arxiv_id", "position", "author__name"
            )
        ),
        "paper_affiliations": sorted(
            PaperAffiliation.objects.values_list("paper__arxiv_id", "position", "affiliation__name")
        ),
        "categories": sorted(Category.objects.values_list("code", flat=True)),
    }


def empty_tables() -> None:
    """Delete everything ingestion wrote (categories stay)."""
    Authorship.affiliations.through.objects.all().delete()
    Authorship.objects.all().delete()
    PaperAffiliation.objects.all().delete()
    Paper.objects.all().delete()
    Author.objects.all().delete()
    Affiliation.objects.all().delete()


def real_lines() -> list[bytes]:
    return SNAPSHOT_HEAD.read_bytes().splitlines(keepends=True)


def older(line: bytes) -> bytes:
    """The same real record as it was before its last version (a stale report): another
    title, no DOI, its first author only, one more cross-list."""
    data = json.loads(line)
    data["versions"] = data["versions"][:-1]
    data["title"] = "Stale title of an earlier version"
    data["doi"] = None
    data["authors_parsed"] = data["authors_parsed"][:1]
    data["authors"] = data["authors"].split(",")[0]
    data["categories"] += " physics.hist-ph"
    return json.dumps(data).encode() + b"\n"


@pytest.fixture(scope="module")
def raw_records():
    return parse_oai_page(ARXIV_RAW_PAGE.read_bytes(), source=ARXIV_RAW_PAGE.name).records


@pytest.fixture
def mixed_snapshot(tmp_path, raw_records) -> Path:
    """A snapshot file that makes every merge rule work, from real records only.

    - stale reports (see :func:`older`) of the multi-version records among lines 100-160 first,
      so they are stored batches before their real lines, which must replace them;
    - the 200 real lines, each multi-version one among lines 60-100 just after its stale
      report (the same batch: merged before anything is stored);
    - stale reports of the multi-version ones among the first 60 last (an older report after
      the newer one never overwrites);
    - 85 arXivRaw records as snapshot lines (no sizes, source types or datestamps, the same
      version): stored first through ``papers_upsert`` from the arXivRaw page (see
      ``stored_first``), so their versions' sizes and source types, affiliations and fields
      must survive, and the dates of the five stored without version dates must be filled in;
    - 15 more at an older version (v1 only), which must not overwrite anything;
    - a blank line, invalid JSON, an invalid identifier and an unknown category.
    """
    lines = real_lines()
    multi = [i for i, line in enumerate(lines) if len(json.loads(line)["versions"]) > 1]
    stale_after = [older(lines[i]) for i in multi if i < 60]
    stale_just_before = {i: older(lines[i]) for i in multi if 60 <= i < 100}
    stale_batches_before = [older(lines[i]) for i in multi if 100 <= i < 160]
    body = list(stale_batches_before)
    for index, line in enumerate(lines):
        if index in stale_just_before:
            body.append(stale_just_before[index])
        body.append(line)
    body += stale_after
    body += [(snapshot_line(record) + "\n").encode() for record in raw_records[:85]]
    for record in raw_records[85:100]:
        first = dataclasses.replace(
            record,
            versions=record.versions[:1],
            latest_version=1,
            updated=record.submitted,
            title="An older title",
        )
        body.append((snapshot_line(first) + "\n").encode())
    bad = json.loads(lines[0])
    body[30:30] = [
        b"\n",
        b'{"id": "0704.9999", "title": \n',
        json.dumps({**bad, "id": "0808.05394"}).encode() + b"\n",
        json.dumps({**bad, "id": "0704.9998", "categories": "no.such"}).encode() + b"\n",
    ]
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"".join(body))
    return path


def stored_first(raw_records):
    """What is stored before the import: 100 arXivRaw records, five of them without their
    versions' dates (as a source that lists versions but not dates would give them)."""
    undated = [
        dataclasses.replace(
            record,
            versions=[dataclasses.replace(v, submitted=None) for v in record.versions],
            updated=None,
        )
        for record in raw_records[80:85]
    ]
    return [*raw_records[:80], *undated, *raw_records[85:100]]


def upsert_file(path: Path, *, batch_size: int | None = None):
    """What ``papers_upsert`` stores for the records of ``path`` (parse errors skipped)."""
    with path.open("rb") as stream:
        records = list(iter_snapshot(stream, source=str(path), on_error=lambda error: None))
    return papers_upsert(records=records, batch_size=batch_size, source=str(path))


# --- the same database state as papers_upsert -----------------------------------------------


def test_real_snapshot_head_gives_the_papers_upsert_state(categories):
    upsert_file(SNAPSHOT_HEAD)
    expected = natural_state()
    empty_tables()
    assert natural_state()["papers"] == []

    summary = snapshot_import(path=SNAPSHOT_HEAD, batch_size=37, tag=False)

    assert (summary.lines, summary.created, summary.rejected, summary.batches) == (200, 200, 0, 6)
    assert natural_state() == expected
    # Counted from the file: one row per paper, per authors_parsed entry, per version and per
    # distinct canonical cross-list.
    assert len(expected["papers"]) == 200
    assert len(expected["authorships"]) == 537
    assert len(expected["versions"]) == 326
    assert len(expected["cross_lists"]) == 97
    assert sum(bool(affiliations) for *_, affiliations in expected["authorships"]) == 82
    assert sum(len(affiliations) for *_, affiliations in expected["authorships"]) == 87
    assert len(expected["paper_affiliations"]) == 51


def test_every_merge_rule_gives_the_papers_upsert_state(categories, mixed_snapshot, raw_records):
    # Some papers are stored before the import, from arXivRaw (sizes, source types, datestamps).
    papers_upsert(records=stored_first(raw_records))
    upsert_file(mixed_snapshot, batch_size=50)
    expected = natural_state()
    empty_tables()
    papers_upsert(records=stored_first(raw_records))

    errors = []
    summary = snapshot_import(path=mixed_snapshot, batch_size=50, tag=False, on_error=errors.append)

    assert natural_state() == expected
    assert [error.record for error in errors] == [
        "line 32",
        "line 33",
        "line 34 (0704.9998)",
    ]
    assert summary.rejected == 3
    assert summary.lines == len(mixed_snapshot.read_bytes().splitlines()) - 1  # the blank line
    # The real 0704.0001 (v2) beat the stale v1 report placed after it.
    first = Paper.objects.get(arxiv_id="0704.0001")
    assert (first.latest_version, first.doi) == (2, "10.1103/PhysRevD.76.013009")
    assert first.title.startswith("Calculation of prompt diphoton production")
    # arXivRaw details the snapshot format lacks were kept, for the same version and when an
    # older report came after.
    for record in (raw_records[0], raw_records[82], raw_records[90]):
        assert list(
            PaperVersion.objects.filter(paper__arxiv_id=record.arxiv_id)
            .order_by("number")
            .values_list("number", "submitted", "size_kb", "source_type")
        ) == [(v.number, v.submitted, v.size_kb, v.source_type) for v in record.versions]
        assert all(version.size_kb is not None for version in record.versions)
    assert Paper.objects.get(arxiv_id=raw_records[90].arxiv_id).title == raw_records[90].title


def test_worker_processes_and_the_reader_thread_store_the_same(
    categories, mixed_snapshot, raw_records
):
    """Parsing in worker processes (batches spread over three of them, handed back in file
    order) stores what parsing in the reader thread stores, and names the same bad lines."""
    papers_upsert(records=stored_first(raw_records))
    thread_errors = []
    snapshot_import(
        path=mixed_snapshot, batch_size=7, tag=False, workers=0, on_error=thread_errors.append
    )
    expected = natural_state()
    empty_tables()
    papers_upsert(records=stored_first(raw_records))
    pool_errors = []

    summary = snapshot_import(
        path=mixed_snapshot, batch_size=7, tag=False, workers=3, on_error=pool_errors.append
    )

    assert natural_state() == expected
    assert [str(error) for error in pool_errors] == [str(error) for error in thread_errors]
    assert [error.record for error in pool_errors] == ["line 32", "line 33", "line 34 (0704.9998)"]
    assert summary.rejected == 3


def test_reimport_changes_nothing(categories):
    snapshot_import(path=SNAPSHOT_HEAD, tag=False)
    before = natural_state()
    stamps = sorted(Paper.objects.values_list("arxiv_id", "updated_at"))

    summary = snapshot_import(path=SNAPSHOT_HEAD, tag=False)

    assert (summary.created, summary.updated, summary.unchanged) == (0, 0, 200)
    assert natural_state() == before
    assert sorted(Paper.objects.values_list("arxiv_id", "updated_at")) == stamps


def test_newer_version_wins_in_either_order(categories, tmp_path):
    line = real_lines()[0]  # 0704.0001, v1 and v2
    stale, fresh = tmp_path / "stale.jsonl", tmp_path / "fresh.jsonl"
    stale.write_bytes(older(line))
    fresh.write_bytes(line)

    snapshot_import(path=stale, tag=False)
    assert Paper.objects.get(arxiv_id="0704.0001").latest_version == 1
    snapshot_import(path=fresh, tag=False)
    newer = natural_state()
    snapshot_import(path=stale, tag=False)

    assert natural_state() == newer
    paper = Paper.objects.get(arxiv_id="0704.0001")
    assert paper.latest_version == 2
    assert list(paper.versions.values_list("number", flat=True)) == [1, 2]


# --- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize("workers", [0, 2])
def test_bad_lines_are_named_and_the_rest_is_stored(categories, tmp_path, workers):
    lines = real_lines()
    path = tmp_path / "broken.jsonl"
    path.write_bytes(
        b"".join(lines[:3])
        + b"{not json\n"
        + b"\n"
        + json.dumps({**json.loads(lines[3]), "categories": ""}).encode()
        + b"\n"
        + json.dumps(
            {**json.loads(lines[4]), "versions": [{"version": "v1", "created": "x"}]}
        ).encode()
        + b"\n"
        + b"".join(lines[5:10])
    )
    seen = []

    summary = snapshot_import(
        path=path, batch_size=4, tag=False, workers=workers, on_error=seen.append
    )

    assert [str(error) for error in seen] == [
        f"{path}, line 4: invalid JSON: Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1)",
        f"{path}, line 6 (0704.0004): no category",
        f"{path}, line 7: versions[0] \"created\" 'x' is not an RFC 2822 date "
        '("Mon, 2 Apr 2007 19:18:42 GMT")',
    ]
    assert summary.errors == seen
    assert (summary.lines, summary.created, summary.rejected) == (11, 8, 3)
    assert sorted(Paper.objects.values_list("arxiv_id", flat=True)) == [
        "0704.0001",
        "0704.0002",
        "0704.0003",
        "0704.0006",
        "0704.0007",
        "0704.0008",
        "0704.0009",
        "0704.0010",
    ]


def test_gzip_is_recognised_by_content(categories, tmp_path):
    snapshot_import(path=SNAPSHOT_HEAD, tag=False)
    plain_state = natural_state()
    empty_tables()
    path = tmp_path / "snapshot.json"  # no .gz: the magic bytes decide
    path.write_bytes(gzip.compress(SNAPSHOT_HEAD.read_bytes()))

    summary = snapshot_import(path=path, batch_size=64, tag=False)

    assert summary.created == 200
    assert summary.bytes_read == path.stat().st_size
    assert natural_state() == plain_state


def test_truncated_gzip_stores_what_was_read_then_fails_naming_the_place(categories, tmp_path):
    compressed = gzip.compress(SNAPSHOT_HEAD.read_bytes())
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(compressed[: len(compressed) // 2])

    with pytest.raises(SnapshotImportError) as caught:
        snapshot_import(path=path, batch_size=1000, tag=False)

    message = str(caught.value)
    assert message.startswith(f"{path}: cannot read on after line ")
    assert "Compressed file ended before the end-of-stream marker was reached" in message
    stored = Paper.objects.count()
    assert 0 < stored < 200
    assert caught.value.summary.created == stored
    # Every line before the cut is whole: nothing half-written.
    assert Authorship.objects.count() == sum(Paper.objects.values_list("author_count", flat=True))


def test_a_failing_batch_is_rolled_back_and_earlier_batches_stay(categories):
    # A real database error in the second batch: a trigger refuses one paper's authorship.
    with connection.cursor() as cursor:
        cursor.execute(
            """
            CREATE FUNCTION refuse_0704_0150() RETURNS trigger AS $$
            BEGIN
                IF NEW.paper_id = (SELECT id FROM papers_paper WHERE arxiv_id = '0704.0150')
                THEN RAISE EXCEPTION 'refused by the test';
                END IF;
                RETURN NEW;
            END $$ LANGUAGE plpgsql;
            CREATE TRIGGER refuse_0704_0150 BEFORE INSERT ON papers_authorship
                FOR EACH ROW EXECUTE FUNCTION refuse_0704_0150();
            """
        )

    with pytest.raises(SnapshotImportError) as caught:
        snapshot_import(path=SNAPSHOT_HEAD, batch_size=100, tag=False)

    assert str(caught.value).startswith(
        f"{SNAPSHOT_HEAD}: lines 101-200 could not be stored (nothing of them was written; "
        "the 1 batches before them were): refused by the test"
    )
    assert Paper.objects.count() == 100
    assert max(Paper.objects.values_list("arxiv_id", flat=True)) == "0704.0100"
    assert caught.value.summary.created == 100


def test_batch_size_must_be_positive(categories):
    with pytest.raises(ValueError, match="batch_size must be at least 1, not 0"):
        snapshot_import(path=SNAPSHOT_HEAD, batch_size=0)
    with pytest.raises(ValueError, match="workers must be 0 or more, not -1"):
        snapshot_import(path=SNAPSHOT_HEAD, workers=-1)


def test_a_worker_error_stops_the_import_after_the_batches_before_it(categories, monkeypatch):
    """A failure inside a parsing process (not a bad line: a bug) reaches the caller in its
    batch's place; the batches before it are stored whole."""
    from papers.ingest import backfill

    prepare = backfill.record_prepare

    def failing(record, **kwargs):
        if record.arxiv_id > "0704.0100":
            raise RuntimeError("parser bug")
        return prepare(record, **kwargs)

    # Set before the pool forks: the workers parse with it.
    monkeypatch.setattr(backfill, "record_prepare", failing)

    with pytest.raises(RuntimeError, match="parser bug"):
        snapshot_import(path=SNAPSHOT_HEAD, batch_size=50, tag=False, workers=2)

    assert Paper.objects.count() == 100
    assert Authorship.objects.count() == sum(Paper.objects.values_list("author_count", flat=True))


def test_killed_mid_import_resumes_to_the_state_of_a_whole_import(transactional_db, tmp_path):
    """``import_snapshot`` with parsing processes, killed (SIGKILL) once some batches are
    committed: every paper stored is whole, and running the command again ends where one
    uninterrupted import ends."""
    from papers.categories import category_sync

    category_sync()
    records = parse_oai_page(ARXIV_RAW_PAGE.read_bytes(), source=ARXIV_RAW_PAGE.name).records
    path = tmp_path / "snapshot.jsonl"
    path.write_bytes(
        b"".join(real_lines()) + b"".join((snapshot_line(r) + "\n").encode() for r in records)
    )
    database = connection.settings_dict
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "topicsite.settings.local",
        "DATABASE_URL": f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}/"
        f"{database['NAME']}",
    }
    environment.pop("REDIS_URL", None)
    command = [sys.executable, str(ROOT / "manage.py"), "import_snapshot", str(path)]
    command += ["--no-tag", "--batch-size", "10", "--workers", "2"]

    process = subprocess.Popen(command, env=environment, cwd=ROOT, stderr=subprocess.PIPE)
    progress = b""
    deadline = time.monotonic() + 120
    while not re.search(rb"[1-9][0-9]* papers \(", progress) and time.monotonic() < deadline:
        chunk = os.read(process.stderr.fileno(), 4096)
        if not chunk:
            break
        progress += chunk
    process.send_signal(signal.SIGKILL)
    process.wait()
    process.stderr.close()

    stored = Paper.objects.count()
    assert 0 < stored < 1200, progress.decode(errors="replace")[-500:]
    assert Authorship.objects.count() == sum(Paper.objects.values_list("author_count", flat=True))
    assert not Paper.objects.filter(versions__isnull=True).exists()

    summary = snapshot_import(path=path, batch_size=10, tag=False, workers=2)
    assert (summary.created, summary.unchanged, summary.rejected) == (1200 - stored, stored, 0)
    resumed = natural_state()
    empty_tables()
    snapshot_import(path=path, batch_size=10, tag=False, workers=0)
    assert natural_state() == resumed


# --- tagging follows in batches -------------------------------------------------------------


def test_papers_stored_is_sent_once_per_committed_batch(
    categories, stored_signals, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        snapshot_import(path=SNAPSHOT_HEAD, batch_size=80)
    first = list(stored_signals)
    with django_capture_on_commit_callbacks(execute=True):
        snapshot_import(path=SNAPSHOT_HEAD, batch_size=80)

    assert [len(ids) for ids in first] == [80, 80, 40]
    assert sorted(pk for ids in first for pk in ids) == sorted(
        Paper.objects.values_list("pk", flat=True)
    )
    # Nothing changed the second time: nothing announced.
    assert stored_signals == first


def test_no_tag_announces_nothing(categories, stored_signals, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        snapshot_import(path=SNAPSHOT_HEAD, batch_size=80, tag=False)
    assert stored_signals == []
    assert Paper.objects.count() == 200


# --- the command ----------------------------------------------------------------------------


def test_command_shows_progress_and_reports(categories, tmp_path):
    lines = real_lines()
    path = tmp_path / "with-a-bad-line.jsonl"
    path.write_bytes(b"".join(lines[:50]) + b"{oops\n" + b"".join(lines[50:]))
    stdout, stderr = io.StringIO(), io.StringIO()

    with pytest.raises(CommandError, match="^1 lines were rejected$"):
        call_command(
            "import_snapshot",
            str(path),
            "--batch-size",
            "64",
            "--no-tag",
            stdout=stdout,
            stderr=stderr,
        )

    assert stdout.getvalue().startswith(
        "201 lines: 200 created, 0 updated, 0 unchanged, 1 rejected, 0 duplicates in "
    )
    assert stdout.getvalue().rstrip().endswith("papers/s)")
    progress = stderr.getvalue()
    assert f"rejected: {path}, line 51: invalid JSON" in progress
    # tqdm's bar: bytes of the file, a rate, the papers so far.
    assert "200 papers (" in progress and "100%" in progress and "B/s" in progress
    assert Paper.objects.count() == 200


def test_command_refuses_a_missing_file_and_a_bad_batch_size(categories, tmp_path):
    with pytest.raises(CommandError, match="no such file: .*missing.jsonl"):
        call_command("import_snapshot", str(tmp_path / "missing.jsonl"))
    with pytest.raises(CommandError, match="--batch-size"):
        call_command("import_snapshot", str(SNAPSHOT_HEAD), "--batch-size", "0")
    assert Paper.objects.count() == 0


def test_command_on_sqlite_uses_the_orm_writer(tmp_path):
    """The embedded default: no COPY there, the ORM writer of papers_upsert instead."""
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "topicsite.settings.local",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    environment.pop("REDIS_URL", None)

    def manage(*arguments):
        return subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), *arguments],
            env=environment,
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        ).stdout

    manage("migrate", "-v0")
    manage("load_categories")
    first = manage("import_snapshot", str(SNAPSHOT_HEAD), "--no-tag", "--batch-size", "70")
    second = manage("import_snapshot", str(SNAPSHOT_HEAD), "--no-tag")

    assert first.startswith("200 lines: 200 created, 0 updated, 0 unchanged, 0 rejected")
    assert second.startswith("200 lines: 0 created, 0 updated, 200 unchanged, 0 rejected")


def test_version_dates_survive_the_snapshot_format(raw_records):
    """``snapshot_line`` keeps version numbers and dates (the benchmark and the merge test
    build their input with it)."""
    record = raw_records[0]
    data = json.loads(snapshot_line(record))
    assert [entry["version"] for entry in data["versions"]] == [
        f"v{version.number}" for version in record.versions
    ]
    [parsed] = list(iter_snapshot([snapshot_line(record).encode()], source="s"))
    assert [Version(v.number, v.submitted) for v in record.versions] == parsed.versions


# --- memory stays flat: the reader is never more than one batch ahead ------------------------


def test_the_reader_thread_makes_one_batch_ahead_and_no_more():

    made = []

    def batches():
        for number in range(6):
            made.append(number)
            yield number

    taken = []
    with read_ahead(batches()) as items:
        for item in items:
            # While this batch is written (a pause here lets the reader run as far as it
            # can) the next one may be made; never two.
            time.sleep(0.02)
            assert len(made) <= item + 2
            taken.append(item)
    assert taken == made == list(range(6))


def test_the_reader_thread_hands_its_error_over_and_stops_when_left():

    def failing():
        yield "first"
        raise OSError("disk gone")

    with pytest.raises(OSError, match="disk gone"):
        with read_ahead(failing()) as items:
            assert next(items) == "first"
            next(items)

    made = []

    def endless():
        while True:
            made.append(len(made))
            yield made[-1]

    with read_ahead(endless()) as items:
        assert next(items) == 0
    # Leaving the block stopped the thread at once: at most the batch under way was made.
    assert len(made) <= 2
