"""papers.parsers.atom on real arXiv API feeds (see papers/tests/data/SOURCES.md)."""

import datetime as dt
from pathlib import Path

import pytest
from lxml import etree

from papers.parsers.atom import AtomPage, parse_atom_feed
from papers.records import AuthorName, ParseError

DATA = Path(__file__).parent / "data" / "atom"
RECORDED_2026 = DATA / "arxiv_py_2026_recorded"
RECORDED_2016 = DATA / "arxiv_py_2016"
ALL_FEEDS = sorted(RECORDED_2026.glob("*.xml")) + sorted(RECORDED_2016.glob("*.xml"))

# The API's documented error answer (arXiv API User's Manual, section 3.4 "Errors"), sent with
# HTTP 400. None of the recordings holds one, so it is written out here.
ERROR_FEED = b"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">
  <link href="http://arxiv.org/api/query?search_query=&amp;id_list=1234.12345" rel="self"
        type="application/atom+xml"/>
  <title>ArXiv Query: search_query=&amp;id_list=1234.12345</title>
  <id>http://arxiv.org/api/kvuntZ8c9a4Eq5CF7KY03nMug+Q</id>
  <updated>2007-10-12T00:00:00-04:00</updated>
  <opensearch:totalResults>1</opensearch:totalResults>
  <opensearch:startIndex>0</opensearch:startIndex>
  <opensearch:itemsPerPage>1</opensearch:itemsPerPage>
  <entry>
    <id>http://arxiv.org/api/errors#incorrect_id_format_for_1234.12345</id>
    <title>Error</title>
    <summary>incorrect id format for 1234.12345</summary>
    <updated>2007-10-12T00:00:00-04:00</updated>
    <link href="http://arxiv.org/api/errors#incorrect_id_format_for_1234.12345" rel="alternate"
          type="text/html"/>
    <author>
      <name>arXiv api core</name>
    </author>
  </entry>
