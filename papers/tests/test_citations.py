"""Citations (papers.citations): BibTeX keeps TeX and parses back, RIS is one value a line,
every author "Last, First", withdrawn papers say so; the cite.bib / cite.ris downloads."""

import datetime as dt

import bibtexparser
import pytest
import rispy

from papers.citations import (
    Citation,
    bibtex_document,
    bibtex_entry,
    bibtex_text,
    citations_of,
    ris_document,
    ris_entry,
)
from papers.models import Author
from papers.tests.factories import AuthorFactory, AuthorshipFactory, CategoryFactory, PaperFactory

pytestmark = pytest.mark.django_db


def parsed(text):
    """The entries of ``text`` as bibtexparser reads them (no failed blocks allowed)."""
    library = bibtexparser.parse_string(text)
    assert not library.failed_blocks, [block.error for block in library.failed_blocks]
    return library.entries


def cited(paper, names):
    for position, name in enumerate(names):
        AuthorshipFactory(paper=paper, author=AuthorFactory(name=name), position=position)
    return citations_of([paper])[0]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Superconductivity in SrTiO$_3$", "Superconductivity in SrTiO$_3$"),
        (r"The $\mathcal{O}(n^2)$ bound", r"The $\mathcal{O}(n^2)$ bound"),
        (r"Schr\"odinger cats", r"Schr\"odinger cats"),
        ("Q&A, 100% and #1", r"Q\&A, 100\% and \#1"),
        (r"already \& escaped", r"already \& escaped"),
        ("file_name and x^2", r"file\_name and x\^{}2"),
        ("$x_1$ and y_1", r"$x_1$ and y\_1"),
        ("costs $5 only", r"costs \$5 only"),
        ("a {BERT} model", "a {BERT} model"),
        ("x}, note = {pwned", r"x\textbraceright{}, note = \textbraceleft{}pwned"),
        ("line\n  break", "line break"),
        ("trailing \\", r"trailing \textbackslash{}"),
    ],
)
def test_bibtex_text_keeps_tex_and_escapes_what_would_break(text, expected):
    assert bibtex_text(text) == expected


def test_bibtex_entry_has_arxiv_fields_and_keeps_tex_in_the_title():
    paper = PaperFactory(
        arxiv_id="2409.01234",
        title="Two-dimensional electron gas at SrTiO$_3$ & LaAlO$_3$ interfaces",
        primary_category=CategoryFactory(code="cond-mat.str-el"),
        submitted=dt.date(2024, 9, 2),
        dois=["10.1103/PhysRevB.1.2"],
        author_count=2,
    )
    citation = cited(paper, ["Ludwig van Beethoven", "Zoë Ünal"])

    text = bibtex_entry(citation)

    assert "SrTiO$_3$" in text and r"SrTiO\$\_3\$" not in text
    (entry,) = parsed(text)
    assert entry.key == "arXiv_2409.01234"
    assert entry.entry_type == "misc"
    assert entry["title"] == (
        r"{Two-dimensional electron gas at SrTiO$_3$ \& LaAlO$_3$ interfaces}"
    )
    assert entry["author"] == "van Beethoven, Ludwig and Ünal, Zoë"
    assert entry["year"] == "2024"
    assert entry["month"] == "sep"
    assert entry["eprint"] == "2409.01234"
    assert entry["archivePrefix"] == "arXiv"
    assert entry["primaryClass"] == "cond-mat.str-el"
    assert entry["url"] == "https://arxiv.org/abs/2409.01234"
    assert entry["doi"] == "10.1103/PhysRevB.1.2"
    assert "note" not in entry.fields_dict


def test_every_author_is_named_and_others_follow_the_ones_not_stored():
    names = [f"Author{i} Person{i}" for i in range(250)]
    paper = PaperFactory(author_count=300)
    citation = cited(paper, names)

    (entry,) = parsed(bibtex_entry(citation))
    authors = entry["author"].split(" and ")
    assert len(authors) == 251
    assert authors[0] == "Person0, Author0"
    assert authors[249] == "Person249, Author249"
    assert authors[-1] == "others"

    ris = rispy.loads(ris_entry(citation))[0]
    assert len(ris["authors"]) == 250
    assert ris["authors"][0] == "Person0, Author0"


def test_stored_keyname_and_forenames_are_used_as_arxiv_gave_them():
    author = Author(name="Hans Müller Jr", keyname="Müller", forenames="Hans", suffix="Jr")
    paper = PaperFactory(author_count=2)
    citation = Citation(paper=paper, authors=[author, Author(name="Madonna")])

    (entry,) = parsed(bibtex_entry(citation))

    assert entry["author"] == "Müller, Jr, Hans and Madonna"


