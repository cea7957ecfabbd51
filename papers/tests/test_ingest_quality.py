"""Ingestion that loses or corrupts nothing quietly, on real (or minimally edited real)
arXiv responses: unknown versions stay unknown and never let older metadata replace newer,
several DOIs in one field, repaired double-encoded text and missing titles flagged for
curators, duplicates counted, control characters and over-long text refused by name and field,
messages a person can act on, and author names kept as written."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from papers.harvest import harvest_run
from papers.ingest import papers_upsert
from papers.ingest.backfill import snapshot_import
from papers.ingest.checks import TEXT_LIMITS
from papers.models import Author, Authorship, HarvestRun, Paper
from papers.parsers.atom import parse_atom_feed
from papers.parsers.oai import parse_oai_page
from papers.parsers.snapshot import iter_snapshot, parse_snapshot_line
from papers.records import ParseError

from .conftest import (
    ARXIV_RAW_PAGE,
    HEP_EX_PAGE,
    OAI_DC_PAGE,
    SNAPSHOT_HEAD,
    TEST_DATA_DIR,
    arxiv_raw_records,
)

pytestmark = pytest.mark.django_db

EDITED = TEST_DATA_DIR / "edited"
PINNED_V2 = EDITED / "atom_1707.00874v2_pinned.xml"
SEVERAL_DOIS = EDITED / "oai_arXiv_1601.03238_several_dois.xml"
ATOM_2026 = TEST_DATA_DIR / "atom" / "arxiv_py_2026_recorded"
MOJIBAKE_FEED = ATOM_2026 / "id_1707.08567_s0_m100_6a1afebfc6a3.xml"


def oai_records(path):
    return parse_oai_page(path.read_bytes(), source=str(path)).records


def atom_records(path):
    return parse_atom_feed(path.read_bytes(), source=str(path)).records


def snapshot_lines() -> list[dict]:
    return [json.loads(line) for line in SNAPSHOT_HEAD.read_text().splitlines()]


@pytest.fixture
def api_client():
    from rest_framework.test import APIClient

    return APIClient()


@pytest.fixture
def admin_client(client):
    user = get_user_model().objects.create_user(
        "curator", "curator@example.org", "pw", is_staff=True, is_superuser=True
    )
    client.force_login(user)
    return client


def admin_listed(client, **params) -> set[str]:
    response = client.get(reverse("admin:papers_paper_changelist"), params)
    assert response.status_code == 200
    return {paper.arxiv_id for paper in response.context["cl"].result_list}


# --- an unknown version is unknown, and older metadata never replaces newer ------------------


def test_oai_arxiv_and_oai_dc_records_store_an_unknown_version():
    records = oai_records(HEP_EX_PAGE) + oai_records(OAI_DC_PAGE)
    assert {record.source for record in records} == {"oai:arXiv", "oai:oai_dc"}
    assert all(record.latest_version is None for record in records)

    result = papers_upsert(records=records)

    assert result.created == len(records) and not result.errors
    assert set(Paper.objects.values_list("latest_version", flat=True)) == {None}


def test_an_older_pinned_atom_report_never_replaces_newer_metadata(api_client):
    """1707.00874 stored from OAI (arXiv format: updated 2017-12-13, version unknown); the API
    then reports the pinned v2 (updated 2017-09-20, another title and categories)."""
    papers_upsert(records=oai_records(HEP_EX_PAGE))
    stored = Paper.objects.get(arxiv_id="1707.00874")
    before = (stored.title, stored.primary_category.code, stored.updated, stored.latest_version)
    assert before[2:] == (dt.date(2017, 12, 13), None)

    [older] = atom_records(PINNED_V2)
    assert (older.latest_version, older.updated) == (2, dt.date(2017, 9, 20))
    result = papers_upsert(records=[older])

    assert result.unchanged == 1 and result.updated == 0
    paper = Paper.objects.get(arxiv_id="1707.00874")
    after = (paper.title, paper.primary_category.code, paper.updated, paper.latest_version)
    assert after == before
    assert paper.title.startswith("Implications of right-handed neutrinos")

    # The API says what it knows: the newer metadata, and no version.
    data = api_client.get("/api/v1/papers/1707.00874/").json()
    assert (data["version"], data["updated"]) == (None, "2017-12-13")
    assert data["title"] == paper.title
    # A pinned version cannot be ruled out when the latest is unknown.
    assert api_client.get("/api/v1/papers/1707.00874v2/").status_code == 200


def test_a_newer_unversioned_report_leads_over_an_older_pinned_one():
    """The same two reports the other way round: the OAI record (later ``updated``) leads, and
    the version it describes stays unknown rather than the Atom report's v2."""
    papers_upsert(records=atom_records(PINNED_V2))
    assert Paper.objects.get(arxiv_id="1707.00874").latest_version == 2

    result = papers_upsert(records=oai_records(HEP_EX_PAGE))

    assert result.updated == 1
    paper = Paper.objects.get(arxiv_id="1707.00874")
    assert paper.title.startswith("Implications of right-handed neutrinos")
    assert (paper.updated, paper.latest_version, paper.primary_category.code) == (
        dt.date(2017, 12, 13),
        None,
        "hep-ph",
    )


