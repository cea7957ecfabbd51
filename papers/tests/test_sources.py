"""Transports and sources: HTTP against a local server serving real recorded bodies, the
recorded-files transport, OAI resumption, API paging, and harvest checkpoints."""

from __future__ import annotations

import json

import pytest
import requests

from papers.models import Paper
from papers.services import harvest_run
from papers.sources import (
    AtomApiSource,
    HarvestError,
    HttpTransport,
    ManifestError,
    NotRecorded,
    OaiPmhSource,
    RecordedTransport,
    SnapshotSource,
    SourceError,
    recorded_sources,
    sources_for,
)

from .conftest import (
    ARXIV_RAW_PAGE,
    ATOM_DIR,
    HEP_EX_PAGE,
    OAI_DC_PAGE,
    RECORDED_DIR,
    RECORDED_RECORDS,
    SNAPSHOT_HEAD,
)

XML = {"Content-Type": "text/xml; charset=utf-8"}
OAI_DC_TOKEN = "6960524|1001"


def ok(path):
    return 200, XML, path.read_bytes()


def two_page_oai(query, number):
    """oai_dc page (token 6960524|1001), then the hep-ex page (no token) for that token."""
    if query.get("resumptionToken") == OAI_DC_TOKEN:
        return ok(HEP_EX_PAGE)
    return ok(OAI_DC_PAGE)


# --- HTTP transport -------------------------------------------------------------------------


def test_http_sends_user_agent_and_parameters(local_server, settings):
    settings.ARXIV_USER_AGENT = "topicsite-test/1.0 (mailto:ops@example.org)"
    local_server.handler = lambda query, number: ok(ARXIV_RAW_PAGE)
    source = OaiPmhSource(
        transport=HttpTransport(retries=0),
        base_url=local_server.url,
        resumption_token="496549|46001",
        max_pages=1,
    )

    chunks = list(source.chunks())

    assert len(chunks) == 1 and len(chunks[0].records) == 1000
    assert chunks[0].resumption_token == "496549|47001"
    ((path, query, headers),) = local_server.requests
    assert path == "/oai"
    assert query == {"verb": "ListRecords", "resumptionToken": "496549|46001"}
    assert headers["User-Agent"] == "topicsite-test/1.0 (mailto:ops@example.org)"
    assert chunks[0].source.startswith(local_server.url)


def test_http_503_with_retry_after_is_retried(local_server):
    def busy_then_ok(query, number):
        if number == 1:
            return 503, {"Retry-After": "1"}, b"busy"
        return ok(OAI_DC_PAGE)

    local_server.handler = busy_then_ok
    transport = HttpTransport(retries=3, backoff_factor=0)

    fetched = transport.get(local_server.url, {"verb": "ListRecords", "metadataPrefix": "oai_dc"})

    assert fetched.status == 200
    assert fetched.body == OAI_DC_PAGE.read_bytes()
    assert len(local_server.requests) == 2


def test_http_429_is_retried_too(local_server):
    local_server.handler = lambda query, number: (
        (429, {"Retry-After": "0"}, b"slow down") if number <= 2 else ok(OAI_DC_PAGE)
    )

    fetched = HttpTransport(retries=2, backoff_factor=0).get(local_server.url, {"verb": "x"})

    assert fetched.status == 200 and len(local_server.requests) == 3


def test_http_persistent_503_fails_loudly_after_bounded_retries(local_server):
    local_server.handler = lambda query, number: (503, {"Retry-After": "0"}, b"busy")
    transport = HttpTransport(retries=2, backoff_factor=0)

    with pytest.raises(HarvestError) as raised:
        transport.get(local_server.url, {"verb": "ListRecords", "set": "cs"})

    assert len(local_server.requests) == 3
    assert raised.value.url == f"{local_server.url}?verb=ListRecords&set=cs"
    assert str(raised.value).startswith(local_server.url)


def test_http_other_status_fails_without_retrying(local_server):
    local_server.handler = lambda query, number: (404, {}, b"not here")

    with pytest.raises(HarvestError, match="HTTP status 404"):
        HttpTransport(retries=3, backoff_factor=0).get(local_server.url, {"verb": "x"})
    assert len(local_server.requests) == 1


def test_http_connection_refused_fails_loudly():
    # Bind and close a socket to get a port nobody listens on.
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/oai"

    with pytest.raises(HarvestError) as raised:
        HttpTransport(retries=1, backoff_factor=0, timeout=2).get(url, {"verb": "Identify"})
    assert raised.value.url.startswith(url)
    assert isinstance(raised.value.__cause__, requests.ConnectionError)


def test_http_response_size_cap(local_server):
    local_server.handler = lambda query, number: ok(ARXIV_RAW_PAGE)

    with pytest.raises(HarvestError, match="byte cap"):
        HttpTransport(retries=0, max_bytes=10_000).get(local_server.url, {"verb": "x"})


# --- OAI-PMH over HTTP ----------------------------------------------------------------------


