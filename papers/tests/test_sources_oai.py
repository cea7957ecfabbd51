"""OaiPmhSource over HTTP: resumption tokens across pages, resuming from a chunk's position,
the protocol's errors (noRecordsMatch, badResumptionToken, idDoesNotExist) and a repeated token."""

from __future__ import annotations

import pytest

from papers.identifiers import InvalidArxivId
from papers.sources.base import Fetched, SourceError
from papers.sources.oai import OaiPmhSource

from .conftest import (
    ARXIV_RAW_PAGE,
    HEP_EX_PAGE,
    OAI_DC_PAGE,
    RECORDED_DIR,
    TEST_DATA_DIR,
)
from .httpserver import (
    Reply,
    oai_pages,
    oai_token,
    page,
    transport,
)

OAI_DC_TOKEN = "6960524|1001"
ID_DOES_NOT_EXIST = TEST_DATA_DIR / "oai" / "inspire_next" / "integration_arxiv_1305.9999.xml"
GET_RECORD_1401_2122 = RECORDED_DIR / "oai" / "arxiv-single.xml"

pytestmark = pytest.mark.usefixtures("quick_limiter")


def oai_error(code: str, message: str) -> bytes:
    """An OAI-PMH error response as the protocol specifies it (section 3.6)."""
    return (
        b'<?xml version="1.0" encoding="UTF-8"?>\n'
        b'<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/">'
        b"<responseDate>2024-01-27T00:00:00Z</responseDate>"
        b'<request verb="ListRecords">http://export.arxiv.org/oai2</request>'
        b'<error code="' + code.encode() + b'">' + message.encode() + b"</error></OAI-PMH>"
    )


def two_page_oai(request):
    """oai_dc page (token 6960524|1001), then the hep-ex page (no token) for that token."""
    if request.query.get("resumptionToken") == OAI_DC_TOKEN:
        return page(HEP_EX_PAGE)
    return page(OAI_DC_PAGE)


def test_oai_follows_resumption_token_across_pages(server):
    server.handler = two_page_oai
    source = OaiPmhSource(
        transport=transport(),
        base_url=server.url,
        metadata_prefix="oai_dc",
        set_spec="cs",
        from_date="2024-01-25",
    )

    chunks = list(source.chunks())

    assert [len(chunk.records) for chunk in chunks] == [5, 3]
    assert [chunk.resumption_token for chunk in chunks] == [OAI_DC_TOKEN, None]
    assert [chunk.position for chunk in chunks] == [
        {"resumption_token": OAI_DC_TOKEN, "restarts": 0},
        None,
    ]
    assert server.queries() == [
        {"verb": "ListRecords", "metadataPrefix": "oai_dc", "set": "cs", "from": "2024-01-25"},
        # After the first page only the token is sent, as OAI-PMH requires.
        {"verb": "ListRecords", "resumptionToken": OAI_DC_TOKEN},
    ]


def test_oai_resumes_from_a_chunk_position(server):
    server.handler = two_page_oai
    source = OaiPmhSource(transport=transport(), base_url=server.url, metadata_prefix="oai_dc")

    chunks = list(source.chunks({"resumption_token": OAI_DC_TOKEN, "restarts": 0}))

    assert [len(chunk.records) for chunk in chunks] == [3]
    assert server.queries() == [{"verb": "ListRecords", "resumptionToken": OAI_DC_TOKEN}]


def test_oai_no_records_match_is_zero_records(server):
    server.handler = lambda request: Reply(
        body=oai_error("noRecordsMatch", "The combination of the values results in an empty list.")
    )
    source = OaiPmhSource(transport=transport(), base_url=server.url, from_date="2030-01-01")

    chunks = list(source.chunks())

    assert [(chunk.records, chunk.errors, chunk.position) for chunk in chunks] == [([], [], None)]


def test_oai_bad_resumption_token_restarts_the_list_from_its_from_date(server, caplog):
    pages = oai_pages(ARXIV_RAW_PAGE, [3, 2])
    expired = {"first time": True}

    def handler(request):
        token = request.query.get("resumptionToken")
        if token is None:
            return Reply(body=pages[0])
        if expired.pop("first time", False):
            return Reply(body=oai_error("badResumptionToken", "The token has expired."))
        return Reply(body=pages[1])

    server.handler = handler
    source = OaiPmhSource(
        transport=transport(), base_url=server.url, set_spec="cs", from_date="2008-01-25"
    )

    chunks = list(source.chunks())

    assert [len(chunk.records) for chunk in chunks] == [3, 3, 2]
    assert chunks[1].position == {"resumption_token": oai_token(pages[0]), "restarts": 1}
    first = {"verb": "ListRecords", "metadataPrefix": "arXivRaw", "set": "cs", "from": "2008-01-25"}
    token_query = {"verb": "ListRecords", "resumptionToken": oai_token(pages[0])}
    assert server.queries() == [first, token_query, first, token_query]
    assert "badResumptionToken" in caplog.text and "from 2008-01-25" in caplog.text


