"""AtomApiSource over HTTP: paging with start and max_results, resuming from a chunk's position,
empty pages, ids asked for and not returned, error entries."""

from __future__ import annotations

import pytest

from papers.identifiers import InvalidArxivId
from papers.sources.atom import AtomApiSource
from papers.sources.base import SourceError

from .conftest import (
    ATOM_DIR,
)
from .httpserver import (
    Reply,
    atom_without_entries,
    page,
    transport,
)

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


ATOM_PAGES = {
    ("0", "10"): "q_testing_s0_m10_bc5a6c384fe9.xml",
    ("10", "10"): "q_testing_s10_m10_34e56e15aaac.xml",
    ("20", "10"): "q_testing_s20_m10_348a237fecab.xml",
}

pytestmark = pytest.mark.usefixtures("quick_limiter")


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
    assert [chunk.position for chunk in chunks] == [
        {"start": 10, "promised": 214881},
        {"start": 20, "promised": 214881},
        None,
    ]
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
    assert (
        "no entries at start=10 of 214881 results (this page reports 214881); asking again (1 of 2)"
    ) in caplog.text


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
    # Sent as recorded (arXiv's empty answer to this id): the source would refuse it otherwise.
    source = AtomApiSource(
        transport=transport(), base_url=server.url, id_list="0000.0000", verbatim=True
    )

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
    # Sent verbatim: the source refuses this id itself (see the test below).
    source = AtomApiSource(
        transport=transport(), base_url=server.url, id_list=["1234.12345"], verbatim=True
    )

    with pytest.raises(SourceError, match="incorrect id format for 1234.12345"):
        list(source.chunks())


def test_atom_sends_every_spelling_as_the_id_arxiv_knows_keeping_the_version(server):
    """A URL used to be sent as it was typed (arXiv answers 400); now the id_list holds
    canonical ids with the version asked for, each once, and gaps name them."""
    server.handler = lambda request: page(ATOM_DIR / "id_1605.08386_s0_m100_199195aa31ad.xml")
    source = AtomApiSource(
        transport=transport(),
        base_url=server.url,
        id_list=[
            "https://arxiv.org/abs/1605.08386v1/",
            "arXiv:1605.08386v1",
            "https://doi.org/10.48550/arXiv.1605.99999",
        ],
    )

    (chunk,) = list(source.chunks())

    assert server.queries()[0]["id_list"] == "1605.08386v1,1605.99999"
    assert [record.arxiv_id for record in chunk.records] == ["1605.08386"]
    assert [gap.record for gap in chunk.gaps] == ["1605.99999"]


def test_atom_refuses_text_that_is_no_id_before_any_request(server):
    with pytest.raises(InvalidArxivId, match="'1234.12345'"):
        AtomApiSource(transport=transport(), base_url=server.url, id_list="1605.08386,1234.12345")
    assert server.requests == []


# arXiv's real answer when a result set has nothing (here for the id 0000.0000): an empty feed
# reporting totalResults 0. It also comes back for pages in the middle of a large result set.
EMPTY_FEED = ATOM_DIR / "id_0000.0000_s0_m100_8b51d9633a68.xml"


def test_atom_empty_feed_mid_way_is_asked_again_against_the_first_pages_total(server):
    served_empty = []

    def handler(request):
        if request.query["start"] == "10" and not served_empty:
            served_empty.append(request.number)
            return page(EMPTY_FEED)
        return atom_pages(request)

    server.handler = handler

    chunks = list(search_source(server, empty_page_retries=2).chunks())

    # Not taken for the end of the result set: the first page promised 214881 results.
    assert [len(chunk.records) for chunk in chunks] == [10, 10, 10]
    assert [chunk.gaps for chunk in chunks] == [[], [], []]
    assert [q["start"] for q in server.queries()] == ["0", "10", "10", "20"]


def test_atom_result_set_that_ends_early_is_a_gap_naming_query_and_offset(server):
    server.handler = lambda request: (
        page(EMPTY_FEED) if request.query["start"] == "10" else atom_pages(request)
    )

    chunks = list(search_source(server, empty_page_retries=2).chunks())

    assert [len(chunk.records) for chunk in chunks] == [10, 0]
    (gap,) = chunks[1].gaps
    assert (gap.query, gap.offset, gap.record) == ("search_query=testing", 10, "results 10 to 29")
    assert "result set ended early: no entries at start=10 after 3 requests" in str(gap)
    assert "reports 0 results where the first page promised 214881" in str(gap)
    assert chunks[1].position is None
    # Asked three times, then no further pages: the feed says the set has ended.
    assert [q["start"] for q in server.queries()] == ["0", "10", "10", "10"]


def test_atom_resumed_source_holds_later_pages_to_the_total_first_promised(server):
    server.handler = lambda request: page(EMPTY_FEED)

    (chunk,) = list(
        search_source(server, empty_page_retries=0).chunks({"start": 20, "promised": 214881})
    )

    assert [(gap.query, gap.offset) for gap in chunk.gaps] == [("search_query=testing", 20)]
