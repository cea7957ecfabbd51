"""Reader-facing author pages (``/authors/<id>-<slug>/``): an author's papers as cards, their
co-authors, affiliations and topics, and their momentum (``topics.authors``). Read-only.

The address is stable by id; the slug is cosmetic: a wrong or missing slug, and the id of an
author a curator merged into another, answer 301 to the address now.
"""

from django.http import Http404, HttpResponseBadRequest, HttpResponsePermanentRedirect
from django.shortcuts import render
from django.template import engines
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_safe

from papers.author_selectors import COUNTED_PAPERS
from papers.models import Author
from topicsite.pagecache import cache_anonymous_page, page_cache_skip

from .authors import PageNumberInvalid, author_page


def _redirect(request, author: Author) -> HttpResponsePermanentRedirect:
    url = author.get_absolute_url()
    query = request.META.get("QUERY_STRING", "")
    return HttpResponsePermanentRedirect(f"{url}?{query}" if query else url)


@require_safe
@cache_anonymous_page(query_params=("page",))
def author_detail(request, pk: int, slug: str = ""):
    """``/authors/<pk>-<slug>/``: the author's name, follow button, momentum line and 12-week
    sparkline, topics, co-authors and affiliations (with counts), then their papers newest
    first, ``topics.authors.AUTHOR_PAPERS_PER_PAGE`` a page (``?page=N``; past the last page
    is the last page).

    404 naming the id for an unknown author; 301 (query string kept) from ``/authors/<pk>/``,
    a wrong slug, or a merged-away author's id to the address now; 400 naming ``page`` when
    it is not a positive whole number. A fixed number of queries whatever the number of the
    author's papers (see ``topics.authors.author_page``); the whole page is cached for
    anonymous readers (``topicsite.pagecache``).
    """
    author = Author.objects.select_related("merged_into").filter(pk=pk).first()
    if author is None:
        raise Http404(f"No author has the id {pk}.")
    if author.merged_into is not None:
        return _redirect(request, author.merged_into)
    if slug != author.slug:
        return _redirect(request, author)
    try:
        data = author_page(author=author, page=request.GET.get("page"))
    except PageNumberInvalid as error:
        return HttpResponseBadRequest(str(error), content_type="text/plain; charset=utf-8")
    cards_html = (
        engines["jinja2"].get_template("topics/_author_cards.html").render({"page": data.page})
    )
    context = {
        "author": author,
        "data": data,
        "counted_papers": COUNTED_PAPERS,
        # Rendered by an autoescaping Jinja2 template of ours.
        "cards_html": mark_safe(cards_html),  # noqa: S308
    }
    response = render(request, "topics/author_detail.html", context)
    raw_number = request.GET.get("page")
    if raw_number is not None and raw_number != str(data.page.number):
        # ?page=01, a page past the last: shown, but stored only as the page it is.
        page_cache_skip(response)
    return response
