"""Template tags other apps' pages use to show topics (``papers`` itself knows nothing of them)."""

from django import template

from topics.models import Assignment

register = template.Library()


@register.inclusion_tag("topics/_paper_topics.html")
def paper_topics(paper):
    """The active topics ``paper`` is accepted in, ordered by name, as links (one query)."""
    assignments = (
        Assignment.objects.accepted()
        .filter(paper=paper, topic__active=True)
        .select_related("topic")
        .order_by("topic__name", "topic_id")
    )
    return {"topics": [assignment.topic for assignment in assignments]}
