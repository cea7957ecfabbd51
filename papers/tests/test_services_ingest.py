"""Ingestion services against the real recorded arXiv data: counts, idempotency, merging of
sources and versions, categories, authors, withdrawn papers, bad input (values the database would
refuse, implausible dates and versions, poisoned pages), concurrent writers and the stored
signal."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
import threading

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from papers import services
from papers.models import (
    Affiliation,
    Author,
    Authorship,
    Category,
    HarvestRun,
    Paper,
    PaperAffiliation,
    PaperVersion,
)
from papers.parsers.atom import parse_atom_feed
from papers.parsers.oai import parse_oai_page
from papers.parsers.snapshot import iter_snapshot
from papers.records import ParseError, Version
from papers.services import (
    EARLIEST_DATE,
    MAX_VERSION,
    category_sync,
    harvest_run,
    papers_upsert,
)
from papers.signals import papers_stored
from papers.taxonomy import all_categories

from .conftest import (
    ARXIV_RAW_PAGE,
    ATOM_DIR,
    OAI_DC_PAGE,
    RECORDED_DISTINCT_IDS,
    RECORDED_RECORDS,
    SNAPSHOT_HEAD,
    table_state,
)
from .httpserver import LocalHttpServer, Reply, oai_pages, oai_token

pytestmark = pytest.mark.django_db

WITHDRAWN_ON_ARXIV_RAW_PAGE = {"0801.4122", "0801.4138", "0801.4243", "0801.4311", "0801.4644"}


def arxiv_raw_records():
    return parse_oai_page(ARXIV_RAW_PAGE.read_bytes(), source=str(ARXIV_RAW_PAGE)).records


def arxiv_raw_record(arxiv_id):
    return next(record for record in arxiv_raw_records() if record.arxiv_id == arxiv_id)


def snapshot_records():
    with SNAPSHOT_HEAD.open("rb") as stream:
        return list(iter_snapshot(stream, source=str(SNAPSHOT_HEAD)))


def affiliations_of(authorship):
    """An authorship's affiliations in the order the source gave them."""
    return list(
        Authorship.affiliations.through.objects.filter(authorship=authorship)
        .order_by("pk")
        .values_list("affiliation__name", flat=True)
    )


@pytest.fixture
def stored_signals():
    """Every ``papers_stored`` sent while the test runs, as lists of paper ids."""
    sent = []

    def receiver(sender, paper_ids, **kwargs):
        sent.append(list(paper_ids))

    papers_stored.connect(receiver, dispatch_uid="test-stored-signals")
    yield sent
    papers_stored.disconnect(dispatch_uid="test-stored-signals")


# --- categories -----------------------------------------------------------------------------


def test_category_sync_stores_canonical_categories_once():
    canonical = {info.code for info in all_categories() if info.canonical == info.code}

    assert category_sync() == len(canonical)
    first = list(Category.objects.order_by("code").values())
    assert category_sync() == len(canonical)

    assert list(Category.objects.order_by("code").values()) == first
    assert set(Category.objects.values_list("code", flat=True)) == canonical
    # Aliases and subsumed archives resolve to their canonical code, never stored themselves.
    assert Category.objects.filter(code__in=["math.MP", "cs.NA", "cmp-lg"]).count() == 0
    math_ph = Category.objects.get(code="math-ph")
    assert (math_ph.name, math_ph.archive, math_ph.group) == (
        "Mathematical Physics",
        "math-ph",
        "grp_physics",
    )
    assert Category.objects.get(code="cs.CL").is_active is True


# --- everything in papers/recorded ----------------------------------------------------------


def test_recorded_harvest_stores_each_distinct_paper_once(load_recorded):
    summary = load_recorded()

    assert summary.errors == []
    assert summary.created == RECORDED_DISTINCT_IDS
    assert summary.updated == 0
    # The overlapping API pages report the same papers again, with the same data.
    assert summary.unchanged == RECORDED_RECORDS - RECORDED_DISTINCT_IDS
    assert Paper.objects.count() == RECORDED_DISTINCT_IDS
    assert Paper.objects.filter(arxiv_id__isnull=True).count() == 0
    # Only canonical ids are stored: no version suffix anywhere.
    assert not Paper.objects.filter(arxiv_id__regex=r"v[0-9]+$").exists()
    assert Paper.objects.filter(source="oai:arXivRaw").count() == 1000
    assert Paper.objects.filter(source="snapshot").count() == 200


def test_recorded_harvest_twice_changes_nothing(load_recorded):
    load_recorded()
    before = table_state()

    second = load_recorded()

    assert (second.created, second.updated, second.unchanged) == (0, 0, RECORDED_RECORDS)
    assert second.errors == []
    assert table_state() == before


