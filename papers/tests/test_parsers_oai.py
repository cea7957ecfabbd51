"""papers.parsers.oai on real arXiv OAI-PMH responses (see papers/tests/data/SOURCES.md)."""

import datetime as dt
import time
from pathlib import Path

import pytest

from papers.parsers.oai import OaiError, OaiPage, parse_oai_page
from papers.records import AuthorName, ParseError, Version

DATA = Path(__file__).parent / "data" / "oai"
RAW_PAGE = "scirate_arxivsync/listrecords_arXivRaw_token_496549-46001.xml"
DC_PAGE = "atomiklabs/listrecords_oai_dc_cs_2024-01-25_trimmed.xml"
HEP_EX_PAGE = "hepcrawl/arxiv-physics-hep-ex.xml"
SINGLE_RECORD = "hepcrawl/arxiv-single.xml"
OLD_STYLE_RECORD = "inspire_next/unit_workflows_oai_arxiv.xml"
BARE_ERROR_BODY = "paperhive_nock/oaipmh-errors-should-reject-malformed-xml-arxiv__0_http200.xml"
IDENTIFY_BODY = "paperhive_nock/oaipmh-identify---should-identify-arxiv__0_http200.xml"

WITHDRAWN = {"0801.4122", "0801.4138", "0801.4243", "0801.4311", "0801.4644"}
UTC = dt.UTC


def load(name: str) -> bytes:
    return (DATA / name).read_bytes()


def parse(name: str) -> OaiPage:
    return parse_oai_page(load(name), source=name)


@pytest.fixture(scope="module")
def raw_page() -> OaiPage:
    return parse(RAW_PAGE)


@pytest.fixture(scope="module")
def raw_records(raw_page):
    return {record.arxiv_id: record for record in raw_page.records}


# --- arXivRaw -----------------------------------------------------------------------------


def test_arxiv_raw_page_envelope(raw_page):
    assert len(raw_page.records) == 1000
    assert raw_page.errors == []
    assert raw_page.deleted == []
    assert raw_page.oai_error is None
    assert raw_page.resumption_token == "496549|47001"
    assert raw_page.complete_list_size == 907096
    assert raw_page.cursor == 46000
    assert raw_page.verb == "ListRecords"
    # The resumption request does not repeat metadataPrefix; it comes from the records.
    assert raw_page.metadata_prefix == "arXivRaw"
    assert raw_page.response_date == dt.datetime(2014, 1, 16, 10, 33, 29, tzinfo=UTC)


def test_arxiv_raw_page_counts(raw_page):
    records = raw_page.records
    assert len({record.arxiv_id for record in records}) == 1000
    assert sum(len(record.versions) > 1 for record in records) == 360
    assert sum(bool(record.cross_lists) for record in records) == 377
    assert sum(bool(record.doi) for record in records) == 573
    assert sum(bool(record.journal_ref) for record in records) == 478
    assert all(record.source == "oai:arXivRaw" for record in records)
    assert all(record.latest_version == record.versions[-1].number for record in records)


def test_titles_and_abstracts_are_unwrapped_but_raw_text_is_kept(raw_page):
    records = raw_page.records
    assert not any("\n" in record.title for record in records)
    assert sum("\n" in record.title_raw for record in records) == 413
    assert all(record.abstract == record.abstract.strip() for record in records)
    assert all(record.abstract_raw.startswith("  ") for record in records)


def test_exactly_the_five_withdrawn_papers(raw_page, raw_records):
    assert {record.arxiv_id for record in raw_page.records if record.withdrawn} == WITHDRAWN
    # 0801.4243's comment still reads "5 pages": the stub version and abstract reveal it.
    quiet = raw_records["0801.4243"]
    assert quiet.comments == "5 pages"
    assert quiet.versions[-1] == Version(
        number=2,
        submitted=dt.datetime(2009, 1, 19, 9, 40, 37, tzinfo=UTC),
        size_kb=0,
        source_type="I",
    )
    assert quiet.abstract.startswith("This paper has been withdrawn by the author")
    # 0801.4644's abstract is the real one; its stub version and comment reveal it.
    assert raw_records["0801.4644"].abstract.startswith("Wall slip and wall divergence")


