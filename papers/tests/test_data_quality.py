"""Data quality on the real records (papers/tests/data, see its SOURCES.md): TeX accents and
escapes read, formulas untouched, mojibake repaired, author lines split into authors and
affiliations, alias categories mapped, withdrawn papers found, and all of it as stored."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from lxml import etree

from papers.ingest import papers_upsert
from papers.ingest.backfill import snapshot_import
from papers.models import Author, Paper
from papers.parsers import is_withdrawal_stub, says_withdrawn, split_author_line
from papers.parsers.atom import parse_atom_feed
from papers.parsers.oai import ARXIV_RAW_NS, parse_oai_page
from papers.parsers.snapshot import iter_snapshot, parse_snapshot_line
from papers.records import AuthorName
from papers.text import unwrap

DATA = Path(__file__).parent / "data"
RAW_PAGE = DATA / "oai" / "scirate_arxivsync" / "listrecords_arXivRaw_token_496549-46001.xml"
SNAPSHOT = DATA / "snapshot" / "arxiv-metadata-oai-snapshot_head200.jsonl"
ATOM_2026 = DATA / "atom" / "arxiv_py_2026_recorded"


@pytest.fixture(scope="module")
def raw():
    page = parse_oai_page(RAW_PAGE.read_bytes(), source=RAW_PAGE.name)
    return {record.arxiv_id: record for record in page.records}


@pytest.fixture(scope="module")
def raw_author_lines():
    """The arXivRaw ``<authors>`` lines exactly as received, by identifier."""
    root = etree.fromstring(RAW_PAGE.read_bytes())
    return {
        element.getparent().findtext(f"{{{ARXIV_RAW_NS}}}id"): element.text
        for element in root.iter(f"{{{ARXIV_RAW_NS}}}authors")
    }


@pytest.fixture(scope="module")
def snapshot():
    with SNAPSHOT.open("rb") as stream:
        return {record.arxiv_id: record for record in iter_snapshot(stream, source="s")}


@pytest.fixture(scope="module")
def atom():
    records = {}
    for path in sorted(ATOM_2026.glob("*.xml")):
        for record in parse_atom_feed(path.read_bytes(), source=path.name).records:
            records[record.arxiv_id] = record
    return records


def changed_titles(records) -> dict[str, str]:
    return {
        record.arxiv_id: record.title
        for record in records.values()
        if record.title != unwrap(record.title_raw)
    }


# --- TeX in titles --------------------------------------------------------------------------


def test_tex_accents_in_titles_become_letters_and_formulas_stay(raw, snapshot):
    changed = changed_titles(raw)
    # 13 of the 1000 arXivRaw titles carry accents outside formulas; 38 carry "$" formulas.
    assert len(changed) == 13
    assert sum("$" in record.title for record in raw.values()) == 38
    assert changed["0801.3811"] == "Variétés homogènes sous $\\PGL_n$"
    assert (
        changed["0801.3873"] == "2-Cocycles of Original Deformative Schrödinger-Virasoro Algebras"
    )
    assert changed["0801.4514"] == (
        "Charged particle interferometry in Plebański--Demiański black hole space--times"
    )
    assert changed["0801.4483"].startswith("Biopsies prostatiques sous guidage échographique 3D")
    assert changed["0801.4483"].endswith("sur fantôme. Etude comparative versus guidage 2D")
    assert changed_titles(snapshot) == {
        "0704.0019": "Approximation for extinction probability of the contact process based on "
        "the Gröbner basis",
        "0704.0073": "A transcendental approach to Kollár's injectivity theorem",
    }


@pytest.mark.parametrize(
    ("source", "arxiv_id", "title"),
    [
        # Formulas, macros outside formulas, TeX grouping and "~" are kept as written.
        ("snapshot", "0704.0005", "From dyadic $\\Lambda_{\\alpha}$ to $\\Lambda_{\\alpha}$"),
        (
            "snapshot",
            "0704.0011",
            "Computing genus 2 Hilbert-Siegel modular forms over $\\Q(\\sqrt{5})$ via the "
            "Jacquet-Langlands correspondence",
        ),
        ("snapshot", "0704.0068", "A Note About the {Ki(z)} Functions"),
        (
            "snapshot",
            "0704.0133",
            "PAH emission and star formation in the host of the z~2.56 Cloverleaf QSO",
        ),
        (
            "raw",
            "0801.3748",
            "Bounded H_\\infty-calculus for pseudodifferential "
            "Douglis-Nirenberg systems of mild regularity",
        ),
        (
            "raw",
            "0801.3763",
            "EPR and magnetization studies on single crystals of a "
            "heterometallic (Cu^{II}} and Cr^{III}) complex: zero-field splitting determination",
        ),
    ],
)
def test_titles_without_accents_are_left_as_written(raw, snapshot, source, arxiv_id, title):
    record = {"raw": raw, "snapshot": snapshot}[source][arxiv_id]
    assert record.title == title == unwrap(record.title_raw)


def test_raw_title_is_kept_as_received(raw):
    record = raw["0801.3811"]
    assert record.title_raw == "Vari\\'et\\'es homog\\`enes sous $\\PGL_n$"


# --- TeX in names and affiliations ----------------------------------------------------------


def test_tex_in_arxiv_raw_author_lines_is_read(raw, raw_author_lines):
    assert sum(line.count("\\") for line in raw_author_lines.values()) == 120
    names = [author.name for record in raw.values() for author in record.authors]
    assert not any("\\" in name for name in names)
    assert sum(not name.isascii() for name in names) == 103

    def names_of(arxiv_id):
        return [author.name for author in raw[arxiv_id].authors]

    assert 'M.\n  R{\\"u}bhausen' in raw_author_lines["0801.3737"]
    assert "M. Rübhausen" in names_of("0801.3737")
    assert "S. Åberg" in names_of("0801.3903")
    assert names_of("0801.4036") == ["Rafał Latała", "Jakub Onufry Wojtaszczyk"]
    assert {"Dijana Žilić", "Krešo Zadro"} <= set(names_of("0801.3763"))
    assert "D.A. Fogaça" in names_of("0801.3938")
    assert "Jesús A. Álvarez López" in names_of("0801.4628")
    assert "D. Král'" in names_of("0801.3854")
    assert [author.affiliations for author in raw["0801.3780"].authors] == [
        ("Université de Rennes I",),
        ("Institut National des Sciences Appliquées de Rennes",),
    ]


def test_snapshot_balazs_from_either_author_field(snapshot):
    line = SNAPSHOT.read_bytes().splitlines()[0]
    data = json.loads(line)
    assert data["authors"].startswith("C. Bal\\'azs, ")
    assert snapshot["0704.0001"].authors[0].name == "C. Balázs"
    # Without authors_parsed the raw line is split and read the same way.
    line_only = parse_snapshot_line(
        json.dumps({**data, "authors_parsed": None}), source="s", line_number=1
    )
    assert [author.name for author in line_only.authors] == [
        "C. Balázs",
        "E. L. Berger",
        "P. M. Nadolsky",
        "C.-P. Yuan",
    ]


# --- mojibake -------------------------------------------------------------------------------


def test_mojibake_in_api_recordings_is_repaired(atom):
    """The 2026 API recordings hold UTF-8 names decoded as Latin-1 on the way (``WÃ¼bben``)."""
    raw_names = [
        unwrap(name.text)
        for path in sorted(ATOM_2026.glob("*.xml"))
        for name in etree.fromstring(path.read_bytes()).iter("{http://www.w3.org/2005/Atom}name")
    ]
    assert sum("Ã" in name for name in raw_names) == 34
    names = {author.name for record in atom.values() for author in record.authors}
    assert not any("Ã" in name or "Â" in name for name in names)
    assert {
        "Dirk Wübben",
        "José Raúl Romero",
        "Aurora Ramírez",
        "Oliver Weißl",
        "Lasse Møldrup",
        "Sólrún Einarsdóttir",
        "C. Lämmerzahl",
    } <= names
    assert atom["2306.03845"].title == "$ω$Test: WebView-Oriented Testing for Android Applications"
    assert atom["2306.03845"].title_raw.startswith("$Ï\x89$Test")


def test_correct_unicode_is_never_touched(snapshot):
    """Kaggle's authors_parsed is proper UTF-8: every non-ASCII name stays as it was."""
    non_ascii = 0
    for line in SNAPSHOT.read_bytes().splitlines():
        data = json.loads(line)
        record = snapshot[data["id"]]
        for (keyname, forenames, suffix, *_), author in zip(
            data["authors_parsed"], record.authors, strict=True
        ):
            expected = " ".join(unwrap(p) for p in (forenames, keyname, suffix) if p.strip())
            # Kaggle's split writes "C.-P." as "C. -P." (C.-P. Yuan, J.-N. Fuchs, Z.-X. Li
            # here); the author line (and the name) has "C.-P."; a collaboration is named
            # without "The".
            expected = re.sub(r"(?<=\.) -(?=\w)", "-", expected).removeprefix("The ")
            non_ascii += not expected.isascii()
            assert author.name == expected
    assert non_ascii == 10