def test_versions_and_dates_from_arxiv_raw_and_snapshot(load_recorded):
    load_recorded()

    paper = Paper.objects.get(arxiv_id="0801.3674")
    assert paper.latest_version == 4
    assert paper.submitted == dt.date(2008, 1, 23)
    assert paper.updated == dt.date(2008, 9, 11)
    versions = list(paper.versions.values_list("number", "submitted", "size_kb"))
    assert versions == [
        (1, dt.datetime(2008, 1, 23, 21, 13, 53, tzinfo=dt.UTC), 33),
        (2, dt.datetime(2008, 2, 4, 15, 5, 55, tzinfo=dt.UTC), 33),
        (3, dt.datetime(2008, 3, 19, 1, 33, 3, tzinfo=dt.UTC), 34),
        (4, dt.datetime(2008, 9, 11, 22, 3, 53, tzinfo=dt.UTC), 31),
    ]

    first = Paper.objects.get(arxiv_id="0704.0001")
    assert first.latest_version == 2
    assert [v.submitted.date() for v in first.versions.all()] == [
        dt.date(2007, 4, 2),
        dt.date(2007, 7, 24),
    ]
    assert (first.submitted, first.updated) == (dt.date(2007, 4, 2), dt.date(2007, 7, 24))


def test_withdrawn_papers_are_stored_and_marked(load_recorded):
    load_recorded()

    withdrawn = set(Paper.objects.filter(withdrawn=True).values_list("arxiv_id", flat=True))
    on_raw_page = {r.arxiv_id for r in arxiv_raw_records()}
    assert withdrawn & on_raw_page == WITHDRAWN_ON_ARXIV_RAW_PAGE
    # The snapshot head holds one more: 0704.0156, whose v2 abstract is arXiv's notice.
    assert withdrawn - on_raw_page == {"0704.0156"}
    stub = Paper.objects.get(arxiv_id="0801.4243")
    # Only the abstract and the stub version tell: its comment still reads "5 pages".
    assert stub.latest_version == stub.versions.count()
    assert stub.versions.last().source_type == "I"
    assert Paper.objects.get(arxiv_id="0801.3674").withdrawn is False


def test_old_style_identifiers_keep_their_archive(load_recorded):
    load_recorded()

    gould = Paper.objects.get(arxiv_id="astro-ph/0601001")
    assert gould.primary_category.code == "astro-ph"
    assert gould.submitted == dt.date(2006, 1, 2)
    physics = Paper.objects.get(arxiv_id="physics/0112006")
    assert physics.primary_category.code == "physics.class-ph"
    assert list(physics.cross_lists.values_list("code", flat=True)) == ["physics.gen-ph"]
    # quant-ph/0201082v1 was asked for with its version; the paper is the canonical id.
    assert Paper.objects.filter(arxiv_id__startswith="quant-ph/0201082").count() == 1
    assert Paper.objects.get(arxiv_id="quant-ph/0201082").latest_version == 1


def test_cross_lists_are_canonical_deduplicated_and_never_the_primary(load_recorded):
    load_recorded()

    def categories_of(arxiv_id):
        paper = Paper.objects.get(arxiv_id=arxiv_id)
        return paper.primary_category.code, set(paper.cross_lists.values_list("code", flat=True))

    # "math.AP math-ph math.MP": math.MP is an alias of math-ph, listed once.
    assert categories_of("0801.3774") == ("math.AP", {"math-ph"})
    # "cs.IT math.IT": math.IT is cs.IT, the primary, so no cross-list remains.
    assert categories_of("0801.3702") == ("cs.IT", set())
    assert categories_of("0801.3773") == ("cs.IT", {"math.CO", "quant-ph"})
    assert categories_of("0801.3674") == ("hep-th", {"astro-ph", "gr-qc", "hep-ph"})
    assert not Category.objects.filter(code__in=["math.MP", "math.IT"]).exists()


def test_authors_in_order_with_affiliations(load_recorded):
    load_recorded()

    def authors_of(arxiv_id):
        paper = Paper.objects.get(arxiv_id=arxiv_id)
        return paper, [
            (a.position, a.author.name, affiliations_of(a))
            for a in paper.authorships.select_related("author")
        ]

    paper, authors = authors_of("0801.3674")
    assert authors == [
        (0, "Robert H. Brandenberger", ["McGill"]),
        (1, "Keshav Dasgupta", ["McGill"]),
        (2, "Anne-Christine Davis", ["DAMTP, Cambridge"]),
    ]
    assert [pa.affiliation.name for pa in paper.paper_affiliations.all()] == [
        "McGill",
        "DAMTP, Cambridge",
    ]
    assert (paper.author_count, paper.affiliation_count) == (3, 2)

    paper, authors = authors_of("astro-ph/0601001")
    assert authors == [
        (0, "Andrew Gould", ["Ohio State"]),
        (1, "Susan Dorsher", ["Ohio State"]),
        (2, "B. Scott Gaudi", ["CfA"]),
        (3, "Andrzej Udalski", ["Warsaw University Observatory"]),
    ]
    assert [pa.position for pa in paper.paper_affiliations.all()] == [0, 1, 2]
    assert (paper.author_count, paper.affiliation_count) == (4, 3)
    # One Author row per display name, shared by all their papers.
    assert Author.objects.filter(name="Robert H. Brandenberger").count() == 1
    assert Affiliation.objects.filter(name="McGill").count() == 1


# --- merging reports of one paper -----------------------------------------------------------


def as_version(record, latest):
    """The report a source would have given when ``latest`` was the newest version."""
    versions = [v for v in record.versions if v.number <= latest]
    return dataclasses.replace(
        record,
        versions=versions,
        latest_version=latest,
        updated=versions[-1].submitted.date(),
        title=f"{record.title} (as of v{latest})",
        withdrawn=False,
    )


