"""Transports and sources: HTTP against a real local server serving recorded real bodies and
the network's faults, the shared request limiter, the recorded-files transport, OAI-PMH
resumption and errors, API paging, snapshot chunks, and resuming each source from a chunk's
position."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest
import requests
from django.conf import settings as django_settings

from papers.sources import (
    AtomApiSource,
    Fetched,
    HarvestError,
    HttpTransport,
    ManifestError,
    NotRecorded,
    OaiPmhSource,
    RecordedTransport,
    RequestLimiter,
    SnapshotSource,
    SnapshotTruncated,
    SourceError,
    _redis_client,
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
    TEST_DATA_DIR,
)
from .httpserver import LocalHttpServer, Reply, atom_without_entries, oai_pages, oai_token

OAI_DC_TOKEN = "6960524|1001"
ID_DOES_NOT_EXIST = TEST_DATA_DIR / "oai" / "inspire_next" / "integration_arxiv_1305.9999.xml"
GET_RECORD_1401_2122 = RECORDED_DIR / "oai" / "arxiv-single.xml"
# The error feed the arXiv API manual documents for a malformed id (sent with HTTP 400).
API_ERROR_FEED = b"""<?xml version="1.0" encoding="UTF-8"?>
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


def oai_error(code: str, message: str) -> bytes:
    """An OAI-PMH error response as the protocol specifies it (section 3.6)."""
    return (
        b'<?xml version="1.0" encoding="UTF-8"?>\n'
        b'<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/">'
        b"<responseDate>2024-01-27T00:00:00Z</responseDate>"
        b'<request verb="ListRecords">http://export.arxiv.org/oai2</request>'
        b'<error code="' + code.encode() + b'">' + message.encode() + b"</error></OAI-PMH>"
    )


def page(path) -> Reply:
    return Reply(body=path.read_bytes())


@pytest.fixture(autouse=True)
def quick_limiter(settings):
    """The shared limiter on, with an interval small enough for tests; its key cleared."""
    settings.ARXIV_REQUEST_INTERVAL_MS = 5
    client = _redis_client(settings.REDIS_URL)
    client.delete(RequestLimiter.KEY)
    yield
    client.delete(RequestLimiter.KEY)


@pytest.fixture
def server():
    with LocalHttpServer() as server:
        yield server


def transport(**options) -> HttpTransport:
    options.setdefault("retries", 0)
    options.setdefault("backoff_factor", 0)
    return HttpTransport(**options)


def two_page_oai(request):
    """oai_dc page (token 6960524|1001), then the hep-ex page (no token) for that token."""
    if request.query.get("resumptionToken") == OAI_DC_TOKEN:
        return page(HEP_EX_PAGE)
    return page(OAI_DC_PAGE)


# --- HTTP transport -------------------------------------------------------------------------


def test_http_sends_user_agent_and_parameters(server, settings):
    settings.ARXIV_USER_AGENT = "topicsite-test/1.0 (mailto:ops@example.org)"
    server.handler = lambda request: page(ARXIV_RAW_PAGE)
    source = OaiPmhSource(
        transport=transport(), base_url=server.url, resumption_token="496549|46001", max_pages=1
    )

    chunks = list(source.chunks())

    assert len(chunks) == 1 and len(chunks[0].records) == 1000
    assert chunks[0].resumption_token == "496549|47001"
    (request,) = server.requests
    assert request.path == "/oai"
    assert request.query == {"verb": "ListRecords", "resumptionToken": "496549|46001"}
    assert request.headers["User-Agent"] == "topicsite-test/1.0 (mailto:ops@example.org)"
    assert chunks[0].source.startswith(server.url)


