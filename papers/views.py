"""Paper pages: everything stored about one paper, and the topics it is in. A paper of a big
collaboration (thousands of authors) shows a page of its authors at a time (``?authors=N``)
and its first affiliations, so the page costs the same at any number of authors. This code knows
nothing of topics: the template lists them with the ``paper_topics`` tag of ``topics``
(``topics/templatetags/topics_tags.py``), the accepted active topics as links, each saying
why it is there. The page cites the paper (BibTeX and RIS, :mod:`papers.citations`, shown in a
"Cite" block and downloadable from ``cite.bib`` / ``cite.ris``) and carries Google Scholar's
``citation_*`` meta tags, which Zotero reads too.
"""

from urllib.parse import urlencode

from django.conf import settings
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_safe

from topicsite.pagecache import cache_anonymous_page

from .citations import (
    BIBTEX_CONTENT_TYPE,
    RIS_CONTENT_TYPE,
    Citation,
    bibtex_document,
    bibtex_entry,
    bibtex_key,
    citations_of,
    paper_pdf_url,
    ris_document,
    ris_entry,
)
from .duplicates import paper_twins
from .embeddings.similar import similar_papers
from .identifiers import InvalidArxivId, parse_arxiv_id
from .models import Authorship, Paper, PaperAffiliation

# Authors listed per page of a paper's author list; affiliations of the paper listed at most.
AUTHORS_PER_PAGE = 100
AFFILIATIONS_SHOWN = 50
# Authors the page's "Cite" block and citation_author meta tags name ("and others" after
# them); the cite.bib / cite.ris downloads name every stored author.
CITED_AUTHORS_SHOWN = 25
# Authors and affiliations named in the byline under the title (the rest counted, "+N"), as
# on a paper card.
BYLINE_SHOWN = 3


def _detail_queryset():
    """Papers with the small relations the detail page shows (authors and affiliations are
    paged, see :func:`_render_detail`)."""
    return Paper.objects.select_related("primary_category").prefetch_related(
        "cross_lists", "versions"
    )


def _render_detail(request, paper):
    """The paper page: one page of authors (``?authors=N``, :data:`AUTHORS_PER_PAGE` each; a
    page number out of range or not a number shows the nearest page) and the first
    :data:`AFFILIATIONS_SHOWN` affiliations, and its similar papers, in a fixed number of
    queries."""
    authorships = (
        Authorship.objects.filter(paper=paper)
        .select_related("author")
        .prefetch_related("affiliations")
        .order_by("position")
    )
    authors_page = Paginator(authorships, AUTHORS_PER_PAGE).get_page(request.GET.get("authors"))
    affiliations = PaperAffiliation.objects.filter(paper=paper).select_related("affiliation")
    shown_affiliations = list(affiliations.order_by("position")[:AFFILIATIONS_SHOWN])
    # The page cites the first CITED_AUTHORS_SHOWN authors ("and others" after them, so the
    # page costs the same at any number of authors); the cite.bib / cite.ris downloads name all.
    cited_authors = [
        authorship.author
        for authorship in Authorship.objects.filter(paper=paper)
        .select_related("author")
        .order_by("position")[:CITED_AUTHORS_SHOWN]
    ]
    citation = Citation(paper=paper, authors=cited_authors)
    context = {
        "paper": paper,
        "authors_page": authors_page,
        "affiliations": shown_affiliations,
        "affiliation_count": affiliations.count(),
        "byline_authors": [author.name for author in cited_authors[:BYLINE_SHOWN]],
        "byline_more_authors": max(paper.author_count - BYLINE_SHOWN, 0),
        "byline_affiliations": [item.affiliation.name for item in shown_affiliations][
            :BYLINE_SHOWN
        ],
        "byline_more_affiliations": max(
            max(paper.affiliation_count, len(shown_affiliations)) - BYLINE_SHOWN, 0
        ),
        "pdf_url": paper_pdf_url(paper),
        "cited_authors": cited_authors,
        "bibtex": bibtex_entry(citation),
        "ris": ris_entry(citation),
        # The site's own address (SITE_URL), not the request's Host: the page is shared
        # among every spelling of the host (topicsite.pagecache), ports included.
        "page_url": f"{settings.SITE_URL}{paper.get_absolute_url()}",
        # Nearest by meaning (papers.embeddings): none until the paper has a vector.
        "similar": similar_papers(paper),
        # The same paper stored under other ids ("Also listed as").
        "twins": paper_twins(paper),
    }
    return render(request, "papers/paper_detail.html", context)