def test_newer_version_updates_and_older_one_does_not_overwrite(stored_signals):
    record = arxiv_raw_record("0801.3674")
    papers_upsert(records=[as_version(record, 2)], source="first")
    paper = Paper.objects.get(arxiv_id="0801.3674")
    assert (paper.latest_version, paper.updated, paper.versions.count()) == (
        2,
        dt.date(2008, 2, 4),
        2,
    )

    newer = papers_upsert(records=[record], source="second")
    assert (newer.created, newer.updated, newer.unchanged) == (0, 1, 0)
    paper.refresh_from_db()
    assert paper.latest_version == 4
    assert paper.updated == dt.date(2008, 9, 11)
    assert paper.title == record.title
    assert list(paper.versions.values_list("number", flat=True)) == [1, 2, 3, 4]
    after_newer = table_state()

    older = papers_upsert(records=[as_version(record, 2), as_version(record, 3)], source="third")

    assert (older.created, older.updated, older.unchanged) == (0, 0, 1)
    assert table_state() == after_newer


def test_versioned_and_bare_identifier_are_one_paper():
    record = snapshot_records()[0]
    assert record.arxiv_id == "0704.0001"
    versioned = dataclasses.replace(record, arxiv_id="0704.0001v2")
    bare_v1 = as_version(record, 1)

    result = papers_upsert(records=[versioned, bare_v1])

    assert (result.created, result.updated, result.unchanged) == (1, 0, 0)
    assert list(Paper.objects.values_list("arxiv_id", "latest_version")) == [("0704.0001", 2)]


def test_poorer_source_does_not_wipe_sizes_or_affiliations():
    record = arxiv_raw_record("0801.3674")
    papers_upsert(records=[record])
    stored = table_state()
    # What oai_dc or Atom would say of the same version: no sizes, no affiliations, no DOI.
    poorer = dataclasses.replace(
        record,
        versions=[dataclasses.replace(v, size_kb=None, source_type="") for v in record.versions],
        authors=[dataclasses.replace(a, affiliations=()) for a in record.authors],
        doi="",
        journal_ref="",
        submitter="",
        source="oai:oai_dc",
    )

    same = papers_upsert(records=[poorer])
    assert same.unchanged == 1
    assert table_state() == stored

    # A newer version from the poorer source: its own data wins, known detail stays.
    v5 = dataclasses.replace(
        poorer,
        latest_version=5,
        updated=dt.date(2009, 1, 5),
        versions=[*poorer.versions, dataclasses.replace(poorer.versions[-1], number=5)],
        title="A revised title",
    )
    result = papers_upsert(records=[v5])

    assert result.updated == 1
    paper = Paper.objects.get(arxiv_id="0801.3674")
    assert (paper.latest_version, paper.title, paper.source) == (5, "A revised title", "oai:oai_dc")
    assert list(paper.versions.values_list("number", "size_kb")) == [
        (1, 33),
        (2, 33),
        (3, 34),
        (4, 31),
        (5, None),
    ]
    assert paper.doi == record.doi and paper.doi
    assert [pa.affiliation.name for pa in paper.paper_affiliations.all()] == [
        "McGill",
        "DAMTP, Cambridge",
    ]


def test_richer_report_of_same_version_fills_in_affiliations():
    atom_file = ATOM_DIR / "id_astro-ph_0601001_s0_m100_3150dca9dc76.xml"
    record = parse_atom_feed(atom_file.read_bytes(), source=str(atom_file)).records[0]
    bare = dataclasses.replace(
        record, authors=[dataclasses.replace(a, affiliations=()) for a in record.authors]
    )
    papers_upsert(records=[bare])
    assert PaperAffiliation.objects.count() == 0

    result = papers_upsert(records=[record])

    assert result.updated == 1
    paper = Paper.objects.get(arxiv_id="astro-ph/0601001")
    assert paper.affiliation_count == 3
    assert [a.author.name for a in paper.authorships.all()] == [a.name for a in record.authors]


def test_oai_dc_subjects_and_datestamp_are_stored():
    page = parse_oai_page(OAI_DC_PAGE.read_bytes(), source=str(OAI_DC_PAGE))

    result = papers_upsert(records=page.records, source=str(OAI_DC_PAGE))

    assert result.created == 5 and result.errors == []
    old_paper = Paper.objects.get(arxiv_id="1303.2033")
    # A datestamp from 2024 on a paper from 2013: record modification, not a paper date.
    assert old_paper.submitted.year == 2013
    assert old_paper.datestamp.year == 2024
    assert all(
        code.startswith("cs.")
        for code in Paper.objects.values_list("primary_category__code", flat=True)
    )


# --- batches, bad input, atomicity ----------------------------------------------------------


def test_unknown_category_rejects_only_that_record():
    records = arxiv_raw_records()[:10]
    bad = dataclasses.replace(records[3], categories=["hep-th", "quant-gravity.XY"])
    records[3] = bad

    result = papers_upsert(records=records, source="page.xml", batch_size=10)

    assert result.created == 9
    assert len(result.errors) == 1
    error = result.errors[0]
    assert (error.source, error.record) == ("page.xml", bad.arxiv_id)
    assert "quant-gravity.XY" in str(error) and bad.arxiv_id in str(error)
    assert not Paper.objects.filter(arxiv_id=bad.arxiv_id).exists()
    assert Paper.objects.count() == 9