def test_http_503_with_retry_after_waits_what_it_says(server, caplog):
    server.handler = lambda request: (
        Reply(status=503, headers={"Retry-After": "7"}, body=b"busy")
        if request.number == 1
        else page(OAI_DC_PAGE)
    )
    waits = []

    with caplog.at_level(logging.WARNING, logger="papers.sources"):
        fetched = transport(retries=3, backoff_factor=5, sleep=waits.append).get(
            server.url, {"verb": "ListRecords", "metadataPrefix": "oai_dc"}
        )

    assert fetched.status == 200 and fetched.body == OAI_DC_PAGE.read_bytes()
    assert len(server.requests) == 2
    # Retry-After, not the backoff (which would be 5 s), decided the wait.
    assert waits == [7]
    assert "HTTP 503; retrying in 7 s (Retry-After)" in caplog.text


def test_http_429_is_retried_too(server):
    server.handler = lambda request: (
        Reply(status=429, headers={"Retry-After": "0"}, body=b"slow down")
        if request.number <= 2
        else page(OAI_DC_PAGE)
    )

    fetched = transport(retries=2).get(server.url, {"verb": "x"})

    assert fetched.status == 200 and len(server.requests) == 3


def test_http_persistent_503_fails_loudly_after_bounded_retries(server):
    server.handler = lambda request: Reply(status=503, body=b"busy")
    waits = []

    with pytest.raises(HarvestError) as raised:
        transport(retries=2, backoff_factor=1.5, sleep=waits.append).get(
            server.url, {"verb": "ListRecords", "set": "cs"}
        )

    assert len(server.requests) == 3
    # No Retry-After: exponential backoff.
    assert waits == [1.5, 3.0]
    assert raised.value.url == f"{server.url}?verb=ListRecords&set=cs"
    assert "gave up after 3 attempts; last: HTTP 503" in str(raised.value)
    assert str(raised.value).startswith(server.url)


def test_http_retry_after_longer_than_allowed_fails_at_once(server):
    server.handler = lambda request: Reply(status=503, headers={"Retry-After": "3600"})

    with pytest.raises(HarvestError, match="Retry-After 3600 s, more than the 300 s"):
        transport(retries=5, retry_after_max=300).get(server.url, {"verb": "x"})
    assert len(server.requests) == 1


def test_http_other_status_fails_without_retrying(server):
    server.handler = lambda request: Reply(status=404, body=b"not here")

    with pytest.raises(HarvestError, match="HTTP status 404"):
        transport(retries=3).get(server.url, {"verb": "x"})
    assert len(server.requests) == 1


def test_http_connection_refused_fails_loudly():
    # Bind and close a socket to get a port nobody listens on.
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/oai"

    with pytest.raises(HarvestError) as raised:
        transport(retries=1, timeout=2).get(url, {"verb": "Identify"})
    assert raised.value.url.startswith(url)
    assert isinstance(raised.value.__cause__, requests.ConnectionError)