# --- author lines ---------------------------------------------------------------------------


def test_collaborations_and_et_al(raw):
    def names_of(arxiv_id):
        return [author.name for author in raw[arxiv_id].authors]

    assert names_of("0801.4016")[-2:] == ["J. M. Zanotti", "RBC and UKQCD Collaborations"]
    assert names_of("0801.4186")[-2:] == ["N. Yamada", "JLQCD Collaboration"]
    assert names_of("0801.3877") == ["CDF Collaboration", "T. Aaltonen"]
    assert names_of("0801.4020") == ["PHENIX Collaboration", "A. Adare"]
    # "…, C. Baixeras, et al. (MAGIC collaboration: 136 additional authors not shown, …)"
    assert names_of("0801.4029")[-1] == "C. Baixeras"
    assert len(names_of("0801.4029")) == 10
    assert not any(author.affiliations for author in raw["0801.4029"].authors)
    assert names_of("0801.3801") == ["AURIGA Collaboration", "Virgo Collaboration"]


def test_collaboration_in_parentheses_is_not_an_affiliation():
    line = "A. Smith (CERN), B. Jones (for the ATLAS Collaboration) and C. Wu et al."
    assert split_author_line(line) == [
        AuthorName(name="A. Smith", affiliations=("CERN",)),
        AuthorName(name="B. Jones"),
        AuthorName(name="ATLAS Collaboration"),
        AuthorName(name="C. Wu"),
    ]