def test_invalid_identifier_and_missing_title_are_rejected_by_name():
    records = arxiv_raw_records()[:3]
    records[0] = dataclasses.replace(records[0], arxiv_id="hepth/9901001")
    records[1] = dataclasses.replace(records[1], title="  ")

    result = papers_upsert(records=records, source="page.xml")

    assert [e.record for e in result.errors] == ["hepth/9901001", records[1].arxiv_id]
    assert "no title" in str(result.errors[1])
    assert list(Paper.objects.values_list("arxiv_id", flat=True)) == [records[2].arxiv_id]


def test_failure_mid_batch_leaves_nothing_half_written(monkeypatch, stored_signals):
    records = arxiv_raw_records()
    papers_upsert(records=records[:5])
    before = table_state()
    changed = [
        dataclasses.replace(r, title=r.title + " revised", latest_version=r.latest_version + 1)
        for r in records[:5]
    ]

    def broken_bulk_create(*args, **kwargs):
        raise RuntimeError("disk full")

    # Papers, cross-lists and versions are written before the authorships: fail there.
    monkeypatch.setattr(Authorship.objects, "bulk_create", broken_bulk_create)
    with pytest.raises(RuntimeError, match="disk full"):
        papers_upsert(records=[*changed, *records[5:20]], batch_size=50)

    assert table_state() == before


def test_failed_batch_does_not_undo_earlier_batches(monkeypatch):
    records = arxiv_raw_records()[:30]
    calls = {"count": 0}
    original = PaperVersion.objects.bulk_create

    def fail_on_third_batch(*args, **kwargs):
        calls["count"] += 1
        if calls["count"] == 3:
            raise RuntimeError("connection lost")
        return original(*args, **kwargs)

    monkeypatch.setattr(PaperVersion.objects, "bulk_create", fail_on_third_batch)
    with pytest.raises(RuntimeError):
        papers_upsert(records=records, batch_size=10)

    assert sorted(Paper.objects.values_list("arxiv_id", flat=True)) == sorted(
        r.arxiv_id for r in records[:20]
    )
    assert (
        PaperVersion.objects.filter(paper__arxiv_id__in=[r.arxiv_id for r in records[20:]]).count()
        == 0
    )


def test_query_count_per_batch_does_not_grow_with_records():
    records = arxiv_raw_records()

    def queries_for(batch):
        with CaptureQueriesContext(connection) as captured:
            result = papers_upsert(records=batch, batch_size=len(batch))
        assert result.created == len(batch)
        return len(captured.captured_queries)

    category_sync()
    # Both batches need every kind of write: new authors and affiliations, cross-lists.
    with_affiliations = [r for r in records if any(a.affiliations for a in r.authors)]
    small_batch = [r for r in with_affiliations if r.cross_lists][:5]
    large_batch = [r for r in records if r not in small_batch][:60]
    assert any(r.cross_lists for r in large_batch)
    assert any(a.affiliations for r in large_batch for a in r.authors)
    small = queries_for(small_batch)
    large = queries_for(large_batch)
    assert small == large

    def update_queries(batch):
        bumped = [dataclasses.replace(r, latest_version=r.latest_version + 1) for r in batch]
        with CaptureQueriesContext(connection) as captured:
            assert papers_upsert(records=bumped, batch_size=len(bumped)).updated == len(bumped)
        return len(captured.captured_queries)

    assert update_queries(small_batch) == update_queries(large_batch)


def test_same_paper_twice_in_a_batch_is_one_paper():
    atom_files = sorted(ATOM_DIR.glob("q_testing_s*_m1[05]_*.xml"))
    records = [
        record
        for path in atom_files
        for record in parse_atom_feed(path.read_bytes(), source=str(path)).records
    ]
    distinct = {record.arxiv_id for record in records}
    assert len(records) > len(distinct)

    result = papers_upsert(records=records, batch_size=len(records))

    assert result.created == len(distinct)
    assert Paper.objects.count() == len(distinct)


# --- the papers_stored signal ---------------------------------------------------------------


def test_signal_once_per_committed_batch_with_changed_ids(
    django_capture_on_commit_callbacks, stored_signals
):
    records = arxiv_raw_records()[:5]
    with django_capture_on_commit_callbacks(execute=True):
        result = papers_upsert(records=records, batch_size=2)

    ids = dict(Paper.objects.values_list("arxiv_id", "pk"))
    assert stored_signals == [
        [ids[records[0].arxiv_id], ids[records[1].arxiv_id]],
        [ids[records[2].arxiv_id], ids[records[3].arxiv_id]],
        [ids[records[4].arxiv_id]],
    ]
    assert result.paper_ids == [ids[r.arxiv_id] for r in records]

    stored_signals.clear()
    changed = dataclasses.replace(records[1], latest_version=7)
    with django_capture_on_commit_callbacks(execute=True):
        papers_upsert(records=[records[0], changed, records[2]], batch_size=10)
    # Only the changed paper is announced; unchanged ones are not.
    assert stored_signals == [[ids[records[1].arxiv_id]]]

    stored_signals.clear()
    with django_capture_on_commit_callbacks(execute=True):
        papers_upsert(records=records, batch_size=10)
    assert stored_signals == []