def test_known_versions_still_order_reports_and_fill_an_unknown_one():
    """arXivRaw lists the versions: a later report of an unknown version on the same date as
    the latest listed one changes nothing, and the version stays known."""
    record = next(r for r in arxiv_raw_records() if len(r.versions) >= 3)
    papers_upsert(records=[record])
    unversioned = dataclasses.replace(
        record, versions=[], latest_version=None, title="Same version, other format"
    )

    result = papers_upsert(records=[unversioned])

    paper = Paper.objects.get(arxiv_id=record.arxiv_id)
    assert result.unchanged == 1
    assert (paper.latest_version, paper.title) == (record.latest_version, record.title)


# --- several DOIs in one field ---------------------------------------------------------------


def test_several_dois_in_one_field_are_split_stored_and_each_linked(client, api_client):
    [record] = oai_records(SEVERAL_DOIS)
    papers_upsert(records=[record])

    paper = Paper.objects.get(arxiv_id="1601.03238")
    expected = [
        "10.1103/PhysRevD.93.016005",
        "10.1103/PhysRevD.98.079901",
        "10.1103/PhysRevD.98.079903",
    ]
    assert paper.dois == expected
    assert paper.doi == record.doi  # the field as received

    page = client.get(paper.get_absolute_url()).content.decode()
    for doi in expected:
        assert f'href="https://doi.org/{doi}"' in page
    assert "https://doi.org/10.1103/PhysRevD.93.016005,%20" not in page

    data = api_client.get("/api/v1/papers/1601.03238/").json()
    assert (data["doi"], data["dois"]) == (expected[0], expected)


def test_a_doi_field_that_holds_no_doi_is_kept_as_text_and_not_linked(client):
    [record] = oai_records(SEVERAL_DOIS)
    papers_upsert(records=[dataclasses.replace(record, doi="not a DOI; see journal")])

    paper = Paper.objects.get(arxiv_id="1601.03238")
    assert (paper.doi, paper.dois) == ("not a DOI; see journal", [])
    page = client.get(paper.get_absolute_url()).content.decode()
    assert "not a DOI; see journal" in page and "doi.org" not in page


# --- repaired double-encoded text is recorded ------------------------------------------------


def test_repaired_author_keeps_its_raw_string_and_flags_the_paper(admin_client):
    papers_upsert(records=atom_records(MOJIBAKE_FEED))

    authorship = Authorship.objects.get(author__name="Dirk Wübben")
    assert authorship.name_raw == "Dirk WÃ¼bben"
    assert not Author.objects.filter(name="Dirk WÃ¼bben").exists()
    paper = authorship.paper
    assert paper.text_repaired
    # A name that needed nothing keeps no raw copy.
    assert set(paper.authorships.exclude(pk=authorship.pk).values_list("name_raw", flat=True)) == {
        ""
    }

    assert admin_listed(admin_client, text_repaired__exact="1") == {paper.arxiv_id}
    detail = admin_client.get(reverse("admin:papers_paper_change", args=[paper.pk]))
    assert "Dirk WÃ¼bben" in detail.content.decode()


