"""Paper pages: everything stored about one paper, and the topics it is in. This code knows
nothing of topics: the template lists them with the ``paper_topics`` tag of ``topics``
(``topics/templatetags/topics_tags.py``), the accepted active topics as links.
"""

from django.db.models import Prefetch
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_safe

from topicsite.pagecache import cache_anonymous_page

from .identifiers import InvalidArxivId, parse_arxiv_id
from .models import Authorship, Paper


def _detail_queryset():
    """Papers with all the detail page shows, in a fixed number of queries."""
    return Paper.objects.select_related("primary_category").prefetch_related(
        "cross_lists",
        "versions",
        Prefetch(
            "authorships",
            queryset=Authorship.objects.select_related("author")
            .prefetch_related("affiliations")
            .order_by("position"),
        ),
        "paper_affiliations__affiliation",
    )


@require_safe
@cache_anonymous_page()
def paper_detail(request, arxiv_id):
    """``/papers/<arxiv_id>/`` for a canonical arXiv identifier (``2409.01234``,
    ``hep-th/9901001``).

    Any other spelling ``parse_arxiv_id`` accepts (``0801.3674v2``, ``arXiv:0801.3674``, an
    abs/pdf/html URL, the arXiv DOI, a PDF stamp) redirects permanently (301) to the canonical
    page of a stored paper. 404 for text that is no identifier or a paper not stored.
    """
    try:
        canonical, _version = parse_arxiv_id(arxiv_id)
    except InvalidArxivId:
        raise Http404("No such arXiv identifier.") from None
    paper = get_object_or_404(_detail_queryset(), arxiv_id=canonical)
    if arxiv_id != canonical:
        return redirect(paper, permanent=True)
    return render(request, "papers/paper_detail.html", {"paper": paper})


@require_safe
@cache_anonymous_page()
def paper_detail_local(request, pk):
    """``/papers/local/<pk>/`` for papers without an arXiv identifier (imported from outside
    arXiv); a paper that has one redirects permanently to its canonical page."""
    paper = get_object_or_404(_detail_queryset(), pk=pk)
    if paper.arxiv_id:
        return redirect(paper, permanent=True)
    return render(request, "papers/paper_detail.html", {"paper": paper})
