"""The topic at a page's address, for the views of any app that serve a page per topic (the
topic page, Ask, the topic's Atom feed, the API): the active topic, or a permanent redirect
from an old slug to the topic's address now.
"""

from django.http import Http404, HttpResponsePermanentRedirect
from django.urls import reverse

from .models import Topic
from .selectors import topic_by_slug

__all__ = ["active_topic_or_redirect"]


def active_topic_or_redirect(
    request, slug: str, view_name: str
) -> Topic | HttpResponsePermanentRedirect:
    """The active topic with ``slug`` (with its stats row loaded); for an old slug of a renamed
    or merged-away topic, a 301 to ``view_name`` at the topic's slug now (the query string
    kept). Raises ``Http404`` for anything else."""
    # With its stats row: the momentum and paper count read it without a query of their own.
    topic = topic_by_slug(slug, queryset=Topic.objects.select_related("stats"))
    if topic is None:
        raise Http404("No active topic has this address.")
    if topic.slug == slug:
        return topic
    url = reverse(view_name, kwargs={"slug": topic.slug})
    query = request.META.get("QUERY_STRING", "")
    return HttpResponsePermanentRedirect(f"{url}?{query}" if query else url)