def test_http_connection_dropped_mid_body_is_retried(server):
    body = OAI_DC_PAGE.read_bytes()
    server.handler = lambda request: (
        Reply(body=body, drop_after=len(body) // 3) if request.number == 1 else Reply(body=body)
    )

    fetched = transport(retries=1).get(server.url, {"verb": "x"})

    assert fetched.body == body and len(server.requests) == 2


def test_http_connection_always_dropped_fails_naming_the_cause(server):
    body = OAI_DC_PAGE.read_bytes()
    server.handler = lambda request: Reply(body=body, drop_after=100)

    with pytest.raises(HarvestError, match="gave up after 2 attempts; last: ChunkedEncodingError"):
        transport(retries=1).get(server.url, {"verb": "x"})


def test_http_response_slower_than_the_timeout_is_retried(server):
    server.handler = lambda request: (
        Reply(body=OAI_DC_PAGE.read_bytes(), delay=1.5)
        if request.number == 1
        else page(OAI_DC_PAGE)
    )

    fetched = transport(retries=1, timeout=0.5).get(server.url, {"verb": "x"})

    assert fetched.status == 200 and len(server.requests) == 2


def test_http_response_size_cap(server):
    server.handler = lambda request: page(ARXIV_RAW_PAGE)

    with pytest.raises(HarvestError, match="byte cap"):
        transport(retries=2, max_bytes=10_000).get(server.url, {"verb": "x"})
    # Not retried: the same answer would come back.
    assert len(server.requests) == 1


def test_every_attempt_waits_for_the_shared_limiter(server):
    server.handler = lambda request: (
        Reply(status=503, headers={"Retry-After": "0"})
        if request.number <= 2
        else page(HEP_EX_PAGE)
    )
    client = _redis_client(django_settings.REDIS_URL)
    limiter_waits = []

    def wait_out_the_slot(seconds):
        # Stands in for the time passing: the slot's key expires.
        limiter_waits.append(seconds)
        client.delete(RequestLimiter.KEY)

    limiter = RequestLimiter(interval_ms=60_000, sleep=wait_out_the_slot)

    transport(retries=2, limiter=limiter, sleep=lambda seconds: None).get(server.url, {"v": "x"})

    # Three attempts: the first took the free slot, each retry had to wait for the next one.
    assert len(server.requests) == 3
    assert len(limiter_waits) == 2
    assert all(50 < seconds <= 60 for seconds in limiter_waits)


# --- the shared limiter ---------------------------------------------------------------------


def test_limiter_gives_one_slot_per_interval_across_clients(settings):
    first = RequestLimiter(interval_ms=30_000)
    second = RequestLimiter(interval_ms=30_000)

    assert first.try_acquire()
    assert not second.try_acquire()
    assert not first.try_acquire()
    # The slot lives in Redis for the interval, whoever asks.
    remaining = _redis_client(settings.REDIS_URL).pttl(RequestLimiter.KEY)
    assert 25_000 < remaining <= 30_000


def test_limiter_slot_is_shared_with_other_processes(settings):
    RequestLimiter(interval_ms=30_000).wait()
    script = (
        "import django; django.setup();"
        "from papers.sources import RequestLimiter;"
        "print(RequestLimiter(interval_ms=30000).try_acquire())"
    )
    env = {
        "DJANGO_SETTINGS_MODULE": "topicsite.settings.test",
        "REDIS_URL": settings.REDIS_URL,
        "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/unused",
        "PATH": "/usr/bin:/bin",
    }

    other = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        cwd=django_settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert other.returncode == 0, other.stderr
    # This process holds the slot: the other one does not get it.
    assert other.stdout.strip() == "False"


def test_limiter_wait_sleeps_until_the_slot_frees(settings):
    client = _redis_client(settings.REDIS_URL)
    slept = []

    def sleep(seconds):
        slept.append(seconds)
        client.delete(RequestLimiter.KEY)

    limiter = RequestLimiter(interval_ms=10_000, sleep=sleep)

    assert limiter.wait() == 0
    waited = limiter.wait()

    assert len(slept) == 1 and 9 < slept[0] <= 10 and waited == slept[0]


def test_limiter_without_redis_uses_the_local_cache(settings):
    redis_url = settings.REDIS_URL
    settings.REDIS_URL = None
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

    assert RequestLimiter(interval_ms=30_000).try_acquire()
    assert not RequestLimiter(interval_ms=30_000).try_acquire()
    assert not _redis_client(redis_url).exists(RequestLimiter.KEY)


def test_limiter_interval_zero_is_off_and_negative_is_refused():
    assert all(RequestLimiter(interval_ms=0).try_acquire() for _ in range(3))
    with pytest.raises(ValueError, match="interval_ms must be >= 0"):
        RequestLimiter(interval_ms=-1)


# --- OAI-PMH over HTTP ----------------------------------------------------------------------


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


# --- arXiv API ------------------------------------------------------------------------------

ATOM_PAGES = {
    ("0", "10"): "q_testing_s0_m10_bc5a6c384fe9.xml",
    ("10", "10"): "q_testing_s10_m10_34e56e15aaac.xml",
    ("20", "10"): "q_testing_s20_m10_348a237fecab.xml",
}


def atom_pages(request):
    name = ATOM_PAGES.get((request.query["start"], request.query["max_results"]))
    if name is None:
        return Reply(status=400, body=b"unexpected")
    return page(ATOM_DIR / name)


def search_source(server, **options):
    return AtomApiSource(
        transport=transport(),
        base_url=server.url,
        search_query="testing",
        max_results=30,
        page_size=10,
        **options,
    )


def test_atom_pages_with_start_and_max_results(server):
    server.handler = atom_pages

    chunks = list(search_source(server).chunks())

    assert [len(chunk.records) for chunk in chunks] == [10, 10, 10]
    assert [chunk.position for chunk in chunks] == [{"start": 10}, {"start": 20}, None]
    assert [(q["start"], q["max_results"], q["search_query"]) for q in server.queries()] == [
        ("0", "10", "testing"),
        ("10", "10", "testing"),
        ("20", "10", "testing"),
    ]


def test_atom_resumes_from_a_chunk_position(server):
    server.handler = atom_pages

    chunks = list(search_source(server).chunks({"start": 20}))

    assert [len(chunk.records) for chunk in chunks] == [10]
    assert [q["start"] for q in server.queries()] == ["20"]


def test_atom_empty_page_mid_way_is_asked_again(server, caplog):
    empty = atom_without_entries(ATOM_DIR / ATOM_PAGES[("10", "10")])
    served_empty = []

    def handler(request):
        if request.query["start"] == "10" and not served_empty:
            served_empty.append(request.number)
            return Reply(body=empty)
        return atom_pages(request)

    server.handler = handler

    chunks = list(search_source(server, empty_page_retries=2).chunks())

    assert [len(chunk.records) for chunk in chunks] == [10, 10, 10]
    assert [chunk.gaps for chunk in chunks] == [[], [], []]
    assert [q["start"] for q in server.queries()] == ["0", "10", "10", "20"]
    assert "no entries at start=10 of 214881 results; asking again (1 of 2)" in caplog.text


def test_atom_page_that_stays_empty_is_skipped_and_reported(server):
    empty = atom_without_entries(ATOM_DIR / ATOM_PAGES[("10", "10")])
    server.handler = lambda request: (
        Reply(body=empty) if request.query["start"] == "10" else atom_pages(request)
    )

    chunks = list(search_source(server, empty_page_retries=2).chunks())

    assert [len(chunk.records) for chunk in chunks] == [10, 0, 10]
    (gap,) = chunks[1].gaps
    assert gap.record == "results 10 to 19"
    assert "no entries at start=10 of 214881 results after 3 requests; page skipped" in str(gap)
    assert [q["start"] for q in server.queries()] == ["0", "10", "10", "10", "20"]


def test_atom_empty_result_stops_without_retrying(server):
    server.handler = lambda request: page(ATOM_DIR / "id_0000.0000_s0_m100_8b51d9633a68.xml")
    source = AtomApiSource(transport=transport(), base_url=server.url, id_list="0000.0000")

    chunks = list(source.chunks())

    assert [chunk.records for chunk in chunks] == [[]]
    assert len(server.requests) == 1
    # Asked for and not returned.
    assert [gap.record for gap in chunks[0].gaps] == ["0000.0000"]


def test_atom_reports_ids_asked_for_and_not_returned(server):
    server.handler = lambda request: page(ATOM_DIR / "id_1605.08386_s0_m100_199195aa31ad.xml")
    source = AtomApiSource(
        transport=transport(), base_url=server.url, id_list=["1605.08386v1", "1605.99999"]
    )

    (chunk,) = list(source.chunks())

    assert [record.arxiv_id for record in chunk.records] == ["1605.08386"]
    (gap,) = chunk.gaps
    assert (gap.record, gap.message) == (
        "1605.99999",
        "asked for but not returned by the arXiv API",
    )
    assert server.queries()[0]["id_list"] == "1605.08386v1,1605.99999"


def test_atom_error_entry_never_becomes_a_paper(server):
    server.handler = lambda request: Reply(status=400, body=API_ERROR_FEED)
    source = AtomApiSource(transport=transport(), base_url=server.url, id_list=["1234.12345"])

    with pytest.raises(SourceError, match="incorrect id format for 1234.12345"):
        list(source.chunks())


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
    # A replay reproduces recorded answers: ids a recorded request did not get are no gap.
    assert all(chunk.errors == [] and chunk.gaps == [] for chunk in chunks)
    assert {source.kind for source in sources} == {"oai", "atom", "snapshot"}


def test_manifest_errors_are_clear(tmp_path):
    import json

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


OAI_ENTRY = {"kind": "oai", "file": "a.xml", "params": {"verb": "ListRecords", "set": "cs"}}
MALFORMED_MANIFESTS = {
    "entries null": ({"entries": None}, r"manifest.json: not a manifest: expected an object"),
    "not an object": ("just a string", r"manifest.json: not a manifest: expected an object"),
    "entry not an object": ({"entries": ["oops"]}, r"entry 1: an entry is an object"),
    "params a list": (
        {"entries": [{**OAI_ENTRY, "params": ["verb", "ListRecords"]}]},
        r"entry 1: 'params' must be an object of query parameters",
    ),
    "params nested": (
        {"entries": [{**OAI_ENTRY, "params": {"verb": {"ListRecords": 1}}}]},
        r"entry 1: 'params' must be an object of query parameters",
    ),
    "status not a number": (
        {"entries": [{**OAI_ENTRY, "status": "abc"}]},
        r"entry 1: 'status' must be an HTTP status code \(100 to 599\), not 'abc'",
    ),
    "status out of range": (
        {"entries": [{**OAI_ENTRY, "status": 2000}]},
        r"entry 1: 'status' must be an HTTP status code",
    ),
    "file not a path": (
        {"entries": [{**OAI_ENTRY, "file": 5}]},
        r"entry 1: 'file' must be a path inside the directory, not 5",
    ),
    "misspelt key": (
        {"entries": [{**OAI_ENTRY, "parmas": {}}]},
        r"entry 1: unknown keys 'parmas'",
    ),
    # Entries that load but ask for a request no source can send, named by their index.
    "OAI verb": (
        {"entries": [OAI_ENTRY, {**OAI_ENTRY, "file": "b.xml", "params": {"verb": "Identify"}}]},
        r"entry 2: cannot harvest with OAI verb 'Identify'",
    ),
    "OAI date": (
        {"entries": [{**OAI_ENTRY, "params": {"verb": "ListRecords", "from": "2024-13-45"}}]},
        r"entry 1: OAI 'from' must be a date YYYY-MM-DD, not '2024-13-45'",
    ),
    "API number": (
        {"entries": [{"kind": "atom", "file": "a.xml", "params": {"max_results": "ten"}}]},
        r"entry 1: 'max_results' must be a whole number, not 'ten'",
    ),
    "API negative": (
        {"entries": [{"kind": "atom", "file": "a.xml", "params": {"id_list": "x", "start": "-1"}}]},
        r"entry 1: start must be >= 0",
    ),
}


@pytest.mark.parametrize(
    "manifest, message", MALFORMED_MANIFESTS.values(), ids=MALFORMED_MANIFESTS.keys()
)
def test_every_malformed_manifest_is_a_manifest_error_naming_manifest_and_entry(
    tmp_path, manifest, message
):
    import json

    for name in ("a.xml", "b.xml"):
        (tmp_path / name).write_bytes(OAI_DC_PAGE.read_bytes())
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))

    with pytest.raises(ManifestError, match=message) as raised:
        recorded_sources(tmp_path)
    assert str(raised.value).startswith(str(tmp_path / "manifest.json"))


