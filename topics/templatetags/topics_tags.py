"""Template tags other apps' pages use to show topics (``papers`` itself knows nothing of them)."""

from django import template
from django.template import engines
from django.template.loader import get_template
from django.utils.safestring import mark_safe

from topics.models import Assignment
from topics.reasons import assignment_reasons
from topicsite.holes import hole, holes_fill, holes_shared

register = template.Library()


@register.simple_tag(takes_context=True)
def paper_topics(context, paper):
    """The active topics ``paper`` is accepted in, ordered by name, as links, each saying why
    it is there (``topics.reasons``); for a signed-in reader a "Wrong topic?" report form
    on each (or "Reported" once they reported it and no curator has decided since): a
    personal hole (``topics.holes.topic_report_forms``), left as it is when the page is
    rendered to be shared. One query, two signed in."""
    assignments = list(
        Assignment.objects.accepted()
        .filter(paper=paper, topic__active=True)
        .select_related("topic")
        .order_by("topic__name", "topic_id")
    )
    request = context.get("request")
    html = get_template("topics/_paper_topics.html").render(
        {
            "entries": [
                {
                    "assignment": assignment,
                    "topic": assignment.topic,
                    "reasons": assignment_reasons(assignment),
                    "report": hole("topic-report", assignment.pk),
                }
                for assignment in assignments
            ]
        }
    )
    if request is not None and not holes_shared(request):
        html = holes_fill(request, html)
    return mark_safe(html)  # noqa: S308 - our own templates' output


@register.simple_tag
def paper_card(paper):
    """The card of ``paper`` (a ``topics.cards.PaperCard``), rendered from the Jinja2
    template ``jinja_templates/topics/_paper_card.html`` that topic pages use too."""
    return mark_safe(  # noqa: S308 - an autoescaping Jinja2 template of ours
        engines["jinja2"].get_template("topics/_paper_card.html").render({"paper": paper})
    )