def test_no_signal_on_rollback(monkeypatch, django_capture_on_commit_callbacks, stored_signals):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(PaperAffiliation.objects, "bulk_create", broken)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        with pytest.raises(RuntimeError):
            papers_upsert(records=arxiv_raw_records()[:3])

    assert callbacks == []
    assert stored_signals == []
    assert Paper.objects.count() == 0


# --- harvest_run with bad files -------------------------------------------------------------


def write_manifest(directory, entries):
    (directory / "manifest.json").write_text(json.dumps({"entries": entries}))


def test_malformed_page_is_reported_and_the_rest_is_stored(tmp_path):
    (tmp_path / "oai").mkdir()
    truncated = ARXIV_RAW_PAGE.read_bytes()[:200_000]
    (tmp_path / "oai" / "truncated.xml").write_bytes(truncated)
    (tmp_path / "oai" / "good.xml").write_bytes(OAI_DC_PAGE.read_bytes())
    write_manifest(
        tmp_path,
        [
            {
                "kind": "oai",
                "file": "oai/truncated.xml",
                "params": {"verb": "ListRecords", "resumptionToken": "496549|46001"},
            },
            {
                "kind": "oai",
                "file": "oai/good.xml",
                "params": {
                    "verb": "ListRecords",
                    "metadataPrefix": "oai_dc",
                    "set": "cs",
                    "from": "2024-01-25",
                },
            },
        ],
    )

    summary = harvest_run(kind="recorded", params={"directory": str(tmp_path)})

    assert len(summary.errors) == 1
    error = summary.errors[0]
    assert isinstance(error, ParseError)
    assert error.source.endswith("truncated.xml")
    assert "line" in str(error) and "truncated.xml" in str(error)
    # Nothing of the malformed page, all of the good one.
    assert summary.created == 5
    assert not Paper.objects.filter(arxiv_id__startswith="0801.").exists()


