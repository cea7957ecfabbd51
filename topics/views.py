"""Reader-facing topic pages: the index, a topic page with momentum and paper cards (asking a
topic lives in the ``ask`` app), and the search page. Read-only; all reads go through
``topics.selectors``, ``topics.cards``, ``topics.index``, ``topics.momentum`` and
``topics.search_page``.
"""

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.cache import cache
from django.http import Http404, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.template import engines
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_POST, require_safe

from papers.models import Category
from topicsite import pagecache
from topicsite.pagecache import cache_anonymous_page

from . import index as topics_index
from . import selectors
from .assignments import ReportLimitReached, assignment_report
from .cards import topic_card_page
from .forms import QUERY_MAX_LENGTH, SearchForm
from .lookups import active_topic_or_redirect
from .models import Assignment, Topic
from .momentum import momentum_chart, momentum_sentence, topic_momentum_stored
from .search_page import PageOutOfRange, search_page, search_papers_scope

PAPERS_PER_PAGE = 30
# A page of rendered cards is cached this long at most (seconds); a tagging or curation commit
# that touches the topic's subtree replaces it at once (the topic's stats generation moves on).
CARDS_CACHE_SECONDS = 300
CARDS_LOCK_SECONDS = 30
_CARDS_CACHE_PREFIX = "topics:cards:v1"
INDEX_QUERY_MAX_LENGTH = 100
INDEX_SORT_LABELS = (("name", "Name"), ("size", "Size"), ("rising", "Rising"))


@require_safe
@cache_anonymous_page(query_params=("sort",))
def topic_index(request):
    """``/topics/``: the active topics with each subtree's distinct paper count, momentum
    figure and 12-week sparkline.

    ``?sort=name`` (default) shows the tree, children by name; ``size`` and ``rising`` a flat
    ranked list (see :func:`topics.index.topic_index_ranked`); any other value falls back
    to ``name``. ``?q=`` lists the topics whose names hold every word of it (at most
    ``INDEX_QUERY_MAX_LENGTH`` characters are used), ranked by ``sort``. A fixed number of
    queries whatever the number of topics.
    """
    raw_sort = request.GET.get("sort")
    sort = raw_sort if raw_sort in topics_index.INDEX_SORTS else "name"
    raw_query = request.GET.get("q", "").strip()
    query = raw_query[:INDEX_QUERY_MAX_LENGTH].strip()
    index = topics_index.topic_index()
    results = None
    if query:
        matches = topics_index.topic_index_matching(index, query=query)
        results = topics_index.topic_index_ranked(index, sort=sort, topics=matches)
    elif sort != "name":
        results = topics_index.topic_index_ranked(index, sort=sort)
    context = {
        "index": index,
        "sort": sort,
        "sorts": INDEX_SORT_LABELS,
        "query": query,
        "query_shortened": len(raw_query) > INDEX_QUERY_MAX_LENGTH,
        "query_max_length": INDEX_QUERY_MAX_LENGTH,
        "results": results,
        "rising_min_papers": topics_index.RISING_MIN_PAPERS,
        "fragment_seconds": topics_index.INDEX_CACHE_SECONDS,
    }
    response = render(request, "topics/topic_index.html", context)
    if raw_sort is not None and raw_sort != sort:  # an unknown sort shows the tree, unstored
        pagecache.page_cache_skip(response)
    return response


