"""Paper pages: everything stored about one paper, and the topics it is in. A paper of a big
collaboration (thousands of authors) shows a page of its authors at a time (``?authors=N``)
and its first affiliations, so the page costs the same at any number of authors. This code knows
nothing of topics: the template lists them with the ``paper_topics`` tag of ``topics``
(``topics/templatetags/topics_tags.py``), the accepted active topics as links.
"""

from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_safe

from topicsite.pagecache import cache_anonymous_page

from .duplicates import paper_twins
from .embeddings.similar import similar_papers
from .identifiers import InvalidArxivId, parse_arxiv_id
from .models import Authorship, Paper, PaperAffiliation

# Authors listed per page of a paper's author list; affiliations of the paper listed at most.
AUTHORS_PER_PAGE = 100
AFFILIATIONS_SHOWN = 50


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
    context = {
        "paper": paper,
        "authors_page": authors_page,
        "affiliations": list(affiliations.order_by("position")[:AFFILIATIONS_SHOWN]),
        "affiliation_count": affiliations.count(),
        # Nearest by meaning (papers.embeddings): none until the paper has a vector.
        "similar": similar_papers(paper),
        # The same paper stored under other ids ("Also listed as").
        "twins": paper_twins(paper),
    }
    return render(request, "papers/paper_detail.html", context)


@require_safe
@cache_anonymous_page()
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
@cache_anonymous_page()
def paper_detail_local(request, pk):
    """``/papers/local/<pk>/`` for papers without an arXiv identifier (imported from outside
    arXiv); a paper that has one redirects permanently to its canonical page."""
    paper = get_object_or_404(_detail_queryset(), pk=pk)
    if paper.arxiv_id:
        return _redirect_keeping_authors_page(request, paper)
    return _render_detail(request, paper)