def test_bad_snapshot_line_is_reported_by_line_and_others_stored(tmp_path):
    lines = SNAPSHOT_HEAD.read_bytes().splitlines(keepends=True)[:10]
    lines[3] = lines[3][: len(lines[3]) // 2] + b"\n"
    bad_id = json.loads(SNAPSHOT_HEAD.read_bytes().splitlines()[3])["id"]
    snapshot = tmp_path / "snapshot.jsonl"
    snapshot.write_bytes(b"".join(lines))

    summary = harvest_run(kind="snapshot", params={"path": str(snapshot)})

    assert summary.created == 9
    assert [(e.source, e.record) for e in summary.errors] == [(str(snapshot), "line 4")]
    assert not Paper.objects.filter(arxiv_id=bad_id).exists()


def test_gzip_snapshot_is_streamed(tmp_path):
    import gzip

    snapshot = tmp_path / "snapshot.jsonl.gz"
    with gzip.open(snapshot, "wb") as handle:
        handle.write(SNAPSHOT_HEAD.read_bytes())

    summary = harvest_run(kind="snapshot", params={"path": str(snapshot)})

    assert (summary.created, summary.errors) == (200, [])


def test_unknown_category_in_a_file_names_file_and_record(tmp_path):
    lines = SNAPSHOT_HEAD.read_bytes().splitlines()[:3]
    record = json.loads(lines[1])
    record["categories"] = "hep-ph astro-xx.YY"
    lines[1] = json.dumps(record).encode()
    snapshot = tmp_path / "snapshot.jsonl"
    snapshot.write_bytes(b"\n".join(lines) + b"\n")
    papers_upsert(records=snapshot_records()[:1])
    before = Paper.objects.get(arxiv_id="0704.0001").updated_at

    summary = harvest_run(kind="snapshot", params={"path": str(snapshot)})

    assert [(e.source, e.record) for e in summary.errors] == [(str(snapshot), record["id"])]
    assert "astro-xx.YY" in str(summary.errors[0])
    assert (summary.created, summary.unchanged) == (1, 1)
    # The record stored before stays as it was.
    assert Paper.objects.get(arxiv_id="0704.0001").updated_at == before
    assert not Paper.objects.filter(arxiv_id=record["id"]).exists()


# --- values the database would refuse, implausible dates and versions ----------------------


def with_last_version(record, **changes):
    """``record`` with its latest version changed."""
    return dataclasses.replace(
        record,
        versions=[*record.versions[:-1], dataclasses.replace(record.versions[-1], **changes)],
    )


def with_first_version(record, **changes):
    return dataclasses.replace(
        record, versions=[dataclasses.replace(record.versions[0], **changes), *record.versions[1:]]
    )


def with_author(record, index, **changes):
    authors = list(record.authors)
    authors[index] = dataclasses.replace(authors[index], **changes)
    return dataclasses.replace(record, authors=authors)


# Each turns 0801.3674 (v4, three authors with affiliations) into a record the database would
# refuse (PostgreSQL: smallint/integer out of range, varchar too long, NUL in text; any
# driver: lone surrogates cannot be encoded), with the error that must name its field.
REFUSED_BY_THE_DATABASE = {
    "version number": (
        lambda r: with_last_version(r, number=99999),
        "version number 99999 out of range (1 to 100)",
    ),
    "identifier version": (
        lambda r: dataclasses.replace(r, arxiv_id="0801.3674v99999"),
        "identifier version 99999 out of range (1 to 100)",
    ),
    "size": (
        lambda r: with_last_version(r, size_kb=99_999_999_999),
        "v4 size 99999999999 kb out of range (0 to 2147483647)",
    ),
    "negative size": (
        lambda r: with_last_version(r, size_kb=-1),
        "v4 size -1 kb out of range",
    ),
    "source type": (
        lambda r: with_last_version(r, source_type="ABCDEFGHIJKL"),
        "v4 source_type longer than 8 characters",
    ),
    "NUL in title": (
        lambda r: dataclasses.replace(r, title="A Study\x00 of Structure"),
        "title contains a NUL character (U+0000)",
    ),
    "NUL in raw abstract": (
        lambda r: dataclasses.replace(r, abstract_raw=r.abstract_raw + "\x00"),
        "abstract_raw contains a NUL character (U+0000)",
    ),
    "NUL in author": (
        lambda r: with_author(r, 1, name="Keshav\x00 Dasgupta"),
        "author 2 name contains a NUL character (U+0000)",
    ),
    "surrogate in title": (
        lambda r: dataclasses.replace(r, title="lone \ud800 surrogate"),
        "title contains a lone surrogate (U+D800)",
    ),
    "surrogate in affiliation": (
        lambda r: with_author(r, 0, affiliations=("McGill\udc80",)),
        "author 1 affiliation contains a lone surrogate (U+DC80)",
    ),
    "surrogate in keyname": (
        lambda r: with_author(r, 2, keyname="Davis\udfff"),
        "author 3 keyname contains a lone surrogate (U+DFFF)",
    ),
    "doi": (lambda r: dataclasses.replace(r, doi="1" * 256), "doi longer than 255 characters"),
    "report number": (
        lambda r: dataclasses.replace(r, report_no="R" * 256),
        "report_no longer than 255 characters",
    ),
    "license": (
        lambda r: dataclasses.replace(r, license="L" * 256),
        "license longer than 255 characters",
    ),
    "submitter": (
        lambda r: dataclasses.replace(r, submitter="S" * 256),
        "submitter longer than 255 characters",
    ),
    "author name": (
        lambda r: with_author(r, 0, name="N" * 301),
        "author 1 name longer than 300 characters",
    ),
    "affiliation": (
        lambda r: with_author(r, 2, affiliations=("A" * 501,)),
        "author 3 affiliation longer than 500 characters",
    ),
    "keyname": (
        lambda r: with_author(r, 0, keyname="K" * 201),
        "author 1 keyname longer than 200 characters",
    ),
    "forenames": (
        lambda r: with_author(r, 0, forenames="F" * 201),
        "author 1 forenames longer than 200 characters",
    ),
    "suffix": (
        lambda r: with_author(r, 0, suffix="S" * 51),
        "author 1 suffix longer than 50 characters",
    ),
}

# Values that would poison the site: a far-future date becomes every topic's momentum "as
# of", a version typo makes every later genuine report look older.
IMPLAUSIBLE = {
    "submitted in the far future": (
        lambda r: dataclasses.replace(r, submitted=dt.date(9999, 12, 31)),
        "submitted 9999-12-31 is in the future",
    ),
    "version date in the far future": (
        lambda r: with_last_version(r, submitted=dt.datetime(9999, 12, 31, 12, tzinfo=dt.UTC)),
        "v4 date 9999-12-31 is in the future",
    ),
    "updated in the far future": (
        lambda r: dataclasses.replace(r, updated=dt.date(3024, 1, 1)),
        "updated 3024-01-01 is in the future",
    ),
    "datestamp in the far future": (
        lambda r: dataclasses.replace(r, datestamp=dt.date(2099, 1, 1)),
        "datestamp 2099-01-01 is in the future",
    ),
    "v1 before arXiv": (
        lambda r: with_first_version(r, submitted=dt.datetime(1989, 6, 1, tzinfo=dt.UTC)),
        "v1 date 1989-06-01 is before arXiv began (1991-01-01)",
    ),
    "submitted before arXiv": (
        lambda r: dataclasses.replace(r, submitted=dt.date(1900, 1, 1)),
        "submitted 1900-01-01 is before arXiv began (1991-01-01)",
    ),
    "latest version typo": (
        lambda r: dataclasses.replace(r, latest_version=999),
        "latest_version 999 out of range (1 to 100)",
    ),
    "version above the bound": (
        lambda r: with_last_version(r, number=101),
        "version number 101 out of range (1 to 100)",
    ),
    "version zero": (
        lambda r: with_first_version(r, number=0),
        "version number 0 out of range (1 to 100)",
    ),
}


@pytest.mark.parametrize(
    "change, message",
    [*REFUSED_BY_THE_DATABASE.values(), *IMPLAUSIBLE.values()],
    ids=[*REFUSED_BY_THE_DATABASE, *IMPLAUSIBLE],
)
def test_bad_value_rejects_only_its_record_naming_the_field(change, message, stored_signals):
    first, middle, last = arxiv_raw_records()[:3]
    assert middle.arxiv_id == "0801.3674"

    result = papers_upsert(records=[first, change(middle), last], source="page.xml")

    assert (result.created, result.rejected) == (2, 1)
    (error,) = result.errors
    assert (error.source, error.record) == ("page.xml", "0801.3674")
    assert message in error.message
    # The message can be stored and logged: it never quotes the bad text.
    assert not re.search("[\x00\ud800-\udfff]", str(error))
    assert sorted(Paper.objects.values_list("arxiv_id", flat=True)) == [
        first.arxiv_id,
        last.arxiv_id,
    ]
    assert not PaperVersion.objects.filter(paper__arxiv_id="0801.3674").exists()


def test_invalid_identifier_is_named_escaped():
    record = dataclasses.replace(arxiv_raw_record("0801.3673"), arxiv_id="0801.36\x0073")
    # Arabic-Indic digits: 2501.00001 to a regular expression's \d, not to arXiv (nor to us).
    digits = dataclasses.replace(arxiv_raw_record("0801.3675"), arxiv_id="٢٥٠١.٠٠٠٠١")

    result = papers_upsert(records=[record, digits], source="page.xml")

    assert [error.record for error in result.errors] == ["0801.36\\x0073", "٢٥٠١.٠٠٠٠١"]
    assert "not an arXiv identifier" in str(result.errors[0])
    assert "not an arXiv identifier" in str(result.errors[1])
    assert not Paper.objects.exists()


def test_dates_up_to_two_days_ahead_and_versions_up_to_the_bound_are_kept(monkeypatch):
    # Late evening in UTC: the limit is the day after tomorrow, whatever the time of day.
    monkeypatch.setattr(timezone, "now", lambda: dt.datetime(2026, 3, 10, 23, 30, tzinfo=dt.UTC))
    a, b, c = (arxiv_raw_record(i) for i in ("0801.3673", "0801.3675", "0801.3678"))

    def with_version_on(record, number, day):
        version = Version(
            number=number, submitted=dt.datetime.combine(day, dt.time(23, 59), dt.UTC)
        )
        return dataclasses.replace(
            record, versions=[*record.versions, version], latest_version=number, updated=day
        )

    in_two_days = with_version_on(a, MAX_VERSION, dt.date(2026, 3, 12))
    in_three_days = with_version_on(b, 2, dt.date(2026, 3, 13))
    first_day = with_first_version(
        dataclasses.replace(c, submitted=EARLIEST_DATE),
        submitted=dt.datetime.combine(EARLIEST_DATE, dt.time(), dt.UTC),
    )

    result = papers_upsert(records=[in_two_days, in_three_days, first_day], source="page.xml")

    assert [(e.record, e.message) for e in result.errors] == [
        ("0801.3675", "v2 date 2026-03-13 is in the future (after 2026-03-12, today + 2 days, UTC)")
    ]
    assert sorted(Paper.objects.values_list("arxiv_id", "latest_version", "submitted")) == [
        ("0801.3673", MAX_VERSION, dt.date(2008, 1, 23)),
        ("0801.3678", 1, EARLIEST_DATE),
    ]


def test_version_typo_cannot_make_later_reports_look_older():
    record = arxiv_raw_record("0801.3674")
    papers_upsert(records=[record])

    typo = papers_upsert(records=[dataclasses.replace(record, latest_version=999, title="Typo")])
    v5 = dataclasses.replace(
        record,
        latest_version=5,
        updated=dt.date(2009, 1, 5),
        versions=[*record.versions, dataclasses.replace(record.versions[-1], number=5)],
        title="A revised title",
    )
    genuine = papers_upsert(records=[v5])

    assert typo.rejected == 1 and "latest_version 999" in typo.errors[0].message
    assert (genuine.updated, genuine.rejected) == (1, 0)
    paper = Paper.objects.get(arxiv_id="0801.3674")
    assert (paper.latest_version, paper.title) == (5, "A revised title")


# --- a poisoned page does not stop a harvest -----------------------------------------------


@pytest.fixture
def oai_server(settings):
    """A local OAI-PMH server; fast but real harvest settings, no harvest lock left over."""
    settings.ARXIV_REQUEST_INTERVAL_MS = 5
    settings.ARXIV_HTTP_RETRIES = 0
    settings.ARXIV_HTTP_TIMEOUT = 10
    cache.delete("papers:harvest-lock:oai")
    with LocalHttpServer() as server:
        yield server
    cache.delete("papers:harvest-lock:oai")


def test_oai_harvest_stores_the_good_records_of_a_poisoned_page_and_goes_on(tmp_path, oai_server):
    poisoned = tmp_path / "poisoned.xml"
    body = ARXIV_RAW_PAGE.read_bytes()
    for old, new in [
        # 0801.3673: a size PostgreSQL's integer cannot hold.
        (
            b"21:06:41 GMT</date><size>121kb</size>",
            b"21:06:41 GMT</date><size>99999999999kb</size>",
        ),
        # 0801.3674: a version number beyond smallint.
        (b"version='v4'><date>Thu, 11 Sep 2008", b"version='v99999'><date>Thu, 11 Sep 2008"),
        # 0801.3675: submitted in the year 9999.
        (b"Thu, 24 Jan 2008 15:39:48 GMT", b"Thu, 24 Jan 9999 15:39:48 GMT"),
    ]:
        assert body.count(old) == 1
        body = body.replace(old, new)
    poisoned.write_bytes(body)
    pages = oai_pages(poisoned, [10, 10])
    second_token = oai_token(pages[0])
    oai_server.handler = lambda request: Reply(
        body=pages[1] if request.query.get("resumptionToken") == second_token else pages[0]
    )

    summary = harvest_run(
        kind="oai", params={"base_url": oai_server.url, "sets": ["cs"], "from": "2008-01-25"}
    )

    assert (summary.status, summary.pages, summary.created) == ("succeeded", 2, 17)
    expected = [
        ("0801.3673", "v1 size 99999999999 kb out of range (0 to 2147483647)"),
        ("0801.3674", "version number 99999 out of range (1 to 100)"),
        ("0801.3675", "v1 date 9999-01-24 is in the future"),
    ]
    assert len(summary.errors) == len(expected)
    for error, (arxiv_id, message) in zip(summary.errors, expected, strict=True):
        assert (error.record, error.message[: len(message)]) == (arxiv_id, message)
    run = HarvestRun.objects.get(pk=summary.run_id)
    assert (run.records_created, run.records_rejected, run.error_count) == (17, 3, 3)
    assert all(str(oai_server.url) in message and "0801.367" in message for message in run.errors)
    assert not Paper.objects.filter(arxiv_id__in=["0801.3673", "0801.3674", "0801.3675"]).exists()


def test_snapshot_lines_with_unstorable_text_are_rejected_and_the_run_succeeds(tmp_path):
    lines = [json.loads(line) for line in SNAPSHOT_HEAD.read_text().splitlines()[:5]]
    lines[1]["title"] = "Has a NUL \x00 inside"
    lines[3]["authors_parsed"][0][0] = "lone \ud800 surrogate"
    snapshot = tmp_path / "snapshot.jsonl"
    # json.dumps writes both as \u escapes, as a real dump would carry them.
    snapshot.write_text("".join(json.dumps(line) + "\n" for line in lines))

    summary = harvest_run(kind="snapshot", params={"path": str(snapshot)})

    assert (summary.status, summary.created) == ("succeeded", 3)
    assert [(e.record, e.message) for e in summary.errors] == [
        (lines[1]["id"], "title contains a NUL character (U+0000), which is not storable text"),
        (
            lines[3]["id"],
            "author 1 name contains a lone surrogate (U+D800), which is not storable text",
        ),
    ]
    assert HarvestRun.objects.get(pk=summary.run_id).error_count == 2


# --- concurrent writers --------------------------------------------------------------------


@pytest.fixture
def another_worker_meanwhile(monkeypatch):
    """``another_worker_meanwhile(records)`` arranges the race of two concurrent harvests: the
    next ``papers_upsert`` reads what is stored, then another worker stores ``records`` in its
    own transaction (a thread with its own connection) and commits, then the first goes on.
    Returns a dict that receives the other worker's result under ``"result"``."""
    other: dict = {}
    original_load_states = services._load_states

    def store_in_another_transaction():
        try:
            other["result"] = papers_upsert(records=other["records"], source="other worker")
        finally:
            connection.close()

    def load_states_then_race(arxiv_ids):
        states = original_load_states(arxiv_ids)
        if "records" in other and not other.get("started"):
            other["started"] = True
            thread = threading.Thread(target=store_in_another_transaction)
            thread.start()
            thread.join()
        return states

    monkeypatch.setattr(services, "_load_states", load_states_then_race)

    def arrange(records):
        other["records"] = records
        return other

    return arrange


@pytest.mark.django_db(transaction=True)
def test_paper_stored_meanwhile_by_another_transaction_is_merged_not_created_again(
    another_worker_meanwhile, stored_signals
):
    """Two workers store the same new paper at once: one creates it; the other, which looked
    before the first committed, merges with it (its older report changes nothing) instead of
    counting it created, announcing it and overwriting the newer version."""
    record = arxiv_raw_record("0801.3674")
    other = another_worker_meanwhile([record])

    result = papers_upsert(records=[as_version(record, 2)], source="this worker")

    assert (other["result"].created, other["result"].updated) == (1, 0)
    assert (result.created, result.updated, result.unchanged) == (0, 0, 1)
    paper = Paper.objects.get(arxiv_id="0801.3674")
    assert (paper.latest_version, paper.title) == (4, record.title)
    assert paper.versions.count() == 4
    # Only the worker that created it announced it.
    assert stored_signals == [[paper.pk]]


@pytest.mark.django_db(transaction=True)
def test_newer_report_stored_meanwhile_is_merged_and_counted_updated(another_worker_meanwhile):
    record = arxiv_raw_record("0801.3674")
    other = another_worker_meanwhile([as_version(record, 2)])

    result = papers_upsert(records=[record, arxiv_raw_record("0801.3675")], source="this worker")

    assert (other["result"].created, other["result"].updated) == (1, 0)
    assert (result.created, result.updated) == (1, 1)
    paper = Paper.objects.get(arxiv_id="0801.3674")
    assert (paper.latest_version, paper.title) == (4, record.title)
    assert list(paper.versions.values_list("number", flat=True)) == [1, 2, 3, 4]
    assert Paper.objects.count() == 2