def test_oai_follows_resumption_token_across_pages(local_server):
    local_server.handler = two_page_oai
    source = OaiPmhSource(
        transport=HttpTransport(retries=0),
        base_url=local_server.url,
        metadata_prefix="oai_dc",
        set_spec="cs",
        from_date="2024-01-25",
    )

    chunks = list(source.chunks())

    assert [len(chunk.records) for chunk in chunks] == [5, 3]
    assert [chunk.resumption_token for chunk in chunks] == [OAI_DC_TOKEN, None]
    assert [query for _, query, _ in local_server.requests] == [
        {"verb": "ListRecords", "metadataPrefix": "oai_dc", "set": "cs", "from": "2024-01-25"},
        # After the first page only the token is sent, as OAI-PMH requires.
        {"verb": "ListRecords", "resumptionToken": OAI_DC_TOKEN},
    ]


@pytest.mark.django_db
def test_oai_harvest_stores_every_page(local_server):
    local_server.handler = two_page_oai

    summary = harvest_run(
        kind="oai",
        params={
            "base_url": local_server.url,
            "metadata_prefix": "oai_dc",
            "set": "cs",
            "from": "2024-01-25",
        },
    )

    assert (summary.pages, summary.created, summary.errors) == (2, 8, [])
    assert Paper.objects.count() == 8
    assert Paper.objects.filter(arxiv_id="1706.05371", source="oai:arXiv").exists()


@pytest.mark.django_db
def test_oai_harvest_failure_keeps_checkpoint_and_resumes(local_server, settings):
    settings.ARXIV_HTTP_RETRIES = 1
    down = {"value": True}

    def second_page_down(query, number):
        if query.get("resumptionToken") == OAI_DC_TOKEN and down["value"]:
            return 503, {"Retry-After": "0"}, b"busy"
        return two_page_oai(query, number)

    local_server.handler = second_page_down
    params = {"base_url": local_server.url, "metadata_prefix": "oai_dc", "set": "cs"}

    with pytest.raises(HarvestError):
        harvest_run(kind="oai", params=params)
    # The first page is stored; the second was never parsed.
    assert Paper.objects.count() == 5
    requests_before = len(local_server.requests)

    down["value"] = False
    summary = harvest_run(kind="oai", params=params)

    resumed = [query for _, query, _ in local_server.requests[requests_before:]]
    assert resumed == [{"verb": "ListRecords", "resumptionToken": OAI_DC_TOKEN}]
    assert (summary.pages, summary.created) == (1, 3)
    assert Paper.objects.count() == 8

    # The list completed: the checkpoint is gone, the next run starts from the beginning.
    harvest_run(kind="oai", params=params)
    assert local_server.requests[-2][1]["verb"] == "ListRecords"
    assert "resumptionToken" not in local_server.requests[-2][1]


def test_oai_no_records_match_is_zero_records(local_server):
    body = (
        b'<?xml version="1.0" encoding="UTF-8"?>\n'
        b'<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/">'
        b"<responseDate>2024-01-27T00:00:00Z</responseDate>"
        b'<request verb="ListRecords" metadataPrefix="arXivRaw" set="cs" from="2030-01-01">'
        b"http://export.arxiv.org/oai2</request>"
        b'<error code="noRecordsMatch">The combination of the values results in an empty list.'
        b"</error></OAI-PMH>"
    )
    local_server.handler = lambda query, number: (200, XML, body)
    source = OaiPmhSource(
        transport=HttpTransport(retries=0), base_url=local_server.url, from_date="2030-01-01"
    )

    chunks = list(source.chunks())

    assert [(chunk.records, chunk.errors) for chunk in chunks] == [([], [])]


def test_oai_error_other_than_no_records_is_refused(local_server):
    body = (
        b'<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/">'
        b"<responseDate>2024-01-27T00:00:00Z</responseDate>"
        b'<request verb="ListRecords">http://export.arxiv.org/oai2</request>'
        b'<error code="badResumptionToken">expired</error></OAI-PMH>'
    )
    local_server.handler = lambda query, number: (200, XML, body)
    source = OaiPmhSource(
        transport=HttpTransport(retries=0), base_url=local_server.url, resumption_token="1|2"
    )

    with pytest.raises(SourceError, match="badResumptionToken"):
        list(source.chunks())


# --- arXiv API ------------------------------------------------------------------------------


def atom_pages(query, number):
    files = {
        ("0", "10"): "q_testing_s0_m10_bc5a6c384fe9.xml",
        ("10", "10"): "q_testing_s10_m10_34e56e15aaac.xml",
        ("20", "10"): "q_testing_s20_m10_348a237fecab.xml",
    }
    name = files.get((query["start"], query["max_results"]))
    if name is None:
        return 400, XML, b"unexpected"
    return ok(ATOM_DIR / name)


