"""papers_upsert against the real recorded arXiv data: counts, idempotency, versions, categories,
authors, withdrawn papers, atomic batches, query counts, the stored signal and concurrent
writers."""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from papers.categories import category_sync
from papers.ingest import papers_upsert, write
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

from .conftest import (
    OAI_DC_PAGE,
    RECORDED_DISTINCT_IDS,
    RECORDED_RECORDS,
    arxiv_raw_record,
    arxiv_raw_records,
    table_state,
)

pytestmark = pytest.mark.django_db

WITHDRAWN_ON_ARXIV_RAW_PAGE = {"0801.4122", "0801.4138", "0801.4243", "0801.4311", "0801.4644"}


def affiliations_of(authorship):
    """An authorship's affiliations in the order the source gave them."""
    return list(
        Authorship.affiliations.through.objects.filter(authorship=authorship)
        .order_by("pk")
        .values_list("affiliation__name", flat=True)
    )


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


# --- batches and atomicity ------------------------------------------------------------------------


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


# --- concurrent writers --------------------------------------------------------------------


@pytest.fixture
def another_worker_meanwhile(monkeypatch):
    """``another_worker_meanwhile(records)`` arranges the race of two concurrent harvests: the
    next ``papers_upsert`` reads what is stored, then another worker stores ``records`` in its
    own transaction (a thread with its own connection) and commits, then the first goes on.
    Returns a dict that receives the other worker's result under ``"result"``."""
    other: dict = {}
    original_load_states = write.paper_states_load

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

    monkeypatch.setattr(write, "paper_states_load", load_states_then_race)

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