def _topic_cards_html(topic: Topic, raw_number, subtree_ids: list[int]) -> tuple[str, int, int]:
    """``(the rendered cards and pager of page ?page=raw_number, the topic's paper count, the
    page number shown)``.

    The rendered cards are cached per topic and page number with the topic's stats
    ``generation`` and the site-wide version of ``topicsite.pagecache`` (moved on by edits
    to papers, authors and topics that no count sees); an entry of an older generation or
    version is rebuilt by one request at a time (a ``cache.add`` lock) while the others serve
    it as it is. Without a cache every request builds the page (a fixed number of queries,
    see ``topics.cards.topic_card_page``).
    """
    stats = selectors.topic_stats(topic=topic, subtree_ids=subtree_ids)
    number = selectors.topic_page_number(
        raw_number, paper_count=stats.paper_count, per_page=PAPERS_PER_PAGE
    )
    key = f"{_CARDS_CACHE_PREFIX}:{topic.pk}:{number}"
    found = cache.get_many([key, pagecache.VERSION_KEY])
    entry, version = found.get(key), found.get(pagecache.VERSION_KEY)
    current = (stats.generation, version)
    if entry is not None:
        stamp, html = entry
        if stamp == current or not cache.add(f"{key}:lock", 1, timeout=CARDS_LOCK_SECONDS):
            return mark_safe(html), stats.paper_count, number  # noqa: S308 - our own template
    page = topic_card_page(
        topic=topic,
        number=number,
        per_page=PAPERS_PER_PAGE,
        subtree_ids=subtree_ids,
        paper_count=stats.paper_count,
    )
    html = engines["jinja2"].get_template("topics/_topic_cards.html").render({"page": page})
    cache.set(key, (current, html), timeout=CARDS_CACHE_SECONDS)
    if entry is not None:
        cache.delete(f"{key}:lock")
    return mark_safe(html), stats.paper_count, number  # noqa: S308 - an autoescaping template


@require_safe
@cache_anonymous_page(query_params=("page",), signed_in=True)
def topic_detail(request, slug):
    """``/topics/<slug>/``: breadcrumb, momentum and chart, then the topic's papers (its
    descendants' included), newest first, ``PAPERS_PER_PAGE`` a page (``?page=N``; past the
    last page is the last page).

    404 for an unknown or inactive topic; 301 to the new address for an old slug of a renamed
    or merged-away topic. The query count does not depend on the number of cards or chips, nor
    the time on the size of the topic (see ``topics.cards.topic_card_page``); the rendered cards
    are cached (see :func:`_topic_cards_html`), and the whole page for anonymous readers and,
    with its personal parts as holes, for signed-in readers (``topicsite.pagecache``).
    """
    topic = active_topic_or_redirect(request, slug, "topics:detail")
    if not isinstance(topic, Topic):
        return topic
    momentum = topic_momentum_stored(topic=topic)
    ancestors, subtree = selectors.topic_lineage(topic=topic)
    raw_number = request.GET.get("page")
    cards_html, paper_total, number = _topic_cards_html(topic, raw_number, [t.pk for t in subtree])
    chart_bars = momentum_chart(momentum)
    context = {
        "topic": topic,
        "ancestors": ancestors,
        "children": [t for t in subtree if t.parent_id == topic.pk and t.active],
        "momentum": momentum,
        "momentum_sentence": momentum_sentence(momentum),
        "chart_bars": chart_bars,
        # Twelve empty weeks draw no chart: the sentence says the topic is quiet.
        "chart_shown": any(bar.count for bar in chart_bars),
        "cards_html": cards_html,
        "paper_total": paper_total,
    }
    response = render(request, "topics/topic_detail.html", context)
    if raw_number is not None and raw_number != str(number):
        # ?page=01, ?page=x, a page past the last: shown, but stored only as the page it is.
        pagecache.page_cache_skip(response)
    return response


SEARCH_RESULTS_PER_PAGE = 20


