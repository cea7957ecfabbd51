"""Merging reports of one paper against the real recorded arXiv data: the newer version leads,
an older report never overwrites, a poorer source never wipes what a richer one stored."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from papers.ingest import papers_upsert
from papers.models import (
    Paper,
    PaperAffiliation,
)
from papers.parsers.atom import parse_atom_feed

from .conftest import (
    ATOM_DIR,
    arxiv_raw_record,
    snapshot_records,
    table_state,
)

pytestmark = pytest.mark.django_db


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