</feed>
"""


def parse_recording(stem: str) -> AtomPage:
    [path] = RECORDED_2026.glob(f"{stem}_*.xml")
    return parse_atom_feed(path.read_bytes(), source=path.name)


def parse_2016(name: str) -> AtomPage:
    path = RECORDED_2016 / name
    return parse_atom_feed(path.read_bytes(), source=path.name)


@pytest.mark.parametrize("path", ALL_FEEDS, ids=lambda path: path.name)
def test_every_recorded_feed_parses_completely(path):
    data = path.read_bytes()
    page = parse_atom_feed(data, source=path.name)
    entries = etree.fromstring(data).findall("{http://www.w3.org/2005/Atom}entry")
    assert page.errors == [] and page.api_errors == []
    assert len(page.records) == len(entries)
    assert page.total_results is not None and page.start_index is not None
    for record in page.records:
        assert record.title and "\n" not in record.title
        assert record.abstract and record.abstract == record.abstract.strip()
        assert record.authors and all(author.name for author in record.authors)
        assert record.categories and len(set(record.categories)) == len(record.categories)
        assert record.submitted <= record.updated
        assert record.versions == []
        assert record.source == "atom"
        assert not record.withdrawn


def test_big_search_page():
    page = parse_recording("q_testing_s0_m100")
    records = page.records
    assert len(records) == 100
    assert (page.total_results, page.start_index, page.items_per_page) == (214881, 0, 100)
    assert sum(record.latest_version > 1 for record in records) == 36
    assert sum(bool(record.cross_lists) for record in records) == 46
    assert sum(bool(record.doi) for record in records) == 32
    assert sum(bool(record.journal_ref) for record in records) == 18
    assert sum(bool(record.comments) for record in records) == 97
    assert sum("/" in record.arxiv_id for record in records) == 3
    first = records[0]
    assert first.arxiv_id == "2202.12139"
    assert first.categories == ["cs.SE", "cs.LG"]
    assert first.doi == "10.1109/ICSTW55395.2022.00035"
    assert first.submitted == first.updated == dt.date(2022, 2, 24)


@pytest.mark.parametrize(
    ("stem", "start"),
    [
        ("q_testing_s0_m10", 0),
        ("q_testing_s5_m10", 5),
        ("q_testing_s10_m10", 10),
        ("q_testing_s0_m15", 0),
        ("q_testing_s9_m15", 9),
        ("q_testing_s50_m10", 50),
    ],
)
def test_overlapping_pages_are_windows_of_the_same_results(stem, start):
    everything = [record.arxiv_id for record in parse_recording("q_testing_s0_m100").records]
    page = parse_recording(stem)
    assert page.start_index == start
    assert [record.arxiv_id for record in page.records] == everything[
        start : start + len(page.records)
    ]


def test_old_style_id_with_four_affiliated_authors():
    [record] = parse_recording("id_astro-ph_0601001").records
    assert record.arxiv_id == "astro-ph/0601001"
    assert record.latest_version == 1
    assert record.authors == [
        AuthorName(name="Andrew Gould", affiliations=("Ohio State",)),
        AuthorName(name="Susan Dorsher", affiliations=("Ohio State",)),
        AuthorName(name="B. Scott Gaudi", affiliations=("CfA",)),
        AuthorName(name="Andrzej Udalski", affiliations=("Warsaw University Observatory",)),
    ]
    assert record.categories == ["astro-ph"]
    assert record.journal_ref == "ActaAstron.56:1-50,2006"
    assert record.submitted == dt.date(2006, 1, 2)
    # Old papers keep their leading spaces in the raw summary.
    assert record.abstract_raw.startswith("  We derive")
    assert record.abstract.startswith("We derive the frequencies of hot Jupiters")


def test_old_style_id_with_version():
    [record] = parse_recording("id_quant-ph_0201082v1").records
    assert (record.arxiv_id, record.latest_version) == ("quant-ph/0201082", 1)
    assert record.categories == ["quant-ph", "cs.PL"]


def test_primary_category_first_then_cross_lists():
    [record] = parse_recording("id_1605.08386").records
    assert record.arxiv_id == "1605.08386"
    assert record.primary_category == "math.CO"
    assert record.cross_lists == ["math.ST"]
    assert record.comments == "20 pages, 3 figures"


@pytest.mark.parametrize("stem", ["id_0000.0000", "id_0808.05394"])
def test_empty_feeds(stem):
    page = parse_recording(stem)
    assert page.records == [] and page.errors == [] and page.api_errors == []
    assert (page.total_results, page.start_index, page.items_per_page) == (0, 0, 100)


def test_classic_2016_format_with_wrapped_title():
    page = parse_2016("id_list_1111.2011v2.xml")
    assert (page.total_results, page.start_index, page.items_per_page) == (1, 0, 10)
    [record] = page.records
    assert record.arxiv_id == "1111.2011"
    assert record.latest_version == 2
    assert record.submitted == dt.date(2011, 11, 8)
    assert record.updated == dt.date(2012, 4, 2)
    assert record.title_raw == (
        "Quantum Criticality for Extended Nodes on a Bethe Lattice in the Large\n"
        "  Connectivity Limit"
    )
    assert record.title == (
        "Quantum Criticality for Extended Nodes on a Bethe Lattice in the Large Connectivity Limit"
    )
    assert record.categories == ["cond-mat.str-el", "cond-mat.stat-mech"]
    assert record.doi == "10.1103/PhysRevB.85.115117"
    assert record.journal_ref == "Phys. Rev. B 85, 115117 (2012)"
    assert record.comments == "8 pages, 3 figures. Published version"
    assert [author.name for author in record.authors] == [
        "James M. Murray",
        "Adrian Del Maestro",
        "Zlatko Tesanovic",
    ]


def test_classic_2016_search_page():
    page = parse_2016("search_query_au_del_maestro.xml")
    records = page.records
    assert (len(records), page.total_results) == (10, 31)
    assert sum("/" in record.arxiv_id for record in records) == 4
    assert "cond-mat/0412498" in {record.arxiv_id for record in records}
    assert sum(record.latest_version > 1 for record in records) == 4
    assert sum(bool(record.cross_lists) for record in records) == 7


def test_api_error_entry_is_never_a_record():
    page = parse_atom_feed(
        ERROR_FEED, source="http://export.arxiv.org/api/query?id_list=1234.12345"
    )
    assert page.api_errors == ["incorrect id format for 1234.12345"]
    assert page.records == [] and page.errors == []
    assert page.total_results == 1


def test_bad_entry_is_skipped_and_named():
    path = next(RECORDED_2026.glob("q_testing_s0_m10_*.xml"))
    data = path.read_bytes().replace(
        b"<id>http://arxiv.org/abs/2202.12139v1</id>", b"<id>http://arxiv.org/abs/2202.1213v1</id>"
    )
    page = parse_atom_feed(data, source="feed.xml")
    assert len(page.records) == 9
    [error] = page.errors
    assert error.record == "http://arxiv.org/abs/2202.1213v1"
    assert str(error).startswith("feed.xml, http://arxiv.org/abs/2202.1213v1: ")


def test_withdrawn_when_the_comment_says_so():
    path = next(RECORDED_2026.glob("id_1605.08386_*.xml"))
    data = path.read_bytes().replace(
        b"<arxiv:comment>20 pages, 3 figures</arxiv:comment>",
        b"<arxiv:comment>This paper has been withdrawn by the author</arxiv:comment>",
    )
    [record] = parse_atom_feed(data, source="withdrawn.xml").records
    assert record.withdrawn


def test_not_a_feed_is_refused():
    oai_page = DATA.parent / "oai" / "hepcrawl" / "arxiv-single.xml"
    with pytest.raises(ParseError, match=r"^oai.xml: not an Atom feed: root element <OAI-PMH>"):
        parse_atom_feed(oai_page.read_bytes(), source="oai.xml")


def test_truncated_feed_names_source_and_line():
    data = next(RECORDED_2026.glob("q_testing_s0_m10_*.xml")).read_bytes()
    with pytest.raises(ParseError, match=r"^cut.xml: not well-formed XML at line \d+, column \d+"):
        parse_atom_feed(data[:5000], source="cut.xml")


def test_entity_tricks_are_refused(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-VALUE")
    external = f"""<?xml version="1.0"?>
<!DOCTYPE feed [<!ENTITY xxe SYSTEM "file://{secret}">]>
<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>http://arxiv.org/abs/2202.12139v1</id>
<title>&xxe;</title></entry></feed>""".encode()
    with pytest.raises(ParseError) as caught:
        parse_atom_feed(external, source="xxe.xml")
    assert "TOP-SECRET-VALUE" not in str(caught.value)

    laughs = b"""<?xml version="1.0"?>
<!DOCTYPE feed [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">]>
<feed xmlns="http://www.w3.org/2005/Atom"><title>&d;</title></feed>"""
    with pytest.raises(ParseError, match="^laughs.xml: "):
        parse_atom_feed(laughs, source="laughs.xml")