def test_a_repaired_title_flags_the_paper():
    """2306.03845's title arrives as ``$Ï\\x89$Test`` (UTF-8 read as Latin-1) in the API feed."""
    feed = ATOM_2026 / "q_testing_s0_m100_cfe7536492ca.xml"
    papers_upsert(records=atom_records(feed))

    paper = Paper.objects.get(arxiv_id="2306.03845")
    assert paper.text_repaired
    assert paper.title.startswith("$ω$Test") and paper.title_raw.startswith("$Ï\x89$Test")


def test_correct_unicode_and_tex_are_not_repairs():
    """The snapshot head: real UTF-8 names (Kaggle's authors_parsed) and TeX accents in
    titles and author lines (``Bal\\'azs``) are read, never counted as repairs."""
    with SNAPSHOT_HEAD.open("rb") as stream:
        records = list(iter_snapshot(stream, source=str(SNAPSHOT_HEAD)))
    papers_upsert(records=records)

    assert Paper.objects.count() == 200
    assert not Paper.objects.filter(text_repaired=True).exists()


# --- an entry without a title is stored, flagged ---------------------------------------------


@pytest.mark.parametrize(
    ("path", "parse", "arxiv_id"),
    [
        (EDITED / "oai_arXiv_1305.0014_no_title.xml", oai_records, "1305.0014"),
        (EDITED / "atom_1605.08386_no_title.xml", atom_records, "1605.08386"),
    ],
)
def test_an_entry_without_a_title_is_stored_with_a_placeholder_and_flagged(
    admin_client, path, parse, arxiv_id
):
    result = papers_upsert(records=parse(path))

    assert (result.created, result.errors) == (1, [])
    paper = Paper.objects.get(arxiv_id=arxiv_id)
    assert (paper.title, paper.title_missing) == (Paper.TITLE_PLACEHOLDER, True)
    assert admin_listed(admin_client, title_missing__exact="1") == {arxiv_id}


def test_a_snapshot_line_without_a_title_is_stored_and_a_later_title_clears_the_flag(tmp_path):
    """Line 1 of the snapshot head (0704.0001) with ``title`` set to null."""
    line = snapshot_lines()[0]
    path = tmp_path / "untitled.jsonl"
    path.write_text(json.dumps({**line, "title": None}) + "\n")

    summary = snapshot_import(path=path, tag=False)

    assert (summary.created, summary.rejected) == (1, 0)
    assert Paper.objects.get(arxiv_id="0704.0001").title_missing

    # The same version with its title: a real title always wins over the placeholder.
    record = parse_snapshot_line(json.dumps(line), source="head", line_number=1)
    papers_upsert(records=[record])
    paper = Paper.objects.get(arxiv_id="0704.0001")
    assert not paper.title_missing
    assert paper.title.startswith("Calculation of prompt diphoton production")


# --- duplicates, control characters, limits, messages, names ---------------------------------


def page_with_a_repeated_record(directory) -> None:
    """The real arXivRaw page with its first ``<record>`` repeated at the end, and a manifest
    that replays it (``harvest --recorded directory``)."""
    page = ARXIV_RAW_PAGE.read_bytes()
    start = page.index(b"<record>")
    end = page.index(b"</record>", start) + len(b"</record>")
    close = page.index(b"<resumptionToken")
    (directory / "page.xml").write_bytes(page[:close] + page[start:end] + page[close:])
    entry = {
        "kind": "oai",
        "file": "page.xml",
        "params": {"verb": "ListRecords", "resumptionToken": "496549|46001"},
    }
    (directory / "manifest.json").write_text(json.dumps({"entries": [entry]}))


def test_a_record_twice_in_one_page_is_counted_as_a_duplicate(tmp_path):
    """The real arXivRaw page with its first ``<record>`` repeated at the end."""
    page_with_a_repeated_record(tmp_path)

    summary = harvest_run(kind="recorded", params={"directory": str(tmp_path)})

    assert (summary.created, summary.duplicates) == (1000, 1)
    run = HarvestRun.objects.get(pk=summary.run_id)
    assert run.records_duplicate == 1


def test_a_snapshot_line_repeated_in_a_batch_is_counted(tmp_path):
    lines = SNAPSHOT_HEAD.read_text().splitlines()
    path = tmp_path / "repeated.jsonl"
    path.write_text("\n".join([*lines[:5], lines[2]]) + "\n")

    summary = snapshot_import(path=path, tag=False)

    assert (summary.lines, summary.created, summary.duplicates) == (6, 5, 1)


