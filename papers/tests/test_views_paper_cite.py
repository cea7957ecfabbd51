"""The paper page's reader tools: the PDF link, the byline with "+N", the "Cite" block and
the citation_* meta tags that Google Scholar and Zotero read."""

import datetime as dt
import html
import re

import bibtexparser
import pytest
from django.conf import settings

from papers.tests.factories import (
    AffiliationFactory,
    AuthorFactory,
    AuthorshipFactory,
    CategoryFactory,
    PaperAffiliationFactory,
    PaperFactory,
)
from papers.views import CITED_AUTHORS_SHOWN

pytestmark = pytest.mark.django_db


def meta_tags(page: str) -> list[tuple[str, str]]:
    return [
        (name, html.unescape(content))
        for name, content in re.findall(r'<meta name="(citation_[a-z_]+)" content="([^"]*)">', page)
    ]


def paper_with_authors(count=5, affiliations=5, **fields):
    paper = PaperFactory(author_count=count, affiliation_count=affiliations, **fields)
    for position in range(count):
        AuthorshipFactory(
            paper=paper,
            author=AuthorFactory(name=f"Given{position} Family{position}"),
            position=position,
        )
    for position in range(affiliations):
        PaperAffiliationFactory(
            paper=paper, affiliation=AffiliationFactory(name=f"Lab {position}"), position=position
        )
    return paper


def test_citation_meta_tags(client):
    paper = paper_with_authors(
        count=3,
        arxiv_id="2409.01234",
        latest_version=2,
        title='Oxide interfaces: SrTiO$_3$ & "quotes"',
        submitted=dt.date(2024, 9, 2),
        doi="10.1234/abc.5",
    )

    page = client.get(paper.get_absolute_url()).content.decode()
    tags = meta_tags(page)

    assert ("citation_title", 'Oxide interfaces: SrTiO$_3$ & "quotes"') in tags
    assert [value for name, value in tags if name == "citation_author"] == [
        "Given0 Family0",
        "Given1 Family1",
        "Given2 Family2",
    ]
    assert ("citation_publication_date", "2024/09/02") in tags
    assert ("citation_online_date", "2024/09/02") in tags
    assert ("citation_arxiv_id", "2409.01234") in tags
    assert ("citation_pdf_url", "https://arxiv.org/pdf/2409.01234v2") in tags
    assert ("citation_doi", "10.1234/abc.5") in tags
    # The site's own address (SITE_URL), whatever Host the request named.
    assert ("citation_abstract_html_url", f"{settings.SITE_URL}/papers/2409.01234/") in tags
    # In the head, where Scholar looks for them.
    assert page.index('name="citation_title"') < page.index("</head>")


def test_pdf_link_carries_the_version_and_is_absent_for_withdrawn_papers(client):
    live = PaperFactory(arxiv_id="2409.00001", latest_version=3)
    unversioned = PaperFactory(arxiv_id="2409.00002", latest_version=None)
    withdrawn = PaperFactory(arxiv_id="2409.00003", withdrawn=True)

    assert (
        'href="https://arxiv.org/pdf/2409.00001v3"'
        in client.get(live.get_absolute_url()).content.decode()
    )
    page = client.get(unversioned.get_absolute_url()).content.decode()
    assert 'class="button-link pdf-link" href="https://arxiv.org/pdf/2409.00002"' in page
    page = client.get(withdrawn.get_absolute_url()).content.decode()
    assert "pdf-link" not in page
    assert "citation_pdf_url" not in page


def test_byline_names_three_authors_and_affiliations_and_counts_the_rest(client):
    paper = paper_with_authors(count=16, affiliations=12)

    page = client.get(paper.get_absolute_url()).content.decode()
    byline = re.search(r'(?s)<p class="authors byline">.*?</p>', page).group()
    affiliations = re.search(r'(?s)<p class="affiliations byline">.*?</p>', page).group()

    assert "Family0" in byline and "Family2" in byline and "Family3" not in byline
    assert "+13" in byline
    assert "Lab 2" in affiliations and "Lab 3" not in affiliations
    assert "+9" in affiliations


def test_cite_block_shows_bibtex_and_ris_with_downloads(client):
    paper = paper_with_authors(
        count=2,
        arxiv_id="2409.01234",
        title="SrTiO$_3$ films",
        primary_category=CategoryFactory(code="cs.CL"),
    )

    page = client.get(paper.get_absolute_url()).content.decode()

    assert '<details class="cite-details" id="cite">' in page
    bibtex = html.unescape(re.search(r'(?s)<pre id="cite-bibtex"[^>]*>(.*?)</pre>', page).group(1))
    (entry,) = bibtexparser.parse_string(bibtex).entries
    assert entry["title"] == "{SrTiO$_3$ films}"
    assert entry["author"] == "Family0, Given0 and Family1, Given1"
    assert "TY  - UNPB" in page
    assert 'href="/papers/2409.01234/cite.bib" download' in page
    assert 'href="/papers/2409.01234/cite.ris" download' in page
    # The copy buttons appear only where the script can copy.
    assert '<button type="button" class="copy-button" data-copy="cite-bibtex" hidden>' in page
    assert "/static/js/cite.js" in page


def test_cite_block_of_a_big_collaboration_names_the_first_authors_and_others(client):
    paper = paper_with_authors(count=CITED_AUTHORS_SHOWN + 10, affiliations=0)

    page = client.get(paper.get_absolute_url()).content.decode()
    bibtex = html.unescape(re.search(r'(?s)<pre id="cite-bibtex"[^>]*>(.*?)</pre>', page).group(1))
    (entry,) = bibtexparser.parse_string(bibtex).entries

    assert len(entry["author"].split(" and ")) == CITED_AUTHORS_SHOWN + 1
    assert entry["author"].endswith(" and others")
    assert f"The first {CITED_AUTHORS_SHOWN} of {CITED_AUTHORS_SHOWN + 10} authors" in page
    assert (
        len([1 for name, _ in meta_tags(page) if name == "citation_author"]) == CITED_AUTHORS_SHOWN
    )


def test_anonymous_readers_get_a_save_link_to_log_in(client):
    paper = PaperFactory(arxiv_id="2409.04444")
    page = client.get(paper.get_absolute_url()).content.decode()
    assert 'href="/accounts/login/?next=/papers/2409.04444/"' in page
    assert "csrfmiddlewaretoken" not in page
