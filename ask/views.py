"""``/topics/<slug>/ask/?q=…``: the ask page. Works without JavaScript (a GET form); with
``fragment=1`` it answers only the answer's HTML, which ``static/js/ask.js`` puts in place.
"""

from django.http import Http404, HttpResponsePermanentRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_safe

from topics.models import Topic, TopicRedirect
from topics.selectors import topic_ancestors

from .answers import topic_answer
from .forms import AskForm
from .ratelimit import AskRateLimited, ask_rate_limit


def _topic_or_redirect(slug: str, query: str):
    """The active topic with ``slug``, or a 301 to the ask page at the topic's slug now for an
    old slug (``query`` kept). Raises ``Http404`` otherwise."""
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
    url = reverse("ask:topic", kwargs={"slug": redirect.topic.slug})
    return HttpResponsePermanentRedirect(f"{url}?{query}" if query else url)


@require_safe
def topic_ask(request, slug):
    """The ask box and, for a question ``q``, the answer from the topic's papers with its
    numbered citations (or a note that nothing relevant was found).

    Blank ``q``: the form only (200). Too long: the form with an error naming the limit (400).
    Over the rate limit: a message to wait, status 429 with ``Retry-After``. Unknown topic:
    404; an old slug: 301 to the topic's ask page. ``fragment=1``: only the answer part.
    """
    topic = _topic_or_redirect(slug, request.META.get("QUERY_STRING", ""))
    if not isinstance(topic, Topic):
        return topic
    fragment = request.GET.get("fragment") == "1"
    form = AskForm(request.GET if request.GET.get("q", "").strip() else None)
    context = {"topic": topic, "form": form, "answer": None, "fragment": fragment}
    status = 200
    retry_after = None
    if form.is_bound:
        if not form.is_valid():
            status = 400
        else:
            try:
                ask_rate_limit(request)
            except AskRateLimited as limited:
                status = 429
                retry_after = limited.retry_after
                context["retry_after"] = retry_after
            else:
                context["answer"] = topic_answer(topic=topic, question=form.cleaned_data["q"])
    if fragment:
        response = render(request, "ask/_answer.html", context, status=status)
    else:
        context["ancestors"] = topic_ancestors(topic=topic)
        response = render(request, "ask/ask.html", context, status=status)
    if retry_after is not None:
        response["Retry-After"] = str(retry_after)
    return response
