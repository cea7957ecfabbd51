"""The paper page: every stored field, identifier redirects, local papers, escaping."""

import datetime as dt
import html
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from papers.models import PaperVersion
from papers.tests.factories import (
    AffiliationFactory,
    AuthorFactory,
    AuthorshipFactory,
    CategoryFactory,
    PaperAffiliationFactory,
    PaperFactory,
    big_collaboration_paper,
)
from papers.views import AFFILIATIONS_SHOWN, AUTHORS_PER_PAGE, CITED_AUTHORS_SHOWN

pytestmark = pytest.mark.django_db


def text_of(page):
    page = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", page)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"(?s)<[^>]+>", " ", page))).strip()


def full_paper(**fields):
    """A paper with every field the page shows filled in."""
    defaults = {
        "arxiv_id": "2409.01234",
        "title": "Training language model agents with verifiable rewards",
        "abstract": "First paragraph of the abstract.\n\nSecond paragraph.",
        "comments": "12 pages, 4 figures",
        "journal_ref": "J. Agents 3 (2026) 1-12",
        "doi": "10.1234/agents.2026.001",
        "license": "http://creativecommons.org/licenses/by/4.0/",
        "primary_category": CategoryFactory(code="cs.CL", name="Computation and Language"),
        "submitted": dt.date(2026, 9, 1),
        "updated": dt.date(2026, 9, 20),
        "latest_version": 2,
        "author_count": 2,
        "affiliation_count": 2,
    }
    paper = PaperFactory(**(defaults | fields))
    paper.cross_lists.set(
        [
            CategoryFactory(code="cs.AI", name="Artificial Intelligence"),
            CategoryFactory(code="cs.LG", name="Machine Learning"),
        ]
    )
    PaperVersion.objects.create(
        paper=paper, number=1, submitted=dt.datetime(2026, 9, 1, 17, 5, tzinfo=dt.UTC), size_kb=812
    )
    PaperVersion.objects.create(
        paper=paper, number=2, submitted=dt.datetime(2026, 9, 20, 9, 30, tzinfo=dt.UTC), size_kb=905
    )
    mit, eth = AffiliationFactory(name="MIT"), AffiliationFactory(name="ETH Zurich")
    first = AuthorshipFactory(paper=paper, author=AuthorFactory(name="Zoë Zed"), position=0)
    first.affiliations.set([mit, eth])
    AuthorshipFactory(paper=paper, author=AuthorFactory(name="Aaron Able"), position=1)
    PaperAffiliationFactory(paper=paper, affiliation=mit, position=0)
    PaperAffiliationFactory(paper=paper, affiliation=eth, position=1)
    return paper


def test_paper_page_shows_all_metadata(client):
    paper = full_paper()

    response = client.get("/papers/2409.01234/")
    page = response.content.decode()
    text = text_of(page)

    assert response.status_code == 200
    assert reverse("papers:detail", kwargs={"arxiv_id": "2409.01234"}) == "/papers/2409.01234/"
    assert "<h1>Training language model agents with verifiable rewards</h1>" in page
    # Authors in position order (not by name), each with their affiliations (by name: the
    # many-to-many keeps no order).
    assert "Zoë Zed (ETH Zurich; MIT) Aaron Able" in text
    assert "<p>First paragraph of the abstract.</p>" in page and "<p>Second paragraph.</p>" in page
    assert "Primary category cs.CL Computation and Language" in text
    assert "Cross-lists cs.AI Artificial Intelligence cs.LG Machine Learning" in text
    assert "Submitted Sep 1, 2026" in text
    assert "Updated Sep 20, 2026" in text
    assert "v1 Sep 1, 2026 17:05 UTC 812 kB" in text
    assert "v2 Sep 20, 2026 09:30 UTC 905 kB" in text
    assert "Comments 12 pages, 4 figures" in text
    assert "Journal reference J. Agents 3 (2026) 1-12" in text
    assert '<a href="https://doi.org/10.1234/agents.2026.001">' in page
    assert 'href="http://creativecommons.org/licenses/by/4.0/" rel="license"' in page
    assert '<a href="https://arxiv.org/abs/2409.01234">' in page
    assert "Withdrawn" not in text
    assert paper.get_absolute_url() == "/papers/2409.01234/"


def test_withdrawn_paper_says_so(client):
    full_paper(withdrawn=True)
    text = text_of(client.get("/papers/2409.01234/").content.decode())
    assert "Withdrawn. The latest version of this paper is a withdrawal notice" in text


