"""papers.parsers.snapshot on the real head of the Kaggle snapshot (see tests/data/SOURCES.md)."""

import datetime as dt
import json
from pathlib import Path

import pytest

from papers.parsers import parse_rfc2822
from papers.parsers.snapshot import iter_snapshot, parse_snapshot_line, snapshot_line
from papers.records import AuthorName, ParseError, Version

SNAPSHOT = Path(__file__).parent / "data" / "snapshot" / "arxiv-metadata-oai-snapshot_head200.jsonl"
UTC = dt.UTC


@pytest.fixture(scope="module")
def records():
    with SNAPSHOT.open("rb") as stream:
        return list(iter_snapshot(stream, source=SNAPSHOT.name))


@pytest.fixture(scope="module")
def by_id(records):
    return {record.arxiv_id: record for record in records}


def real_lines() -> list[bytes]:
    return SNAPSHOT.read_bytes().splitlines(keepends=True)


def test_all_200_records(records):
    assert len(records) == 200
    assert records[0].arxiv_id == "0704.0001" and records[-1].arxiv_id == "0704.0200"
    assert sum(len(record.versions) > 1 for record in records) == 87
    assert sum(bool(record.cross_lists) for record in records) == 78
    assert sum(bool(record.doi) for record in records) == 117
    assert sum(bool(record.journal_ref) for record in records) == 109
    assert sum(bool(record.report_no) for record in records) == 16
    assert sum(bool(record.license) for record in records) == 19
    assert sum("\n" in record.title_raw for record in records) == 68
    assert not any("\n" in record.title for record in records)
    assert all(record.source == "snapshot" for record in records)


def test_versions_and_dates(by_id):
    record = by_id["0704.0001"]
    assert record.versions == [
        Version(number=1, submitted=dt.datetime(2007, 4, 2, 19, 18, 42, tzinfo=UTC)),
        Version(number=2, submitted=dt.datetime(2007, 7, 24, 20, 10, 27, tzinfo=UTC)),
    ]
    assert record.latest_version == 2
    assert record.submitted == dt.date(2007, 4, 2)
    # update_date (2008-11-26) is when arXiv last touched the record, not the latest version.
    assert record.updated == dt.date(2007, 7, 24)
    assert record.datestamp == dt.date(2008, 11, 26)
    assert record.title == (
        "Calculation of prompt diphoton production cross sections at Tevatron and LHC energies"
    )
    assert record.categories == ["hep-ph"]
    assert record.report_no == "ANL-HEP-PR-07-12"
    assert record.submitter == "Pavel Nadolsky"
    assert record.license == ""


def test_authors_from_authors_parsed(by_id):
    assert by_id["0704.0001"].authors[:2] == [
        AuthorName(name="C. Balázs", keyname="Balázs", forenames="C."),
        AuthorName(name="E. L. Berger", keyname="Berger", forenames="E. L."),
    ]
    evans = AuthorName(name="Neal J. Evans II", keyname="Evans", forenames="Neal J.", suffix="II")
    assert evans in by_id["0704.0009"].authors


def test_fourth_element_is_the_affiliation(records, by_id):
    assert sum(any(author.affiliations for author in record.authors) for record in records) == 23
    assert by_id["0704.0163"].authors[0] == AuthorName(
        name="Peter Brommer",
        keyname="Brommer",
        forenames="Peter",
        affiliations=("Institut für Theoretische und Angewandte Physik, Universität Stuttgart",),
    )
    assert [author.affiliations for author in by_id["0704.0155"].authors] == [
        ("SRON Groningen",),
        ("Onsala",),
        ("Stockholm",),
        ("Leiden",),
        ("Leiden",),
    ]


def test_withdrawn_by_comment(records, by_id):
    assert [record.arxiv_id for record in records if record.withdrawn] == ["0704.0156"]
    assert by_id["0704.0156"].comments.startswith("This paper has been withdrawn by the authors.")


def test_reads_one_line_at_a_time():
    lines = real_lines()
    consumed = []

    def stream():
        for line in lines:
            consumed.append(line)
            yield line

    records = iter_snapshot(stream(), source="lazy.jsonl")
    first = next(records)
    assert first.arxiv_id == "0704.0001"
    assert len(consumed) == 1


def test_bad_line_raises_naming_line_and_source(tmp_path):
    lines = real_lines()
    path = tmp_path / "broken.jsonl"
    path.write_bytes(
        b"".join(lines[:100]) + b'{"id": "0704.9999", "title": \n' + b"".join(lines[100:])
    )
    seen = []
    with path.open("rb") as stream, pytest.raises(ParseError) as caught:
        for record in iter_snapshot(stream, source=str(path)):
            seen.append(record.arxiv_id)
    assert len(seen) == 100
    assert caught.value.record == "line 101"
    assert caught.value.source == str(path)
    assert str(caught.value).startswith(f"{path}, line 101: invalid JSON")


