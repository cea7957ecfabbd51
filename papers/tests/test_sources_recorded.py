"""The recorded-files transport and its manifest: the same requests answered from disk, every
entry replayed once, and every malformed manifest refused naming the manifest and the entry."""

from __future__ import annotations

import pytest

from papers.sources.atom import AtomApiSource
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