def test_oai_bad_resumption_token_gives_up_after_bounded_restarts(server):
    pages = oai_pages(ARXIV_RAW_PAGE, [1, 1])
    server.handler = lambda request: Reply(
        body=pages[0]
        if "resumptionToken" not in request.query
        else oai_error("badResumptionToken", "expired")
    )
    source = OaiPmhSource(transport=transport(), base_url=server.url, set_spec="cs")

    with pytest.raises(SourceError, match="badResumptionToken"):
        list(source.chunks())
    # The first list, then three restarts, each ending on the refused token.
    assert len(server.requests) == 8


def test_oai_bad_token_of_a_bare_token_harvest_is_refused(server):
    server.handler = lambda request: Reply(body=oai_error("badResumptionToken", "expired"))
    source = OaiPmhSource(transport=transport(), base_url=server.url, resumption_token="1|2")

    with pytest.raises(SourceError, match="badResumptionToken: expired"):
        list(source.chunks())
    assert len(server.requests) == 1


def test_oai_get_record_reports_id_does_not_exist_for_that_id_only(server):
    files = {
        "oai:arXiv.org:1305.9999": ID_DOES_NOT_EXIST,
        "oai:arXiv.org:1401.2122": GET_RECORD_1401_2122,
    }
    server.handler = lambda request: page(files[request.query["identifier"]])
    source = OaiPmhSource(
        transport=transport(),
        base_url=server.url,
        metadata_prefix="arXiv",
        identifiers="1305.9999,1401.2122",
    )

    chunks = list(source.chunks())

    assert [[r.arxiv_id for r in chunk.records] for chunk in chunks] == [[], ["1401.2122"]]
    (gap,) = chunks[0].gaps
    assert gap.record == "1305.9999" and "idDoesNotExist" in str(gap)
    assert [chunk.position for chunk in chunks] == [{"next": 1}, None]
    assert [q["verb"] for q in server.queries()] == ["GetRecord", "GetRecord"]


def test_oai_other_errors_are_refused(server):
    server.handler = lambda request: Reply(
        body=oai_error("cannotDisseminateFormat", "no such format")
    )
    source = OaiPmhSource(transport=transport(), base_url=server.url, metadata_prefix="x")

    with pytest.raises(SourceError, match="cannotDisseminateFormat"):
        list(source.chunks())


def test_oai_list_that_repeats_its_resumption_token_stops_instead_of_looping():
    """A broken proxy answering every request with the same page and token: the first page is
    delivered, the repeat is refused with an error naming the token."""
    page = ARXIV_RAW_PAGE.read_bytes()  # ends with the token 496549|47001

    class SamePageForEver:
        requests = 0

        def get(self, url, params):
            self.requests += 1
            return Fetched(body=page, status=200, source=f"{url}?{self.requests}")

    transport = SamePageForEver()
    source = OaiPmhSource(transport=transport, base_url="http://127.0.0.1:9/oai")
    chunks = source.chunks()

    first = next(chunks)
    assert first.resumption_token == "496549|47001"
    assert len(first.records) == 1000
    with pytest.raises(SourceError, match=r"'496549\|47001' with the same token again"):
        next(chunks)
    assert transport.requests == 2


def test_oai_get_record_asks_for_the_bare_id_whatever_the_spelling(server):
    """``1305.0014v1`` used to be sent as ``oai:arXiv.org:1305.0014v1`` and ``arXiv:1305.0014``
    as ``oai:arXiv.org:arXiv:1305.0014`` (arXiv answers idDoesNotExist to both)."""
    files = {
        "oai:arXiv.org:1305.0014": RECORDED_DIR / "oai" / "integration_arxiv_1305.0014.xml",
        "oai:arXiv.org:physics/0112006": RECORDED_DIR / "oai" / "unit_workflows_oai_arxiv.xml",
    }
    server.handler = lambda request: page(files[request.query["identifier"]])
    source = OaiPmhSource(
        transport=transport(),
        base_url=server.url,
        metadata_prefix="arXiv",
        identifiers=[
            "1305.0014v1",
            "arXiv:1305.0014",
            "https://arxiv.org/abs/physics/0112006v1/",
        ],
    )

    chunks = list(source.chunks())

    assert [q["identifier"] for q in server.queries()] == list(files)
    assert [[r.arxiv_id for r in chunk.records] for chunk in chunks] == [
        ["1305.0014"],
        ["physics/0112006"],
    ]
    assert [gap for chunk in chunks for gap in chunk.gaps] == []


def test_oai_refuses_text_that_is_no_id_before_any_request(server):
    with pytest.raises(InvalidArxivId, match="'oai:arXiv.org:hepth/9901001'"):
        OaiPmhSource(
            transport=transport(),
            base_url=server.url,
            identifiers="1305.0014,oai:arXiv.org:hepth/9901001",
        )
    assert server.requests == []
