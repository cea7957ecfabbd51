"""The recorded-files transport and its manifest: the same requests answered from disk, every
entry replayed once, and every malformed manifest refused naming the manifest and the entry."""

from __future__ import annotations

import json
import logging

import pytest

from papers.sources.atom import AtomApiSource
from papers.sources.base import HarvestError
from papers.sources.oai import OaiPmhSource
from papers.sources.recorded import (
    ManifestError,
    NotRecorded,
    RecordedTransport,
    recorded_sources,
)

from .conftest import (
    ARXIV_RAW_PAGE,
    OAI_DC_PAGE,
    RECORDED_DIR,
    RECORDED_RECORDS,
)
from .httpserver import Reply, page, transport


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
    "responses empty": (
        {"entries": [{"kind": "oai", "params": {"verb": "ListRecords"}, "responses": []}]},
        r"entry 1: 'responses' must be a non-empty list of responses",
    ),
    "responses and file": (
        {"entries": [{**OAI_ENTRY, "responses": [{"file": "b.xml"}]}]},
        r"entry 1: 'responses' lists an OAI or API request's answers, and replaces",
    ),
    "response status": (
        {
            "entries": [
                {
                    **{k: v for k, v in OAI_ENTRY.items() if k != "file"},
                    "responses": [{"status": 503}, {"status": "ok", "file": "a.xml"}],
                }
            ]
        },
        r"entry 1, response 2: 'status' must be an HTTP status code",
    ),
    "response headers": (
        {"entries": [{**OAI_ENTRY, "headers": {"Retry-After": 5}}]},
        r"entry 1: 'headers' must be an object of header names and string values",
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
        f"entry 1 ('a.xml'): list a request's successive answers in one entry's 'responses'"
    )


# --- several responses for one request: a 503 with Retry-After, then the page -----------------

ATOM_PAGE = RECORDED_DIR / "atom" / "q_testing_s0_m10_bc5a6c384fe9.xml"
ATOM_PARAMS = {
    "search_query": "testing",
    "id_list": "",
    "sortBy": "relevance",
    "sortOrder": "descending",
    "start": "0",
    "max_results": "10",
}


def busy_then_page_manifest(directory, retry_after="2"):
    """A recorded directory whose one API request was answered 503 (Retry-After), then 200."""
    (directory / "atom").mkdir()
    (directory / "atom" / "page.xml").write_bytes(ATOM_PAGE.read_bytes())
    entry = {
        "kind": "atom",
        "params": ATOM_PARAMS,
        "responses": [
            {"status": 503, "headers": {"Retry-After": retry_after}},
            {
                "status": 200,
                "headers": {"Content-Type": "application/atom+xml"},
                "file": "atom/page.xml",
            },
        ],
    }
    (directory / "manifest.json").write_text(json.dumps({"entries": [entry]}))


def replay(transport, base_url):
    source = AtomApiSource.from_request(ATOM_PARAMS, transport=transport)
    source.base_url = base_url
    return list(source.chunks())


@pytest.mark.usefixtures("quick_limiter")
def test_a_recorded_503_then_200_replays_exactly_as_over_http(tmp_path, server, caplog):
    server.handler = lambda request: (
        Reply(status=503, headers={"Retry-After": "2"}) if request.number == 1 else page(ATOM_PAGE)
    )
    busy_then_page_manifest(tmp_path)
    outcomes = []
    for make in (
        lambda waits: transport(retries=2, backoff_factor=5, sleep=waits.append),
        lambda waits: RecordedTransport(tmp_path, retries=2, backoff_factor=5, sleep=waits.append),
    ):
        waits = []
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="papers.sources.transports"):
            chunks = replay(make(waits), server.url)
        retried = [r.getMessage().split(": ", 1)[1] for r in caplog.records]
        outcomes.append(([r.arxiv_id for c in chunks for r in c.records], waits, retried))

    over_http, recorded = outcomes
    assert len(over_http[0]) == 10
    assert over_http == recorded
    # Retry-After decided the wait (the backoff would be 5 s).
    assert recorded[1:] == ([2], ["HTTP 503; retrying in 2 s (Retry-After), attempt 2 of 3"])


def test_recorded_responses_used_up_repeat_the_last_and_retries_are_bounded(tmp_path):
    busy_then_page_manifest(tmp_path)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    manifest["entries"][0]["responses"] = [{"status": 503, "headers": {"Retry-After": "1"}}]
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    waits = []

    with pytest.raises(HarvestError, match="gave up after 3 attempts; last: HTTP 503"):
        replay(RecordedTransport(tmp_path, retries=2, sleep=waits.append), "http://arxiv")
    assert waits == [1, 1]
