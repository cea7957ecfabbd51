"""Reader-facing topic pages: the index and a topic page with momentum and paper cards
(asking a topic lives in the ``ask`` app). Read-only; all reads go through
``topics.selectors`` and ``topics.momentum``.
"""

from django.core.paginator import Paginator
from django.http import Http404, HttpResponsePermanentRedirect
from django.shortcuts import render
from django.urls import reverse

from . import selectors
from .models import Topic, TopicRedirect
from .momentum import momentum_chart, momentum_sentence, topic_momentum

PAPERS_PER_PAGE = 30
INDEX_QUERY_MAX_LENGTH = 100
INDEX_SORT_LABELS = (("name", "Name"), ("size", "Size"), ("rising", "Rising"))


def _active_topic_or_redirect(request, slug: str, view_name: str):
    """The active topic with ``slug``; for an old slug of a renamed or merged-away topic, a 301
    to ``view_name`` at the topic's slug now (the query string kept). Raises ``Http404`` for
    anything else."""
    topic = Topic.objects.active().filter(slug=slug).first()
    if topic is not None:
        return topic
    redirect = (
        TopicRedirect.objects.filter(old_slug=slug, topic__active=True)
        .select_related("topic")
        .first()
    )
    if redirect is None:
        raise Http404("No active topic has this address.")
    url = reverse(view_name, kwargs={"slug": redirect.topic.slug})
    query = request.META.get("QUERY_STRING", "")
    return HttpResponsePermanentRedirect(f"{url}?{query}" if query else url)


def topic_index(request):
    """``/topics/``: the active topics with each subtree's distinct paper count, momentum
    figure and 12-week sparkline.

    ``?sort=name`` (default) shows the tree, children by name; ``size`` and ``rising`` a flat
    ranked list (see :func:`topics.selectors.topic_index_ranked`); any other value falls back
    to ``name``. ``?q=`` lists the topics whose names hold every word of it (at most
    ``INDEX_QUERY_MAX_LENGTH`` characters are used), ranked by ``sort``. A fixed number of
    queries whatever the number of topics.
    """
    sort = request.GET.get("sort", "")
    if sort not in selectors.INDEX_SORTS:
        sort = "name"
    raw_query = request.GET.get("q", "").strip()
    query = raw_query[:INDEX_QUERY_MAX_LENGTH].strip()
    index = selectors.topic_index()
    results = None
    if query:
        matches = selectors.topic_index_matching(index, query=query)
        results = selectors.topic_index_ranked(index, sort=sort, topics=matches)
    elif sort != "name":
        results = selectors.topic_index_ranked(index, sort=sort)
    context = {
        "index": index,
        "sort": sort,
        "sorts": INDEX_SORT_LABELS,
        "query": query,
        "query_shortened": len(raw_query) > INDEX_QUERY_MAX_LENGTH,
        "query_max_length": INDEX_QUERY_MAX_LENGTH,
        "results": results,
        "rising_min_papers": selectors.RISING_MIN_PAPERS,
        "fragment_seconds": selectors.INDEX_CACHE_SECONDS,
    }
    return render(request, "topics/topic_index.html", context)


def topic_detail(request, slug):
    """``/topics/<slug>/``: breadcrumb, momentum and chart, then the topic's papers (its
    descendants' included), newest first, ``PAPERS_PER_PAGE`` a page (``?page=N``).

    404 for an unknown or inactive topic; 301 to the new address for an old slug of a renamed
    or merged-away topic. The query count does not depend on the number of cards or chips.
    """
    topic = _active_topic_or_redirect(request, slug, "topics:detail")
    if not isinstance(topic, Topic):
        return topic
    momentum = topic_momentum(topic=topic)
    paginator = Paginator(selectors.topic_card_papers(topic=topic), PAPERS_PER_PAGE)
    page = paginator.get_page(request.GET.get("page"))
    context = {
        "topic": topic,
        "ancestors": selectors.topic_ancestors(topic=topic),
        "children": topic.children.active().order_by("name"),
        "momentum": momentum,
        "momentum_sentence": momentum_sentence(momentum),
        "chart_bars": momentum_chart(momentum),
        "page": page,
        "paper_total": paginator.count,
    }
    return render(request, "topics/topic_detail.html", context)
