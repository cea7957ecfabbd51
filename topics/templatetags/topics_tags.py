"""Template tags other apps' pages use to show topics (``papers`` itself knows nothing of them)."""

from django import template
from django.db.models import F, Q
from django.template import engines
from django.utils.safestring import mark_safe

from topics.models import Assignment, AssignmentReport
from topics.reasons import assignment_reasons

register = template.Library()


@register.inclusion_tag("topics/_paper_topics.html", takes_context=True)
def paper_topics(context, paper):
    """The active topics ``paper`` is accepted in, ordered by name, as links, each saying why
    it is there (``topics.reasons``); for a signed-in reader a "Wrong topic?" report form
    on each (or "Reported" once they reported it and no curator has decided since). One
    query, two signed in."""
    assignments = list(
        Assignment.objects.accepted()
        .filter(paper=paper, topic__active=True)
        .select_related("topic")
        .order_by("topic__name", "topic_id")
    )
    request = context.get("request")
    user = getattr(request, "user", None)
    signed_in = bool(user and user.is_authenticated)
    reported = set()
    if signed_in and assignments:
        # This reader's open reports (filed since a curator last decided the assignment).
        reported = set(
            AssignmentReport.objects.filter(
                reporter=user, assignment_id__in=[a.pk for a in assignments]
            )
            .filter(
                Q(assignment__decided_at__isnull=True)
                | Q(created_at__gt=F("assignment__decided_at"))
            )
            .values_list("assignment_id", flat=True)
        )
    return {
        "entries": [
            {
                "assignment": assignment,
                "topic": assignment.topic,
                "reasons": assignment_reasons(assignment),
                "reported": assignment.pk in reported,
            }
            for assignment in assignments
        ],
        "signed_in": signed_in,
        "csrf_token": context.get("csrf_token"),
        "request_path": request.path if request is not None else "",
        "note_max_length": AssignmentReport.NOTE_MAX_LENGTH,
    }


@register.simple_tag
def paper_card(paper):
    """The card of ``paper`` (a ``topics.cards.PaperCard``), rendered from the Jinja2
    template ``jinja_templates/topics/_paper_card.html`` that topic pages use too."""
    return mark_safe(  # noqa: S308 - an autoescaping Jinja2 template of ours
        engines["jinja2"].get_template("topics/_paper_card.html").render({"paper": paper})
    )