def test_two_entries_recording_one_request_are_refused_naming_both_files(tmp_path):
    import json

    for name in ("a.xml", "b.xml"):
        (tmp_path / name).write_bytes(ARXIV_RAW_PAGE.read_bytes())
    entries = [
        {"kind": "oai", "file": "a.xml", "params": {"verb": "ListRecords", "resumptionToken": "t"}},
        {"kind": "snapshot", "file": "a.xml"},
        # The same request once normalised: other key order, an empty value.
        {
            "kind": "oai",
            "file": "b.xml",
            "params": {"resumptionToken": "t", "set": "", "verb": "ListRecords"},
        },
    ]
    (tmp_path / "manifest.json").write_text(json.dumps({"entries": entries}))

    with pytest.raises(ManifestError) as raised:
        RecordedTransport(tmp_path)

    assert str(raised.value) == (
        f"{tmp_path / 'manifest.json'}, entry 3: 'b.xml' records the same request params as "
        f"entry 1 ('a.xml'): a request has one recorded response"
    )


# --- snapshot -------------------------------------------------------------------------------


def test_snapshot_source_chunks_lines_and_resumes_after_a_position():
    chunks = list(SnapshotSource(SNAPSHOT_HEAD, chunk_size=64).chunks())

    assert [len(chunk.records) for chunk in chunks] == [64, 64, 64, 8]
    assert chunks[0].records[0].arxiv_id == "0704.0001"
    assert [chunk.position for chunk in chunks] == [
        {"chunks": 1},
        {"chunks": 2},
        {"chunks": 3},
        None,
    ]

    resumed = list(SnapshotSource(SNAPSHOT_HEAD, chunk_size=64).chunks({"chunks": 2}))

    assert [chunk.records for chunk in resumed] == [chunk.records for chunk in chunks[2:]]


