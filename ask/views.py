"""``/topics/<slug>/ask/?q=…``: the ask page. Works without JavaScript (a GET form); with
``fragment=1`` it answers only the answer's HTML, which ``static/js/ask.js`` puts in place.
"""

from django.shortcuts import render
from django.views.decorators.http import require_safe

from topics.lookups import active_topic_or_redirect
from topics.models import Topic
from topics.selectors import topic_ancestors

from .answers import topic_answer
from .forms import AskForm
from .ratelimit import AskRateLimited, ask_rate_limit


@require_safe
def topic_ask(request, slug):
    """The ask box and, for a question ``q``, the answer from the topic's papers with its
    numbered citations (or a note that nothing relevant was found).

    Blank ``q``: the form only (200). Too long: the form with an error naming the limit (400).
    Over the rate limit: a message to wait, status 429 with ``Retry-After``. Unknown topic:
    404; an old slug: 301 to the topic's ask page. ``fragment=1``: only the answer part.
    """
    topic = active_topic_or_redirect(request, slug, "ask:topic")
    if not isinstance(topic, Topic):
        return topic
    fragment = request.GET.get("fragment") == "1"
    form = AskForm(request.GET if request.GET.get("q", "").strip() else None, topic=topic)
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
