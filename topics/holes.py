"""The topics app's personal holes (``topicsite.holes``) in pages readers share: the "Wrong
topic?" report form under each topic of a paper page (``<!--topic-report:<assignment pk>-->``,
``templates/topics/_paper_topics.html``). Registered from ``TopicsConfig.ready``.
"""

from __future__ import annotations

from django.db.models import Exists, F, OuterRef, Q
from django.template.loader import get_template

from topicsite.holes import hole_filler

from .models import Assignment, AssignmentReport

__all__ = ["topic_report_forms"]


@hole_filler("topic-report")
def topic_report_forms(request, args: list[str]) -> dict[str, str]:
    """``{assignment pk: its report form}`` for the assignments of ``args`` (pks as text):
    for a signed-in reader a POST form to report the paper as not about the topic, or
    "You reported this topic" while their report is open (filed since a curator last decided
    the assignment); nothing for anyone else. One query signed in, none otherwise."""
    user = request.user
    if not user.is_authenticated:
        return dict.fromkeys(args, "")
    ids = [int(arg) for arg in args if arg.isdigit()]
    open_report = AssignmentReport.objects.filter(
        reporter=user, assignment_id=OuterRef("pk")
    ).filter(Q(assignment__decided_at__isnull=True) | Q(created_at__gt=F("assignment__decided_at")))
    assignments = (
        Assignment.objects.filter(pk__in=ids)
        .select_related("topic")
        .annotate(reported=Exists(open_report))
    )
    template = get_template("topics/_topic_report.html")
    return {
        str(assignment.pk): template.render(
            {
                "assignment": assignment,
                "reported": assignment.reported,
                "note_max_length": AssignmentReport.NOTE_MAX_LENGTH,
            },
            request,
        )
        for assignment in assignments
    }