def test_numbered_affiliations(raw):
    assert [author.affiliations for author in raw["0801.4139"].authors] == [
        ("Sterrewacht Leiden", "Observatorio Astronomico Nacional"),
        ("Sterrewacht Leiden",),
        ("Sterrewacht Leiden",),
        ("GPS",),
        ("Max-Plank-Institut fur Astronomie",),
    ]
    # "(1 and 2)" and "((1). Department …"
    assert raw["0801.4330"].authors[0].affiliations == ("Sungkyunkwan U.", "U. of Manchester")
    assert raw["0801.4580"].authors[4].affiliations == (
        "Laboratory for Neutron Scattering, ETHZ & PSI, Villigen, Switzerland",
    )
    # Affiliations given once for several names go to each ("A, B (X)").
    assert [len(author.affiliations) for author in raw["0801.4549"].authors] == [2, 2, 1, 1]


def test_snapshot_numbered_affiliations_come_from_the_author_line(snapshot):
    """Kaggle's authors_parsed leaves "1 and 2" as an affiliation (0704.0025) or drops the
    numbered ones (0704.0128); the author line has them."""
    data = json.loads(SNAPSHOT.read_bytes().splitlines()[24])
    assert data["id"] == "0704.0025"
    assert [entry[3:] for entry in data["authors_parsed"]] == [["1 and 2"], ["1 and 3"]]
    assert [author.affiliations for author in snapshot["0704.0025"].authors] == [
        (
            "CREST, Japan Science and Technology Agency",
            "Russian Research Centre ``Kurchatov Institute''",
        ),
        ("CREST, Japan Science and Technology Agency", "The University of Tokyo"),
    ]
    evans = snapshot["0704.0128"].authors
    assert evans[0] == AuthorName(
        name="P. A. Evans",
        keyname="Evans",
        forenames="P. A.",
        affiliations=("University of Leicester",),
    )
    assert evans[-1].affiliations == (
        "INAF-Osservatorio Astronomico di Brera",
        "Universita' degli Studi di Milano",
    )
    assert not any(
        affiliation[:1].isdigit()
        for record in snapshot.values()
        for author in record.authors
        for affiliation in author.affiliations
    )


# --- withdrawn ------------------------------------------------------------------------------


def test_withdrawn_from_the_version_record_and_the_abstract(raw, snapshot):
    signals = {
        arxiv_id: (
            is_withdrawal_stub(record.versions[-1]),
            says_withdrawn(record.comments),
            says_withdrawn(record.abstract_raw),
        )
        for arxiv_id, record in raw.items()
        if record.withdrawn
    }
    assert signals == {
        "0801.4122": (True, True, True),
        "0801.4138": (True, True, True),
        # The comment says "5 pages": the stub and the abstract tell.
        "0801.4243": (True, False, True),
        "0801.4311": (True, True, True),
        # The abstract is the paper's own: the stub and the comment tell.
        "0801.4644": (True, True, False),
    }
    assert [arxiv_id for arxiv_id, record in snapshot.items() if record.withdrawn] == ["0704.0156"]


# --- as stored ------------------------------------------------------------------------------


def test_stored_papers_carry_the_readable_forms(categories, raw):
    papers_upsert(records=list(raw.values()))
    snapshot_import(path=SNAPSHOT, tag=False)

    assert Paper.objects.get(arxiv_id="0801.3811").title == "Variétés homogènes sous $\\PGL_n$"
    assert Paper.objects.get(arxiv_id="0801.3811").title_raw == (
        "Vari\\'et\\'es homog\\`enes sous $\\PGL_n$"
    )
    assert Author.objects.filter(name__in=["C. Balázs", "M. Rübhausen", "S. Åberg"]).count() == 3
    assert not Author.objects.filter(name__contains="\\").exists()
    assert set(Paper.objects.filter(withdrawn=True).values_list("arxiv_id", flat=True)) == {
        "0801.4122",
        "0801.4138",
        "0801.4243",
        "0801.4311",
        "0801.4644",
        "0704.0156",
    }
    # Alias categories are stored under their canonical codes, never twice.
    paper = Paper.objects.get(arxiv_id="0801.3774")  # math.AP math-ph math.MP
    assert paper.primary_category.code == "math.AP"
    assert list(paper.cross_lists.values_list("code", flat=True)) == ["math-ph"]
    information = Paper.objects.get(arxiv_id="0801.3702")  # cs.IT math.IT
    assert information.primary_category.code == "cs.IT"
    assert not information.cross_lists.exists()
    assert not Paper.objects.filter(cross_lists__code__in=["math.MP", "math.IT"]).exists()