def test_a_withdrawal_stub_that_is_not_the_latest_version_is_not_withdrawn(raw_records):
    for arxiv_id in ("0801.3891", "0801.4093"):
        record = raw_records[arxiv_id]
        stubs = [version for version in record.versions if version.source_type == "I"]
        assert [stub.size_kb for stub in stubs] == [0]
        assert stubs[0].number < record.latest_version
        assert not record.withdrawn


def test_records_with_a_zero_kb_version(raw_page):
    zero_kb = {
        record.arxiv_id
        for record in raw_page.records
        if any(version.size_kb == 0 for version in record.versions)
    }
    assert zero_kb == {"0801.3891", "0801.4093", "0801.4122", "0801.4243", "0801.4311", "0801.4644"}


def test_multi_version_record_with_affiliations(raw_records):
    record = raw_records["0801.3674"]
    assert [version.number for version in record.versions] == [1, 2, 3, 4]
    assert record.versions[0] == Version(
        number=1, submitted=dt.datetime(2008, 1, 23, 21, 13, 53, tzinfo=UTC), size_kb=33
    )
    assert record.versions[-1].submitted == dt.datetime(2008, 9, 11, 22, 3, 53, tzinfo=UTC)
    assert record.latest_version == 4
    assert record.submitted == dt.date(2008, 1, 23)
    assert record.updated == dt.date(2008, 9, 11)
    assert record.datestamp == dt.date(2008, 11, 26)
    assert record.authors == [
        AuthorName(name="Robert H. Brandenberger", affiliations=("McGill",)),
        AuthorName(name="Keshav Dasgupta", affiliations=("McGill",)),
        AuthorName(name="Anne-Christine Davis", affiliations=("DAMTP, Cambridge",)),
    ]
    assert record.primary_category == "hep-th"
    assert record.cross_lists == ["astro-ph", "gr-qc", "hep-ph"]
    assert record.title == (
        "A Study of Structure Formation and Reheating in the D3/D7 Brane Inflation Model"
    )
    assert record.title_raw == (
        "A Study of Structure Formation and Reheating in the D3/D7 Brane\n  Inflation Model"
    )
    assert record.comments == (
        "Some sections expanded, typos corrected and references added. "
        "Final version to appear in Phys. Rev. D"
    )
    assert record.journal_ref == "Phys.Rev.D78:083502,2008"
    assert record.doi == "10.1103/PhysRevD.78.083502"
    assert record.license == "http://arxiv.org/licenses/nonexclusive-distrib/1.0/"
    assert record.submitter == "Robert Brandenberger"
    assert not record.withdrawn


def test_single_version_record(raw_records):
    record = raw_records["0801.3673"]
    assert record.versions == [
        Version(number=1, submitted=dt.datetime(2008, 1, 23, 21, 6, 41, tzinfo=UTC), size_kb=121)
    ]
    assert record.submitted == record.updated == dt.date(2008, 1, 23)
    assert record.datestamp == dt.date(2008, 1, 25)
    assert record.authors == [AuthorName(name="Naoum C. Bacalis")]
    assert record.abstract == (
        "Functionals that have local minima at the excited states of a non degenerate "
        "Hamiltonian are presented. Then, improved mutually orthogonal approximants of the "
        "ground and the first excited state are reported."
    )


def test_author_lines_with_numbered_affiliations(raw_records):
    assert raw_records["0801.3679"].authors == [
        AuthorName(name="Peter Anders", affiliations=("University Utrecht, The Netherlands",)),
        AuthorName(name="Uta Fritze", affiliations=("University of Hertfordshire, UK",)),
        AuthorName(name="Richard de Grijs", affiliations=("University of Sheffield, UK",)),
    ]
    ando = raw_records["0801.4330"].authors[0]
    assert ando == AuthorName(name="S. Ando", affiliations=("Sungkyunkwan U.", "U. of Manchester"))


def test_author_line_conventions(raw_records):
    def names(arxiv_id):
        return [author.name for author in raw_records[arxiv_id].authors]

    # "A and B (X)": the affiliation covers both, as arXiv reads author lines.
    assert [a.affiliations for a in raw_records["0801.3684"].authors] == [("NRAO",), ("NRAO",)]
    assert names("0801.3687") == ["Isaac Chappell II", "S. James Gates Jr"]
    assert names("0801.3688") == ["E. Fersino", "G. Mussardo", "A. Trombettoni"]
    assert names("0801.3877") == ["CDF Collaboration", "T. Aaltonen"]
    # TeX accents become readable text (the raw line is arXiv's: "Jean-Claude L\\'eon").
    assert names("0801.3713")[2] == "Jean-Claude Léon"
    assert names("0801.4186")[-1] == "JLQCD Collaboration"
    assert names("0801.4016")[-1] == "RBC and UKQCD Collaborations"


