"""The topics app's personal holes (``topicsite.holes``) in pages readers share: the "Wrong
topic?" report form under each topic of a paper page (``<!--topic-report:<assignment pk>-->``,
``templates/topics/_paper_topics.html``). Registered from ``TopicsConfig.ready``.
"""

from __future__ import annotations

from django.db import DEFAULT_DB_ALIAS
from django.template.loader import get_template

from topicsite.holes import hole_filler
from topicsite.readers import any_of, read_statement

from .models import Assignment, AssignmentReport, Topic

__all__ = ["topic_report_forms"]


def _report_read(user_id, args: list[str]):
    """The statement of :func:`topic_report_forms` for the reader ``user_id``: each
    assignment's pk, its topic's name and whether the reader's report on it is open (filed
    since a curator last decided it, or never decided); ``None`` when not signed in or no
    assignments. Written out (``topicsite.readers``): it runs on every signed-in paper page
    view, sent with the page's other personal reads as one statement."""
    ids = [int(arg) for arg in args if arg.isdigit()]
    if user_id is None or not ids:
        return None
    among, among_params = any_of(DEFAULT_DB_ALIAS, "a.id", ids)
    assignments, topics = Assignment._meta.db_table, Topic._meta.db_table
    reports = AssignmentReport._meta.db_table
    sql = (
        f"SELECT a.id AS assignment, t.name AS topic, EXISTS ("  # noqa: S608 - table names
        f"SELECT 1 FROM {reports} r WHERE r.reporter_id = %s AND r.assignment_id = a.id"
        f" AND (a.decided_at IS NULL OR r.created_at > a.decided_at)) AS reported"
        f" FROM {assignments} a JOIN {topics} t ON t.id = a.topic_id WHERE {among}"
    )
    return DEFAULT_DB_ALIAS, sql, [user_id, *among_params]


@hole_filler("topic-report", read=_report_read)
def topic_report_forms(request, args: list[str], rows=None) -> dict[str, str]:
    """``{assignment pk: its report form}`` for the assignments of ``args`` (pks as text):
    for a signed-in reader a POST form to report the paper as not about the topic, or
    "You reported this topic" while their report is open (filed since a curator last decided
    the assignment); nothing for anyone else. One query signed in (its ``rows`` when given,
    sent with the page's other holes' statements), none otherwise."""
    user = request.user
    if not user.is_authenticated:
        return dict.fromkeys(args, "")
    if rows is None:
        statement = _report_read(user.pk, args)
        rows = read_statement(statement)
    template = get_template("topics/_topic_report.html")
    return {
        str(pk): template.render(
            {
                "assignment": {"pk": pk, "topic": {"name": topic_name}},
                "reported": bool(reported),
                "note_max_length": AssignmentReport.NOTE_MAX_LENGTH,
            },
            request,
        )
        for pk, topic_name, reported in rows
    }
