"""Reader-facing topic pages: the index, a topic page with momentum and paper cards, and the
page that finds a topic's papers matching a question. Read-only; all reads go through
``topics.selectors`` and ``topics.momentum``.
"""

from django import forms
from django.core.paginator import Paginator
from django.http import Http404, HttpResponsePermanentRedirect
from django.shortcuts import render
from django.urls import reverse

from . import selectors
from .models import Topic, TopicRedirect
from .momentum import momentum_chart, momentum_sentence, topic_momentum

PAPERS_PER_PAGE = 30
ASK_MAX_LENGTH = 500
ASK_RESULTS = 20


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
    """``/``: the active topics as a tree with each subtree's distinct paper count."""
    return render(request, "topics/topic_index.html", {"roots": selectors.topic_tree()})


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


class AskForm(forms.Form):
    """The ask page's question: ``q``, required, at most ``ASK_MAX_LENGTH`` characters after
    stripping; longer questions are refused with a message giving both lengths."""

    q = forms.CharField(
        label="Your question",
        max_length=ASK_MAX_LENGTH,
        strip=True,
        error_messages={
            "max_length": (
                "Please keep the question to %(limit_value)d characters (it has %(show_value)d)."
            ),
        },
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
    )


def topic_ask(request, slug):
    """``/topics/<slug>/ask/?q=…``: the topic's papers (subtree, accepted) whose titles and
    abstracts best match the words of the question, as a numbered list. No generated answer.

    A blank ``q`` shows the form only; more than ``ASK_MAX_LENGTH`` characters shows the form
    with an error and no results. An old slug answers 301 to the topic's ask page.
    """
    topic = _active_topic_or_redirect(request, slug, "topics:ask")
    if not isinstance(topic, Topic):
        return topic
    # A blank question is no question: show the form without a "required" error.
    form = AskForm(request.GET if request.GET.get("q", "").strip() else None)
    papers = None
    if form.is_bound and form.is_valid():
        papers = selectors.topic_papers_matching(
            topic=topic, question=form.cleaned_data["q"], limit=ASK_RESULTS
        )
    context = {
        "topic": topic,
        "ancestors": selectors.topic_ancestors(topic=topic),
        "form": form,
        "papers": papers,
        "pool_size": selectors.ASK_POOL_SIZE,
    }
    return render(request, "topics/topic_ask.html", context)