@require_safe
@cache_anonymous_page(signed_in=True)
def paper_detail(request, arxiv_id):
    """``/papers/<arxiv_id>/`` for a canonical arXiv identifier (``2409.01234``,
    ``hep-th/9901001``).

    Any other spelling ``parse_arxiv_id`` accepts (``0801.3674v2``, ``arXiv:0801.3674``, an
    abs/pdf/html URL, the arXiv DOI, a PDF stamp) redirects permanently (301) to the canonical
    page of a stored paper, whatever the version asked for (the stored metadata may lag
    arXiv's newest version, so a reader is better served by the paper than by a 404). 404,
    saying which, for text that is no identifier (naming it) or a paper not stored.
    """
    try:
        canonical, _version = parse_arxiv_id(arxiv_id)
    except InvalidArxivId as error:
        raise Http404(str(error)) from None
    paper = _detail_queryset().filter(arxiv_id=canonical).first()
    if paper is None:
        raise Http404(f"No paper {canonical} is stored here (yet).")
    if arxiv_id != canonical:
        return _redirect_keeping_authors_page(request, paper)
    return _render_detail(request, paper)


def _redirect_keeping_authors_page(request, paper):
    """301 to ``paper``'s canonical page, keeping the ``?authors=N`` page asked for (and no
    other parameter: a pasted URL's own query string, ``?context=cs``, means nothing here)."""
    response = redirect(paper, permanent=True)
    page = request.GET.get("authors")
    if page:
        response["Location"] += "?" + urlencode({"authors": page})
    return response


@require_safe
@cache_anonymous_page(signed_in=True)
def paper_detail_local(request, pk):
    """``/papers/local/<pk>/`` for papers without an arXiv identifier (imported from outside
    arXiv); a paper that has one redirects permanently to its canonical page."""
    paper = get_object_or_404(_detail_queryset(), pk=pk)
    if paper.arxiv_id:
        return _redirect_keeping_authors_page(request, paper)
    return _render_detail(request, paper)


def _paper_or_404(*, arxiv_id: str | None = None, pk: int | None = None) -> Paper:
    """The stored paper of ``arxiv_id`` (any spelling ``parse_arxiv_id`` accepts) or of
    ``pk``; 404 naming what was wrong otherwise."""
    papers = Paper.objects.select_related("primary_category")
    if pk is not None:
        return get_object_or_404(papers, pk=pk)
    try:
        canonical, _version = parse_arxiv_id(arxiv_id)
    except InvalidArxivId as error:
        raise Http404(str(error)) from None
    paper = papers.filter(arxiv_id=canonical).first()
    if paper is None:
        raise Http404(f"No paper {canonical} is stored here (yet).")
    return paper


def _citation_download(paper: Paper, *, kind: str) -> HttpResponse:
    """``paper`` cited with every stored author, as a ``.bib`` or ``.ris`` attachment."""
    citations = citations_of([paper])
    if kind == "bib":
        body, content_type = bibtex_document(citations), BIBTEX_CONTENT_TYPE
    else:
        body, content_type = ris_document(citations), RIS_CONTENT_TYPE
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{bibtex_key(paper)}.{kind}"'
    return response


@require_safe
def paper_cite(request, kind, arxiv_id=None, pk=None):
    """``/papers/<arXiv identifier>/cite.bib`` and ``cite.ris`` (``/papers/local/<pk>/…``
    off arXiv): the paper as a BibTeX entry or an RIS reference with all its stored
    authors, downloaded as ``<key>.bib`` / ``<key>.ris`` (``application/x-bibtex`` /
    ``application/x-research-info-systems``, UTF-8). 404 naming the id for text that is no
    arXiv identifier or a paper not stored."""
    return _citation_download(_paper_or_404(arxiv_id=arxiv_id, pk=pk), kind=kind)