def test_abstract_paragraph_break_is_kept(raw_records):
    paragraphs = raw_records["0801.3680"].abstract.split("\n\n")
    assert len(paragraphs) == 2
    assert paragraphs[1].startswith("Our result extends")


def test_a_bad_record_is_skipped_and_named_and_the_rest_kept():
    data = load(RAW_PAGE).replace(b"<id>0801.3675</id>", b"<id>0801.367</id>")
    page = parse_oai_page(data, source="page-47001.xml")
    assert len(page.records) == 999
    assert "0801.3675" not in {record.arxiv_id for record in page.records}
    [error] = page.errors
    assert error.source == "page-47001.xml"
    assert error.record == "0801.3675"
    assert "'0801.367'" in str(error) and "page-47001.xml" in str(error)


def test_a_bad_version_date_is_a_record_error():
    data = load(RAW_PAGE).replace(
        b"<date>Wed, 23 Jan 2008 21:06:41 GMT</date>", b"<date>sometime in 2008</date>"
    )
    page = parse_oai_page(data, source="page.xml")
    assert len(page.records) == 999
    assert [error.record for error in page.errors] == ["0801.3673"]
    assert "sometime in 2008" in str(page.errors[0])


def test_empty_resumption_token_marks_the_last_page():
    data = load(RAW_PAGE).replace(b">496549|47001</resumptionToken>", b"></resumptionToken>")
    page = parse_oai_page(data, source="last.xml")
    assert page.resumption_token is None
    assert page.complete_list_size == 907096
    assert page.cursor == 46000


# --- oai_dc -------------------------------------------------------------------------------


def test_oai_dc_page():
    page = parse(DC_PAGE)
    assert [record.arxiv_id for record in page.records] == [
        "1303.2033",
        "2401.14034",
        "2401.14036",
        "2401.14038",
        "2401.14040",
    ]
    assert page.errors == []
    assert page.resumption_token == "6960524|1001"
    assert page.complete_list_size == 1162
    assert page.cursor == 0
    assert page.metadata_prefix == "oai_dc"
    assert all(record.source == "oai:oai_dc" for record in page.records)


def test_oai_dc_old_paper_with_a_new_datestamp():
    record = parse(DC_PAGE).records[0]
    assert record.arxiv_id == "1303.2033"
    assert record.datestamp == dt.date(2024, 1, 25)
    assert record.submitted == dt.date(2013, 3, 8)
    assert record.updated == dt.date(2024, 1, 23)
    assert record.versions == []
    assert record.categories == ["cs.DS", "cs.IT", "math.NA"]
    assert record.authors == [
        AuthorName(name="Vilnis Liepins", keyname="Liepins", forenames="Vilnis")
    ]
    assert record.comments == "32 pages, 9 figures"
    assert record.abstract.startswith("This summary of the doctoral thesis")
    assert not record.abstract.startswith("Comment")


def test_oai_dc_subject_names_map_to_codes():
    records = parse(DC_PAGE).records
    assert [record.categories for record in records[1:]] == [
        ["cs.CV"],
        ["cs.CV"],
        ["cs.CV"],
        ["cs.CL"],
    ]
    last = records[-1]
    assert last.comments == "Accepted to the Findings of EACL 2024"
    assert last.authors[0] == AuthorName(
        name="Francesco Periti", keyname="Periti", forenames="Francesco"
    )
    assert last.submitted == last.updated == dt.date(2024, 1, 25)


def test_oai_dc_record_without_a_known_subject_is_a_record_error():
    data = load(DC_PAGE).replace(
        b"Computer Science - Computation and Language", b"Underwater Basket Weaving"
    )
    page = parse_oai_page(data, source="dc.xml")
    assert [record.arxiv_id for record in page.records] == [
        "1303.2033",
        "2401.14034",
        "2401.14036",
        "2401.14038",
    ]
    [error] = page.errors
    assert error.record == "2401.14040"
    assert "Underwater Basket Weaving" in str(error)


# --- arXiv format -------------------------------------------------------------------------