def test_bad_line_goes_to_on_error_and_the_rest_come_through(tmp_path):
    lines = real_lines()
    path = tmp_path / "broken.jsonl"
    path.write_bytes(b"".join(lines[:100]) + b"{not json\n" + b"".join(lines[100:]))
    errors = []
    with path.open("rb") as stream:
        records = list(iter_snapshot(stream, source="broken.jsonl", on_error=errors.append))
    assert len(records) == 200
    assert [(error.source, error.record) for error in errors] == [("broken.jsonl", "line 101")]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"id": None}, "missing id"),
        ({"id": "0808.05394"}, "not an arXiv identifier: '0808.05394'"),
        ({"versions": [{"version": "v1", "created": "yesterday"}]}, "not an RFC 2822 date"),
        ({"versions": [{"version": "one", "created": "Mon, 2 Apr 2007 19:18:42 GMT"}]}, "version"),
    ],
)
def test_invalid_records_are_parse_errors(changes, message):
    data = {**json.loads(real_lines()[0]), **changes}
    with pytest.raises(ParseError, match=message) as caught:
        parse_snapshot_line(json.dumps(data), source="x.jsonl", line_number=7)
    assert caught.value.record == "line 7"


def test_parse_snapshot_line_takes_text_or_bytes():
    line = real_lines()[1]
    from_bytes = parse_snapshot_line(line, source="s", line_number=2)
    from_text = parse_snapshot_line(line.decode(), source="s", line_number=2)
    assert from_bytes == from_text
    assert from_bytes.arxiv_id == "0704.0002"
    assert from_bytes.categories == ["math.CO", "cs.CG"]


def test_non_object_line_and_blank_lines():
    with pytest.raises(ParseError, match="not a JSON object"):
        parse_snapshot_line("[1, 2]", source="s", line_number=1)
    lines = real_lines()[:2]
    records = list(iter_snapshot([lines[0], b"\n", lines[1]], source="s"))
    assert [record.arxiv_id for record in records] == ["0704.0001", "0704.0002"]


def test_old_style_id_and_missing_authors_parsed():
    data = {
        **json.loads(real_lines()[0]),
        "id": "hep-th/9901001",
        "authors": "Robert H. Brandenberger (McGill) and Anne-Christine Davis (DAMTP, Cambridge)",
        "authors_parsed": None,
    }
    record = parse_snapshot_line(json.dumps(data), source="s", line_number=1)
    assert record.arxiv_id == "hep-th/9901001"
    assert record.authors == [
        AuthorName(name="Robert H. Brandenberger", affiliations=("McGill",)),
        AuthorName(name="Anne-Christine Davis", affiliations=("DAMTP, Cambridge",)),
    ]


def test_parse_error_survives_pickling_as_celery_needs():
    import pickle

    from papers.records import ParseError

    error = pickle.loads(pickle.dumps(ParseError("bad JSON", source="a.jsonl", record="line 3")))

    assert (error.message, error.source, error.record) == ("bad JSON", "a.jsonl", "line 3")
    assert str(error) == "a.jsonl, line 3: bad JSON"


def test_snapshot_line_round_trips_the_real_records(records):
    lines = [snapshot_line(record) for record in records]
    assert list(iter_snapshot((line.encode() for line in lines), source="s")) == records


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Mon, 2 Apr 2007 19:18:42 GMT", dt.datetime(2007, 4, 2, 19, 18, 42, tzinfo=UTC)),
        ("Wed, 23 Jan 2008 21:06:41 GMT", dt.datetime(2008, 1, 23, 21, 6, 41, tzinfo=UTC)),
        # Other RFC 2822 spellings go through the general parser.
        ("23 Jan 2008 22:06:41 +0100", dt.datetime(2008, 1, 23, 21, 6, 41, tzinfo=UTC)),
        ("Wed, 23 Jan 2008 21:06:41 -0000", dt.datetime(2008, 1, 23, 21, 6, 41, tzinfo=UTC)),
    ],
)
def test_version_dates(text, expected):
    assert parse_rfc2822(text) == expected


@pytest.mark.parametrize("text", ["Fri, 31 Feb 2007 19:18:42 GMT", "yesterday", ""])
def test_impossible_version_dates_are_refused(text):
    with pytest.raises(ValueError, match="not an RFC 2822 date"):
        parse_rfc2822(text)


def test_hostile_lines_become_named_parse_errors(tmp_path):
    """Dates at the calendar's edge, absurdly deep JSON and non-ASCII digits in the id are
    rejected per line; the good lines around them still come through."""
    import json as json_module

    from papers.parsers.snapshot import iter_snapshot

    good = {
        "id": "0704.0001",
        "title": "A title",
        "abstract": "An abstract.",
        "authors": "A. Author",
        "categories": "hep-ph",
        "versions": [{"version": "v1", "created": "Mon, 2 Apr 2007 19:18:42 GMT"}],
        "authors_parsed": [["Author", "A.", ""]],
    }
    overflow = dict(
        good, versions=[{"version": "v1", "created": "Fri, 31 Dec 9999 23:59:59 -0100"}]
    )
    arabic_digits = dict(good, id="\u0660\u0667\u0660\u0664.\u0660\u0660\u0660\u0662")
    lines = [
        json_module.dumps(good),
        json_module.dumps(overflow),
        "[" * 200_000,
        json_module.dumps(arabic_digits),
        json_module.dumps(dict(good, id="0704.0003")),
    ]
    path = tmp_path / "hostile.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    errors = []

    with path.open("rb") as stream:
        records = list(iter_snapshot(stream, source=str(path), on_error=errors.append))

    assert [r.arxiv_id for r in records] == ["0704.0001", "0704.0003"]
    assert [e.record for e in errors] == ["line 2", "line 3", "line 4"]
    assert "nested too deeply" in str(errors[1])
