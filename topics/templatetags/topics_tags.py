"""Template tags other apps' pages use to show topics (``papers`` itself knows nothing of them)."""

from django import template
from django.template import engines
from django.utils.safestring import mark_safe

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


@register.simple_tag
def paper_card(paper):
    """The card of ``paper`` (a ``topics.cards.PaperCard``), rendered from the Jinja2
    template ``jinja_templates/topics/_paper_card.html`` that topic pages use too."""
    return mark_safe(  # noqa: S308 - an autoescaping Jinja2 template of ours
        engines["jinja2"].get_template("topics/_paper_card.html").render({"paper": paper})
    )