def _search_choices() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The filter menus: ``(slug, display name)`` of the active topics by name and
    ``(code, "code — name")`` of the stored arXiv categories by code. Two queries."""
    topics = [
        (slug, f"{short}: {name}" if short else name)
        for slug, short, name in Topic.objects.active()
        .order_by("name", "pk")
        .values_list("slug", "short_name", "name")
    ]
    categories = [
        (code, f"{code} — {name}")
        for code, name in Category.objects.order_by("code").values_list("code", "name")
    ]
    return topics, categories


def _options_html(choices: list[tuple[str, str]], selected: str | None) -> SafeString:
    """``<option>`` elements for ``(value, label)`` choices, escaped, the one whose value is
    ``selected`` marked so. Built here, not by a template loop: the topic menu has hundreds
    of entries, and Django's ``{% for %}`` with an ``{% if %}`` in it cost the search page
    about a third of its rendering time."""
    return mark_safe(  # noqa: S308 - every value and label escaped
        "".join(
            f'<option value="{escape(value)}"{" selected" if value == selected else ""}>'
            f"{escape(label)}</option>"
            for value, label in choices
        )
    )


@require_safe
def search(request):
    """``/search/``: papers ranked for ``?q=`` by ``topics.search.papers_search`` (the ranking
    of ``/api/v1/search/``), in the topic-rule language of saved searches (words,
    ``"phrases"``, ``OR``, ``-word`` or ``NOT``, parentheses, ``prefix*``).

    Filters: ``topic`` (slug; descendants included), ``category`` (primary or cross-list),
    ``submitted_after`` / ``submitted_before`` (YYYY-MM-DD, inclusive); ``sort`` (relevance,
    newest), ``mode`` (hybrid, keyword, semantic), ``page``. Cards as on topic pages, the
    query's words highlighted; a form to save the search as a follow (``follows:search-create``).

    No query: tips on the query language (200). A bad value (a query that does not parse,
    with the parser's reason and position; an unknown topic or category; a bad date, sort,
    mode or page; control characters; a query over 300 characters): the page with the error
    next to its field, 400. A page past the last: 404 naming the last. The query count does
    not depend on the number of results (see ``topics.search_page``). Never cached: the page
    carries the save form's CSRF token.
    """
    form = SearchForm(request.GET)
    topics_menu, categories_menu = _search_choices()
    context = {
        "form": form,
        "topic_options": _options_html(topics_menu, form.data.get("topic")),
        "category_options": _options_html(categories_menu, form.data.get("category")),
        "query": request.GET.get("q", "").strip()[: QUERY_MAX_LENGTH + 1],
        "result_page": None,
        "page_error": None,
    }
    if not form.is_valid():
        return render(request, "topics/search.html", context, status=400)
    data = form.cleaned_data
    context["query"] = data["q"]
    if not data["q"]:
        return render(request, "topics/search.html", context)
    scope = search_papers_scope(
        topic=data["topic"],
        category=data["category"],
        submitted_after=data["submitted_after"],
        submitted_before=data["submitted_before"],
    )
    try:
        context["result_page"] = search_page(
            query=data["q"],
            scope=scope,
            mode=data["mode"],
            sort=data["sort"],
            number=data["page"],
            per_page=SEARCH_RESULTS_PER_PAGE,
        )
    except PageOutOfRange as error:
        context["page_error"] = (
            f"There is no page {error.number} of these results; the last is page {error.num_pages}."
        )
        return render(request, "topics/search.html", context, status=404)
    # The pager's and the "match by meaning" link's query strings ("&amp;" by autoescape).
    params = request.GET.copy()
    params.pop("page", None)
    context["params_without_page"] = f"{params.urlencode()}&" if params else ""
    params["mode"] = "hybrid"
    context["params_hybrid"] = params.urlencode()
    context["cards_html"] = mark_safe(  # noqa: S308 - an autoescaping template
        engines["jinja2"]
        .get_template("topics/_search_cards.html")
        .render({"cards": context["result_page"].cards})
    )
    return render(request, "topics/search.html", context)


@require_POST
def assignment_report_view(request, pk):
    """POST ``/topics/assignments/<pk>/report/`` with an optional ``note``: the signed-in
    reader reports that the paper is not about the topic (``topics.assignments.
    assignment_report``: the assignment joins the curators' review queue), then back to the
    paper's page. Anonymous readers go to the log-in page and back to the paper.

    404 for an assignment that is not an accepted one in an active topic (only those show on
    paper pages), 400 naming the limit for an oversized note, 429 after too many reports in
    an hour; GET is 405.
    """
    assignment = (
        Assignment.objects.accepted()
        .filter(pk=pk, topic__active=True)
        .select_related("paper", "topic")
        .first()
    )
    if assignment is None:
        raise Http404(f"No assignment {pk} of a paper to an active topic can be reported.")
    back = assignment.paper.get_absolute_url()
    if not request.user.is_authenticated:
        return redirect_to_login(back)
    try:
        _report, opened = assignment_report(
            assignment=assignment, user=request.user, note=request.POST.get("note", "")
        )
    except ValueError as error:
        return HttpResponseBadRequest(str(error), content_type="text/plain; charset=utf-8")
    except ReportLimitReached as error:
        return HttpResponse(str(error), status=429, content_type="text/plain; charset=utf-8")
    if opened:
        messages.success(
            request,
            f"Thank you: the curators will review whether this paper belongs in "
            f"{assignment.topic.name}.",
        )
    else:
        messages.info(request, f"You already reported {assignment.topic.name} for this paper.")
    return redirect(f"{back}#topic-reason-{assignment.pk}")