def test_atom_pages_with_start_and_max_results(local_server):
    local_server.handler = atom_pages
    source = AtomApiSource(
        transport=HttpTransport(retries=0),
        base_url=local_server.url,
        search_query="testing",
        max_results=30,
        page_size=10,
    )

    chunks = list(source.chunks())

    assert [len(chunk.records) for chunk in chunks] == [10, 10, 10]
    assert [
        (q["start"], q["max_results"], q["search_query"]) for _, q, _ in local_server.requests
    ] == [
        ("0", "10", "testing"),
        ("10", "10", "testing"),
        ("20", "10", "testing"),
    ]


def test_atom_error_entry_never_becomes_a_paper(local_server):
    # The error feed the API manual documents for a malformed id (HTTP 400).
    body = b"""<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">
  <id>http://arxiv.org/api/errors</id>
  <title>arXiv Query: error</title>
  <updated>2026-05-11T00:00:00-04:00</updated>
  <opensearch:totalResults>1</opensearch:totalResults>
  <opensearch:startIndex>0</opensearch:startIndex>
  <opensearch:itemsPerPage>1</opensearch:itemsPerPage>
  <entry>
    <id>http://arxiv.org/api/errors#incorrect_id_format_for_1234.12345</id>
    <title>Error</title>
    <summary>incorrect id format for 1234.12345</summary>
    <updated>2026-05-11T00:00:00-04:00</updated>
    <author><name>arXiv api core</name></author>
  </entry>
</feed>"""
    local_server.handler = lambda query, number: (400, XML, body)
    source = AtomApiSource(
        transport=HttpTransport(retries=0), base_url=local_server.url, id_list=["1234.12345"]
    )

    with pytest.raises(SourceError, match="incorrect id format for 1234.12345"):
        list(source.chunks())


def test_atom_empty_feed_stops(local_server):
    local_server.handler = lambda query, number: ok(
        ATOM_DIR / "id_0000.0000_s0_m100_8b51d9633a68.xml"
    )
    source = AtomApiSource(
        transport=HttpTransport(retries=0), base_url=local_server.url, id_list="0000.0000"
    )

    chunks = list(source.chunks())

    assert [chunk.records for chunk in chunks] == [[]]
    assert len(local_server.requests) == 1


# --- recorded transport ---------------------------------------------------------------------


def test_recorded_transport_answers_the_same_requests():
    transport = RecordedTransport(RECORDED_DIR)
    source = AtomApiSource(transport=transport, id_list=["astro-ph/0601001"], max_results=100)

    (chunk,) = list(source.chunks())

    assert [record.arxiv_id for record in chunk.records] == ["astro-ph/0601001"]
    assert chunk.source.endswith("id_astro-ph_0601001_s0_m100_3150dca9dc76.xml")


def test_recorded_transport_refuses_an_unrecorded_request():
    transport = RecordedTransport(RECORDED_DIR)
    source = OaiPmhSource(transport=transport, set_spec="cs", from_date="2024-01-25")

    with pytest.raises(NotRecorded) as raised:
        list(source.chunks())
    assert "metadataPrefix=arXivRaw" in str(raised.value)
    assert "manifest.json" in str(raised.value)


def test_recorded_replay_lists_every_entry_once():
    sources = recorded_sources(RECORDED_DIR)
    chunks = [chunk for source in sources for chunk in source.chunks()]

    assert len(chunks) == 26
    assert sum(len(chunk.records) for chunk in chunks) == RECORDED_RECORDS
    assert all(chunk.errors == [] for chunk in chunks)
    assert {source.kind for source in sources} == {"oai", "atom", "snapshot"}


def test_manifest_errors_are_clear(tmp_path):
    with pytest.raises(ManifestError, match="no manifest"):
        RecordedTransport(tmp_path)

    (tmp_path / "manifest.json").write_text(
        json.dumps(
            {"entries": [{"kind": "oai", "file": "../outside.xml", "params": {"verb": "x"}}]}
        )
    )
    with pytest.raises(ManifestError, match="outside"):
        RecordedTransport(tmp_path)

    (tmp_path / "manifest.json").write_text(json.dumps({"entries": [{"kind": "ftp", "file": "x"}]}))
    with pytest.raises(ManifestError, match="unknown kind 'ftp'"):
        RecordedTransport(tmp_path)


def test_snapshot_source_chunks_lines(tmp_path):
    chunks = list(SnapshotSource(SNAPSHOT_HEAD, chunk_size=64).chunks())

    assert [len(chunk.records) for chunk in chunks] == [64, 64, 64, 8]
    assert chunks[0].records[0].arxiv_id == "0704.0001"


def test_sources_for_rejects_unknown_kinds_and_parameters():
    with pytest.raises(ValueError, match="unknown harvest kind"):
        sources_for("ftp", {})
    with pytest.raises(ValueError, match="unknown oai parameters: sett"):
        sources_for("oai", {"sett": "cs"})
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        sources_for("oai", {"from": "yesterday"})
    with pytest.raises(ValueError, match="id_list or a search_query"):
        sources_for("atom", {})