def test_arxiv_format_list_records():
    page = parse(HEP_EX_PAGE)
    assert page.errors == []
    assert page.resumption_token is None
    assert page.metadata_prefix == "arXiv"
    first, second, third = page.records
    assert first.arxiv_id == "1706.05371"
    assert first.categories == ["physics.ins-det", "hep-ex"]
    assert len(first.authors) == 13
    assert first.authors[0] == AuthorName(
        name="Tyler Anderson", keyname="Anderson", forenames="Tyler"
    )
    assert first.submitted == dt.date(2017, 6, 16)
    assert first.updated == dt.date(2017, 12, 12)
    assert first.datestamp == dt.date(2017, 12, 14)
    # The arXiv format lists no versions: which one this describes is unknown, not v1.
    assert first.versions == [] and first.latest_version is None
    assert first.source == "oai:arXiv"
    assert second.report_no == "BONN-TH-2017-03"
    assert second.journal_ref == "Eur. Phys. J. C (2017) 77:856"
    assert second.cross_lists == ["hep-ex"]
    assert "$\\bar U\\bar D\\bar D$" in " ".join(record.abstract for record in page.records)
    assert third.categories == ["hep-ph", "astro-ph.CO", "hep-ex"]


def test_arxiv_format_get_record_keeps_paragraphs():
    page = parse(SINGLE_RECORD)
    assert page.verb == "GetRecord"
    [record] = page.records
    assert record.arxiv_id == "1401.2122"
    assert record.categories == ["math.AP", "hep-th", "math-ph", "math.DG", "math.MP", "nlin.SI"]
    assert record.submitted == dt.date(2014, 1, 9)
    assert record.updated == dt.date(2017, 10, 23)
    assert record.authors == [AuthorName(name="A. Sergyeyev", keyname="Sergyeyev", forenames="A.")]
    assert "\n" not in record.comments and record.comments.startswith("16 pages, LaTeX")
    first, second = record.abstract.split("\n\n")
    assert first.endswith("involve contact vector fields.")
    assert second.startswith("In particular, we present new large classes")


def test_arxiv_format_old_style_id_with_affiliations():
    [record] = parse(OLD_STYLE_RECORD).records
    assert record.arxiv_id == "physics/0112006"
    assert record.authors == [
        AuthorName(
            name="G. Fiorentini",
            keyname="Fiorentini",
            forenames="G.",
            affiliations=("INFN, Sezione di Ferrara, Ferrara, Italy",),
        ),
        AuthorName(
            name="L. Okun", keyname="Okun", forenames="L.", affiliations=("ITEP, Moscow, Russia",)
        ),
        AuthorName(
            name="M. Vysotsky",
            keyname="Vysotsky",
            forenames="M.",
            affiliations=("ITEP, Moscow, Russia",),
        ),
    ]
    assert record.categories == ["physics.class-ph", "physics.gen-ph"]
    assert record.submitted == record.updated == dt.date(2001, 12, 4)
    assert record.doi == "10.1134/1.1533770"
    assert record.abstract.startswith("By using fundamental units c, h, G as conversion factors")
    assert "\n" not in record.abstract


@pytest.mark.parametrize(
    ("name", "arxiv_id", "authors"),
    [
        ("inspire_next/integration_arxiv_1305.0014.xml", "1305.0014", 2),
        ("inspire_next/e2e_vcr_getrecord_1806.05669.xml", "1806.05669", 3),
        ("inspire_next/integration_workflows_oai_arxiv_record_to_accept.xml", "1511.01097", 7),
        ("inspire_next/integration_workflows_oai_arxiv_core_record.xml", "1407.7587", 2),
    ],
)
def test_inspire_get_records(name, arxiv_id, authors):
    page = parse(name)
    assert page.errors == []
    [record] = page.records
    assert record.arxiv_id == arxiv_id
    assert len(record.authors) == authors
    assert all(author.keyname and author.forenames for author in record.authors)
    assert record.title and "\n" not in record.title


def test_pretty_printed_title_is_stripped():
    [record] = parse("inspire_next/integration_arxiv_1305.0014.xml").records
    assert record.title.startswith("Framework for maximum likelihood analysis")
    assert record.title_raw.startswith("\n")