def test_a_live_paper_links_its_pdf_a_withdrawn_or_deleted_one_does_not(
    client, django_capture_on_commit_callbacks
):
    paper = full_paper()
    # The version the stored metadata describes (full_paper: v2).
    pdf = '<a href="https://arxiv.org/pdf/2409.01234v2">'
    assert pdf in client.get("/papers/2409.01234/").content.decode()

    with django_capture_on_commit_callbacks(execute=True):  # the page cache hears of it
        paper.withdrawn = True
        paper.save()
    assert "arxiv.org/pdf/" not in client.get("/papers/2409.01234/").content.decode()

    with django_capture_on_commit_callbacks(execute=True):
        paper.withdrawn = False
        paper.deleted_at = dt.datetime(2026, 10, 2, 8, 0, tzinfo=dt.UTC)
        paper.save()
    response = client.get("/papers/2409.01234/")
    assert response.status_code == 200  # still findable
    text = text_of(response.content.decode())
    assert "Deleted. arXiv reports this record deleted (seen Oct 2, 2026 ): it is kept" in text
    assert "arxiv.org/pdf/" not in response.content.decode()


def test_old_style_identifier_with_a_slash(client):
    PaperFactory(arxiv_id="hep-th/9901001", title="Old style paper")

    response = client.get("/papers/hep-th/9901001/")

    assert response.status_code == 200
    assert "Old style paper" in response.content.decode()
    assert "https://arxiv.org/abs/hep-th/9901001" in response.content.decode()


@pytest.mark.parametrize(
    ("requested", "canonical"),
    [
        ("0801.3674v2", "/papers/0801.3674/"),
        ("arXiv:0801.3674", "/papers/0801.3674/"),
        ("hep-th/9901001v3", "/papers/hep-th/9901001/"),
        ("math.GT/0309136", "/papers/math/0309136/"),
        # Pasted spellings: URLs, the arXiv DOI, the PDF stamp, percent-encoded
        # as a browser sends them.
        ("ARXIV:0801.3674", "/papers/0801.3674/"),
        ("https://arxiv.org/abs/0801.3674v2", "/papers/0801.3674/"),
        ("https://arxiv.org/abs/0801.3674/", "/papers/0801.3674/"),
        ("http://export.arxiv.org/pdf/0801.3674v1.pdf", "/papers/0801.3674/"),
        ("https://arxiv.org/html/0801.3674v2", "/papers/0801.3674/"),
        ("https:/arxiv.org/abs/0801.3674", "/papers/0801.3674/"),
        ("10.48550/arXiv.0801.3674", "/papers/0801.3674/"),
        ("https://doi.org/10.48550/ARXIV.0801.3674", "/papers/0801.3674/"),
        ("arXiv%3A0801.3674v2%20%5Bcs.CL%5D%2029%20Jan%202008", "/papers/0801.3674/"),
        ("https://arxiv.org/abs/hep-th/9901001v3/", "/papers/hep-th/9901001/"),
        ("10.48550/arXiv.hep-th/9901001", "/papers/hep-th/9901001/"),
        ("arXiv:math.GT/0309136v1%20%5Bmath.GT%5D", "/papers/math/0309136/"),
    ],
)
def test_other_spellings_redirect_permanently_to_the_canonical_page(client, requested, canonical):
    PaperFactory(arxiv_id="0801.3674")
    PaperFactory(arxiv_id="hep-th/9901001")
    PaperFactory(arxiv_id="math/0309136")

    response = client.get(f"/papers/{requested}/")

    assert response.status_code == 301
    assert response["Location"] == canonical
    assert client.get(canonical).status_code == 200


@pytest.mark.parametrize(
    "requested",
    [
        "2409.99999",
        "2409.99999v2",
        "not-an-id",
        "0000.0000",
        "https://evil.example/abs/2409.01234",
        "https://arxiv.org/list/2409.01234",
        "10.1103/PhysRevD.93.016005",
        "math.XX/0309136",
        "arXiv:2409.01234%20%5Bcs.XX%5D",
        "x" * 400,
    ],
)
def test_unknown_or_invalid_identifier_is_404(client, requested):
    PaperFactory(arxiv_id="2409.01234")
    assert client.get(f"/papers/{requested}/").status_code == 404


@pytest.mark.parametrize(
    ("requested", "said"),
    [
        ("garbage", "not an arXiv identifier: &#x27;garbage&#x27;"),
        ("%3Cscript%3E", "not an arXiv identifier: &#x27;&lt;script&gt;&#x27;"),
        ("2409.99999", "No paper 2409.99999 is stored here (yet)."),
    ],
)
def test_the_404_page_says_what_was_wrong_escaped(client, requested, said):
    response = client.get(f"/papers/{requested}/")

    assert response.status_code == 404
    page = response.content.decode()
    assert said in page
    assert "<script>" not in page


