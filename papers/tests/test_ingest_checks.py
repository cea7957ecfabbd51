"""Bad input: records rejected by name and field (unknown categories, invalid identifiers, values
the database would refuse, implausible dates and versions), bad files and poisoned pages in a
harvest, while the rest is stored."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re

import pytest
from django.core.cache import cache
from django.utils import timezone

from papers.harvest import harvest_run
from papers.ingest import papers_upsert
from papers.ingest.checks import EARLIEST_DATE, MAX_VERSION
from papers.models import (
    HarvestRun,
    Paper,
    PaperVersion,
)
from papers.records import ParseError, Version

from .conftest import (
    ARXIV_RAW_PAGE,
    OAI_DC_PAGE,
    SNAPSHOT_HEAD,
    arxiv_raw_record,
    arxiv_raw_records,
    snapshot_records,
)
from .httpserver import LocalHttpServer, Reply, oai_pages, oai_token

pytestmark = pytest.mark.django_db


# --- records rejected by name ---------------------------------------------------------------------


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


def test_invalid_identifier_is_rejected_by_name_and_a_missing_title_is_flagged():
    records = arxiv_raw_records()[:3]
    records[0] = dataclasses.replace(records[0], arxiv_id="hepth/9901001")
    records[1] = dataclasses.replace(records[1], title="  ", title_raw="")

    result = papers_upsert(records=records, source="page.xml")

    assert [e.record for e in result.errors] == ["hepth/9901001"]
    untitled = Paper.objects.get(arxiv_id=records[1].arxiv_id)
    assert (untitled.title, untitled.title_missing) == (Paper.TITLE_PLACEHOLDER, True)
    assert not Paper.objects.get(arxiv_id=records[2].arxiv_id).title_missing


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