# --- OAI errors, malformed and hostile bodies --------------------------------------------


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "inspire_next/integration_arxiv_1305.9999.xml",
            "Identifier 'oai:arXiv.org:1305.9999' has correct form but does not correspond to "
            "an item in this repository",
        ),
        (
            "inspire_next/integration_arxiv_is-malformed.xml",
            "Malformed identifier `oai:arXiv.org:is-malformed'",
        ),
    ],
)
def test_id_does_not_exist(name, message):
    page = parse(name)
    assert page.oai_error == OaiError(code="idDoesNotExist", message=message)
    assert page.records == [] and page.errors == []
    assert page.metadata_prefix == "arXiv"


@pytest.mark.parametrize(
    "code", ["noRecordsMatch", "badResumptionToken", "cannotDisseminateFormat", "badArgument"]
)
def test_other_oai_error_codes(code):
    # Envelope as in the OAI-PMH 2.0 specification, section 3.6 (no real arXiv sample exists).
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/">'
        "<responseDate>2024-01-27T17:53:42Z</responseDate>"
        '<request verb="ListRecords">http://export.arxiv.org/oai2</request>'
        f'<error code="{code}">explanation</error></OAI-PMH>'
    ).encode()
    page = parse_oai_page(body, source="error.xml")
    assert page.oai_error == OaiError(code=code, message="explanation")
    assert page.records == [] and page.resumption_token is None


def test_deleted_records_are_listed_not_parsed():
    body = b"""<?xml version="1.0" encoding="UTF-8"?>
<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/">
<responseDate>2024-01-27T17:53:42Z</responseDate>
<request verb="ListRecords" metadataPrefix="arXivRaw">http://export.arxiv.org/oai2</request>
<ListRecords>
<record><header status="deleted"><identifier>oai:arXiv.org:hep-th/9901001</identifier>
<datestamp>2024-01-25</datestamp></header></record>
<resumptionToken cursor="0" completeListSize="1"/>
</ListRecords></OAI-PMH>"""
    page = parse_oai_page(body, source="deleted.xml")
    assert page.deleted == ["hep-th/9901001"]
    assert page.records == [] and page.errors == []
    assert page.resumption_token is None and page.complete_list_size == 1


def test_bare_error_body_without_envelope_is_refused():
    with pytest.raises(ParseError) as caught:
        parse(BARE_ERROR_BODY)
    message = str(caught.value)
    assert BARE_ERROR_BODY in message
    assert "not an OAI-PMH response" in message and "line 2" in message


def test_identify_response_is_not_a_record_page():
    with pytest.raises(ParseError, match="Identify"):
        parse(IDENTIFY_BODY)


def test_truncated_xml_names_source_line_and_column():
    data = load(RAW_PAGE)
    truncated = data[: len(data) // 2]
    with pytest.raises(ParseError) as caught:
        parse_oai_page(truncated, source="cut.xml")
    message = str(caught.value)
    assert message.startswith("cut.xml: not well-formed XML at line ")
    assert ", column " in message
    assert caught.value.source == "cut.xml"


@pytest.mark.parametrize("body", [b"", b"<html><body>503 Service Unavailable</body></html>"])
def test_empty_or_html_body_is_refused(body):
    with pytest.raises(ParseError, match="proxy.html"):
        parse_oai_page(body, source="proxy.html")


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/">
<responseDate>2024-01-27T17:53:42Z</responseDate>
<error code="badArgument">&lol9;</error>
</OAI-PMH>"""


def test_billion_laughs_is_refused_quickly():
    started = time.monotonic()
    # libxml2 may stop at its amplification limit before the DTD check; refused either way.
    with pytest.raises(ParseError, match="^lolz.xml: "):
        parse_oai_page(BILLION_LAUGHS, source="lolz.xml")
    assert time.monotonic() - started < 1


def test_external_entity_is_never_read(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-VALUE")
    body = f"""<?xml version="1.0"?>
<!DOCTYPE OAI-PMH [<!ENTITY xxe SYSTEM "file://{secret}">]>
<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/">
<responseDate>2024-01-27T17:53:42Z</responseDate>
<error code="badArgument">&xxe;</error>
</OAI-PMH>""".encode()
    with pytest.raises(ParseError) as caught:
        parse_oai_page(body, source="xxe.xml")
    assert "TOP-SECRET-VALUE" not in str(caught.value)
    assert str(caught.value).startswith("xxe.xml: document type declarations")