def test_a_404_without_a_reason_names_no_exception_class(client):
    page = client.get("/no/such/address/").content.decode()
    assert "Not found" in page and "Resolver404" not in page and "Http404" not in page


def test_local_page_for_a_paper_without_an_arxiv_identifier(client):
    paper = PaperFactory(arxiv_id=None, import_key="seed:anthrodial", title="Imported paper")

    response = client.get(f"/papers/local/{paper.pk}/")

    assert paper.get_absolute_url() == f"/papers/local/{paper.pk}/"
    assert response.status_code == 200
    page = response.content.decode()
    assert "Imported paper" in page
    assert "arxiv.org/abs" not in page


def test_local_page_of_an_arxiv_paper_redirects_to_its_canonical_page(client):
    paper = PaperFactory(arxiv_id="2409.01234")
    response = client.get(f"/papers/local/{paper.pk}/")
    assert response.status_code == 301
    assert response["Location"] == "/papers/2409.01234/"
    assert client.get("/papers/local/999999/").status_code == 404


def test_paper_text_is_escaped(client):
    full_paper(
        title="<script>alert('x')</script>",
        abstract="<img src=x onerror=alert(1)>",
        comments="<b>bold</b>",
        doi='10.1/"><script>',
    )
    page = client.get("/papers/2409.01234/").content.decode()
    assert "<script>alert" not in page
    assert "<img src=x" not in page
    assert "<b>bold</b>" not in page
    assert '"><script>' not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page


def test_query_count_does_not_grow_with_authors(client):
    def queries(arxiv_id, n_authors):
        paper = PaperFactory(arxiv_id=arxiv_id)
        for position in range(n_authors):
            authorship = AuthorshipFactory(paper=paper, position=position)
            authorship.affiliations.set([AffiliationFactory(), AffiliationFactory()])
            PaperAffiliationFactory(paper=paper, position=position)
        with CaptureQueriesContext(connection) as ctx:
            response = client.get(f"/papers/{arxiv_id}/")
        assert response.status_code == 200
        # Each name links to its author page.
        assert response.content.decode().count('<li><a href="/authors/') == n_authors
        return len(ctx.captured_queries)

    assert queries("2409.00001", 2) == queries("2409.00002", 40)


def test_another_spelling_redirects_to_the_same_page_of_authors(client):
    """``?authors=N`` on another spelling (or the local address) of a paper lands on that page
    of its authors, not the first: the redirect used to drop the query string."""
    paper = big_collaboration_paper(authors=250)
    canonical = reverse("papers:detail", kwargs={"arxiv_id": paper.arxiv_id})

    for spelling in (f"{paper.arxiv_id}v1", f"arXiv:{paper.arxiv_id}"):
        response = client.get(f"/papers/{spelling}/", {"authors": "3", "context": "cs"})
        assert response.status_code == 301
        assert response["Location"] == f"{canonical}?authors=3"
    response = client.get(f"/papers/local/{paper.pk}/", {"authors": "2"})
    assert response["Location"] == f"{canonical}?authors=2"
    assert client.get(f"/papers/{paper.arxiv_id}v1/")["Location"] == canonical


def test_a_paper_of_5000_authors_pages_its_authors(client, django_assert_max_num_queries):
    paper = big_collaboration_paper(authors=5000)
    url = reverse("papers:detail", kwargs={"arxiv_id": paper.arxiv_id})
    with django_assert_max_num_queries(15):
        response = client.get(url)
    assert response.status_code == 200
    assert len(response.content) < 60_000
    text = text_of(response.content.decode())
    author_list = re.search(r'(?s)<ol class="author-list".*?</ol>', response.content.decode())
    assert author_list.group().count("Collaborator ") == AUTHORS_PER_PAGE
    # The byline names three, the "Cite" block (BibTeX and RIS) CITED_AUTHORS_SHOWN each.
    assert text.count("Collaborator ") == AUTHORS_PER_PAGE + 3 + 2 * CITED_AUTHORS_SHOWN
    assert f"5000 authors; 1–{AUTHORS_PER_PAGE} listed here." in text
    assert f"The first {AFFILIATIONS_SHOWN} of 60 affiliations." in text
    assert 'href="?authors=2"' in response.content.decode()

    with django_assert_max_num_queries(15):
        last = client.get(url, {"authors": "50"})
    text = text_of(last.content.decode())
    assert f"Collaborator {paper.pk}-04999" in text
    assert f"Collaborator {paper.pk}-04899" not in text
    assert "4901–5000 listed here" in text
    # Not a page number: the first page, not an error.
    assert client.get(url, {"authors": "x"}).status_code == 200