def test_a_withdrawn_paper_says_so_and_has_no_pdf():
    paper = PaperFactory(
        arxiv_id="2401.00001", withdrawn=True, journal_ref="Phys. Rev. 1 (2024) 2", author_count=1
    )
    citation = cited(paper, ["Ann Author"])

    (entry,) = parsed(bibtex_entry(citation))
    assert entry["note"] == "Withdrawn. Phys. Rev. 1 (2024) 2"

    ris = rispy.loads(ris_entry(citation))[0]
    assert "Withdrawn" in ris["notes"]
    assert "file_attachments1" not in ris


def test_bidi_controls_are_left_out_and_right_to_left_names_kept():
    paper = PaperFactory(arxiv_id="2401.00002", title="Safe title \u202etxet desrever")
    citation = cited(paper, ["\u05e9\u05e8\u05d4 \u2067Levi"])

    for text in (bibtex_entry(citation), ris_entry(citation)):
        assert not set(text) & set("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067")
        assert "Safe title txet desrever" in text
        assert "\u05e9\u05e8\u05d4" in text  # the Hebrew forename stays


def test_ris_reference_is_one_value_a_line():
    paper = PaperFactory(
        arxiv_id="2409.05555",
        latest_version=3,
        title="A title\nover two lines with SrTiO$_3$",
        abstract="First line.\n\nSecond paragraph.",
        primary_category=CategoryFactory(code="cs.CL"),
        submitted=dt.date(2024, 9, 2),
        doi="10.1234/abc.5",
        author_count=1,
    )
    citation = cited(paper, ["Ann Author"])

    text = ris_entry(citation)
    (reference,) = rispy.loads(text)

    assert text.startswith("TY  - UNPB\n")
    assert text.rstrip().endswith("ER  -")
    assert reference["title"] == "A title over two lines with SrTiO$_3$"
    assert reference["abstract"] == "First line. Second paragraph."
    assert reference["authors"] == ["Author, Ann"]
    assert reference["year"] == "2024"
    assert reference["date"] == "2024/09/02"
    assert reference["urls"] == ["https://arxiv.org/abs/2409.05555"]
    assert reference["file_attachments1"] == "https://arxiv.org/pdf/2409.05555v3"
    assert reference["accession_number"] == "2409.05555"
    assert reference["doi"] == "10.1234/abc.5"


def test_documents_hold_every_entry_and_parse_back():
    papers = [PaperFactory(title=f"Paper {i} on $\\alpha$") for i in range(3)]
    citations = citations_of(papers)

    entries = parsed(bibtex_document(citations))
    assert [entry.key for entry in entries] == [f"arXiv_{p.arxiv_id}" for p in papers]
    assert len(rispy.loads(ris_document(citations))) == 3
    assert bibtex_document([]) == ""


def test_local_papers_are_cited_with_this_sites_page(settings):
    settings.SITE_URL = "https://topics.example.org"
    paper = PaperFactory(arxiv_id=None, import_key="ref:1")

    (entry,) = parsed(bibtex_entry(citations_of([paper])[0]))

    assert entry.key == f"topicsite_local_{paper.pk}"
    assert entry["url"] == f"https://topics.example.org/papers/local/{paper.pk}/"
    assert "eprint" not in entry.fields_dict


# --- downloads -----------------------------------------------------------------------------


def test_cite_downloads_name_every_author(client):
    paper = PaperFactory(arxiv_id="hep-th/9901001", title="Old $N=4$ paper", author_count=40)
    cited(paper, [f"First{i} Last{i}" for i in range(40)])

    bib = client.get("/papers/hep-th/9901001/cite.bib")
    ris = client.get("/papers/hep-th/9901001/cite.ris")

    assert bib.status_code == 200
    assert bib["Content-Type"] == "application/x-bibtex; charset=utf-8"
    assert bib["Content-Disposition"] == 'attachment; filename="arXiv_hep-th_9901001.bib"'
    (entry,) = parsed(bib.content.decode())
    assert len(entry["author"].split(" and ")) == 40
    assert ris.status_code == 200
    assert ris["Content-Type"].startswith("application/x-research-info-systems")
    assert len(rispy.loads(ris.content.decode())[0]["authors"]) == 40


def test_cite_download_of_a_local_paper(client):
    paper = PaperFactory(arxiv_id=None, import_key="ref:2")
    response = client.get(f"/papers/local/{paper.pk}/cite.bib")
    assert response.status_code == 200
    assert f"topicsite_local_{paper.pk}" in response.content.decode()


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("/papers/2409.99999/cite.bib", "2409.99999"),
        ("/papers/not-an-id/cite.ris", "not-an-id"),
        ("/papers/local/999999/cite.bib", None),
    ],
)
def test_cite_download_of_an_unknown_paper_is_404(client, url, named):
    response = client.get(url)
    assert response.status_code == 404
    if named:
        assert named in response.content.decode()