@pytest.mark.parametrize("writer", ["import_snapshot", "harvest_snapshot"])
def test_control_characters_are_refused_on_the_snapshot_paths(tmp_path, writer):
    """0704.0002's title with a BEL (U+0007) and 0704.0003's abstract with an ESC (U+001B)."""
    lines = snapshot_lines()[:4]
    lines[1]["title"] = "Sparsity-certifying\x07 Graph Decompositions"
    lines[2]["abstract"] = lines[2]["abstract"] + "\x1b[31m"
    path = tmp_path / "controls.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))

    if writer == "import_snapshot":
        errors = snapshot_import(path=path, tag=False).errors
    else:
        errors = harvest_run(kind="snapshot", params={"path": str(path)}).errors

    messages = sorted(str(error) for error in errors)
    assert len(messages) == 2
    assert (
        "0704.0002" in messages[0]
        and "title contains a control character (U+0007)" in (messages[0])
    )
    assert (
        "0704.0003" in messages[1]
        and "abstract contains a control character (U+001B)" in (messages[1])
    )
    assert sorted(Paper.objects.values_list("arxiv_id", flat=True)) == ["0704.0001", "0704.0004"]


@pytest.mark.parametrize("field", ["title", "abstract", "comments"])
def test_over_long_text_is_rejected_naming_the_record_and_field(field):
    records = arxiv_raw_records()[:2]
    limit = TEXT_LIMITS[field]
    records[0] = dataclasses.replace(records[0], **{field: "x" * (limit + 1)})

    result = papers_upsert(records=records, source="page.xml")

    [error] = result.errors
    assert (error.source, error.record) == ("page.xml", records[0].arxiv_id)
    assert f"{field} is {limit + 1} characters long, more than {limit}" in str(error)
    assert list(Paper.objects.values_list("arxiv_id", flat=True)) == [records[1].arxiv_id]


def test_an_over_long_author_name_is_rejected_naming_the_author():
    records = arxiv_raw_records()[:1]
    author = dataclasses.replace(records[0].authors[0], name="A" * 301)
    records[0] = dataclasses.replace(records[0], authors=[author, *records[0].authors[1:]])

    [error] = papers_upsert(records=records, source="page.xml").errors

    assert "author 1 name longer than 300 characters" in str(error)
    assert records[0].arxiv_id in str(error)


@pytest.mark.parametrize(
    ("versions", "message"),
    [
        ("x", "versions is a string ('x'), expected a list of objects"),
        (["x"], "versions[0] is a string ('x'), expected an object"),
        ([{"version": "v1", "created": 3}], 'versions[0] "created" is a number (3)'),
    ],
)
def test_malformed_snapshot_versions_get_a_message_a_person_can_act_on(tmp_path, versions, message):
    line = {**snapshot_lines()[0], "versions": versions}
    path = tmp_path / "versions.jsonl"
    path.write_text(json.dumps(line) + "\n")

    [error] = snapshot_import(path=path, tag=False).errors

    assert str(error).startswith(f"{path}, line 1: {message}")
    assert "attribute" not in str(error)


def test_an_id_that_is_not_text_gets_a_message_a_person_can_act_on():
    line = json.dumps({**snapshot_lines()[0], "id": 704.0001})

    with pytest.raises(ParseError, match="id is a number \\(704.0001\\), expected a string"):
        parse_snapshot_line(line, source="head", line_number=1)


def test_hyphenated_initials_stay_as_written():
    """0704.0001: the author line says "C.-P. Yuan", Kaggle's authors_parsed "C. -P."."""
    line = SNAPSHOT_HEAD.read_text().splitlines()[0]
    record = parse_snapshot_line(line, source="head", line_number=1)
    papers_upsert(records=[record])

    names = list(
        Paper.objects.get(arxiv_id="0704.0001")
        .authorships.order_by("position")
        .values_list("author__name", flat=True)
    )
    assert names[-1] == "C.-P. Yuan"
    assert Author.objects.get(name="C.-P. Yuan").forenames == "C.-P."