def test_truncated_gzip_snapshot_keeps_what_was_read_and_names_the_problem(tmp_path):
    import gzip

    whole = gzip.compress(SNAPSHOT_HEAD.read_bytes())
    truncated = tmp_path / "head.jsonl.gz"
    truncated.write_bytes(whole[: len(whole) * 2 // 3])

    chunks = []
    with pytest.raises(SnapshotTruncated) as raised:
        for chunk in SnapshotSource(truncated, chunk_size=64).chunks():
            chunks.append(chunk)

    read = [record for chunk in chunks for record in chunk.records]
    assert 64 < len(read) < 200
    assert [record.arxiv_id for record in read] == [
        f"0704.{n:04d}" for n in range(1, len(read) + 1)
    ]
    assert not [error for chunk in chunks for error in chunk.errors]
    assert "file ends early or is corrupt" in str(raised.value)
    assert f"after record {len(read)}" in str(raised.value)
    assert str(truncated) in str(raised.value)
    # The partial last chunk is not counted as read: a resume starts at it again.
    assert chunks[-1].position == {"chunks": len(chunks) - 1}


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


# --- parameters -----------------------------------------------------------------------------


def test_sources_for_builds_one_oai_source_per_set(settings):
    settings.ARXIV_OAI_SETS = ["cs", "stat"]

    default = sources_for("oai", {"from": "2024-01-01"})
    named = sources_for("oai", {"sets": ["physics:hep-th"]})
    everything = sources_for("oai", {"sets": []})
    by_id = sources_for("oai", {"identifiers": "1401.2122,1305.9999"})

    assert [(s.set_spec, s.from_date) for s in default] == [
        ("cs", "2024-01-01"),
        ("stat", "2024-01-01"),
    ]
    assert [s.set_spec for s in named] == ["physics:hep-th"]
    assert [s.set_spec for s in everything] == [None]
    assert [s.identifiers for s in by_id] == [["1401.2122", "1305.9999"]]
    assert default[0].transport is default[1].transport


def test_sources_for_rejects_unknown_kinds_and_bad_parameters():
    with pytest.raises(ValueError, match="unknown harvest kind"):
        sources_for("ftp", {})
    with pytest.raises(ValueError, match="unknown oai parameters: sett"):
        sources_for("oai", {"sett": "cs"})
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        sources_for("oai", {"from": "yesterday"})
    with pytest.raises(ValueError, match="'sets' must be a list of set names"):
        sources_for("oai", {"sets": "cs"})
    with pytest.raises(ValueError, match="'incremental' must be true or false"):
        sources_for("oai", {"incremental": "yes"})
    with pytest.raises(ValueError, match="one set at most"):
        sources_for("oai", {"sets": ["cs", "stat"], "resumption_token": "1|2"})
    with pytest.raises(ValueError, match="id_list or a search_query"):
        sources_for("atom", {})
    with pytest.raises(ValueError, match="'max_results' must be a whole number, not 'ten'"):
        sources_for("atom", {"search_query": "x", "max_results": "ten"})