def test_the_x_collaboration_and_x_collaboration_are_one_author():
    """The snapshot writes "The BABAR Collaboration" (0704.0020); arXivRaw author lines write
    "The KamLAND Collaboration" and "for the JLQCD Collaboration"."""
    snapshot = [
        parse_snapshot_line(line, source="head", line_number=n)
        for n, line in enumerate(SNAPSHOT_HEAD.read_text().splitlines(), start=1)
    ]
    babar = next(record for record in snapshot if record.arxiv_id == "0704.0020")
    assert babar.authors[0].name == "BABAR Collaboration"
    raw = arxiv_raw_records()
    names = {author.name for record in raw for author in record.authors}
    assert {"KamLAND Collaboration", "JLQCD Collaboration"} <= names
    assert not any(name.lower().startswith("the ") for name in names)

    # Either spelling of a collaboration, stored, is one author.
    other = dataclasses.replace(
        raw[0],
        authors=[dataclasses.replace(raw[0].authors[0], name="BABAR Collaboration")],
    )
    papers_upsert(records=[babar, other])
    assert Author.objects.filter(name__icontains="BABAR Collaboration").count() == 1


def test_harvest_command_reports_duplicates(tmp_path):
    """``harvest --recorded`` on the arXivRaw page with a record repeated says so."""
    page_with_a_repeated_record(tmp_path)
    out = StringIO()
    call_command("harvest", "--recorded", str(tmp_path), "--sync", stdout=out)

    assert "1000 created" in out.getvalue() and "1 duplicates" in out.getvalue()


def test_a_doi_field_edited_in_the_admin_is_split_again(rf):
    from django.contrib.admin.sites import site

    [record] = oai_records(SEVERAL_DOIS)
    papers_upsert(records=[record])
    paper = Paper.objects.get(arxiv_id="1601.03238")
    paper.doi = "10.1103/PhysRevD.93.016005; 10.1103/PhysRevD.99.000001"

    form = type("Form", (), {"changed_data": ["doi"]})()
    site._registry[Paper].save_model(rf.post("/"), paper, form, change=True)

    paper.refresh_from_db()
    assert paper.dois == ["10.1103/PhysRevD.93.016005", "10.1103/PhysRevD.99.000001"]
    assert paper.doi_links == paper.dois


@pytest.mark.django_db(transaction=True)
def test_the_migration_splits_stored_dois_and_forgets_invented_versions():
    """Papers stored before migration 0008: their DOI fields are split into ``dois``, and a
    version 1 that an OAI arXiv-format record never gave becomes unknown."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before = [("papers", "0007_paper_deleted_at_live_index")]
    executor = MigrationExecutor(connection)
    # Forward again to every app's latest migration, so the tests after this one find the
    # whole schema whatever this one unapplied.
    after = executor.loader.graph.leaf_nodes()
    executor.migrate(before)
    try:
        apps = executor.loader.project_state(before).apps
        OldPaper = apps.get_model("papers", "Paper")
        category = apps.get_model("papers", "Category").objects.create(
            code="hep-ph", name="HEP - Phenomenology", archive="hep-ph", group="physics"
        )
        common = {"primary_category": category, "submitted": dt.date(2016, 1, 13)}
        OldPaper.objects.create(
            arxiv_id="1601.03238",
            title="Several DOIs",
            doi="10.1103/PhysRevD.93.016005, 10.1103/PhysRevD.98.079901;10.1103/PhysRevD.98.079903",
            latest_version=3,
            source="oai:arXivRaw",
            **common,
        )
        OldPaper.objects.create(
            arxiv_id="1707.00874",
            title="No version",
            latest_version=1,
            source="oai:arXiv",
            **common,
        )
        executor = MigrationExecutor(connection)
        executor.migrate(after)
    finally:
        MigrationExecutor(connection).migrate(after)

    rows = dict(Paper.objects.values_list("arxiv_id", "dois"))
    assert rows["1601.03238"] == [
        "10.1103/PhysRevD.93.016005",
        "10.1103/PhysRevD.98.079901",
        "10.1103/PhysRevD.98.079903",
    ]
    versions = dict(Paper.objects.values_list("arxiv_id", "latest_version"))
    assert versions == {"1601.03238": 3, "1707.00874": None}
