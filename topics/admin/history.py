"""Assignment history tables shown on the change pages of topics and papers."""

from django.utils.html import format_html, format_html_join

from topics.models import Assignment

HISTORY_ROWS_SHOWN = 50


def assignment_history_table(rows, *, show_paper: bool, show_topic: bool):
    """An HTML table of HistoricalAssignment rows: when, who, what, and the state after;
    ``show_paper`` / ``show_topic`` add those columns. A sentence when there are no rows."""
    headers = ["When", "Who", "Change"]
    headers += ["Paper"] if show_paper else []
    headers += ["Topic"] if show_topic else []
    headers += ["Source", "State", "Score", "Decided by", "Reason"]
    body = []
    for row in rows:
        cells = [
            row.history_date.strftime("%Y-%m-%d %H:%M"),
            row.history_user.get_username() if row.history_user else "(system)",
            row.get_history_type_display(),
        ]
        if show_paper:
            cells.append(row.paper.identifier if row.paper else f"#{row.paper_id}")
        if show_topic:
            cells.append(row.topic.name if row.topic else f"#{row.topic_id}")
        cells += [
            row.source,
            row.state,
            "" if row.score is None else f"{row.score:.3f}",
            row.decided_by.get_username() if row.decided_by else "",
            row.history_change_reason or "",
        ]
        body.append(cells)
    if not body:
        return "No changes recorded yet."
    return format_html(
        '<table class="assignment-history"><thead><tr>{}</tr></thead><tbody>{}</tbody></table>',
        format_html_join("", "<th>{}</th>", ((h,) for h in headers)),
        format_html_join(
            "",
            "<tr>{}</tr>",
            ((format_html_join("", "<td>{}</td>", ((c,) for c in cells)),) for cells in body),
        ),
    )


def assignment_history_rows(**filters):
    """The latest ``HISTORY_ROWS_SHOWN`` HistoricalAssignment rows matching ``filters`` (e.g.
    ``topic_id=...`` or ``paper_id=...``), newest first, with the users, paper and topic
    joined for :func:`assignment_history_table`."""
    return (
        Assignment.history.filter(**filters)
        .select_related("history_user", "decided_by", "paper", "topic")
        .order_by("-history_date", "-history_id")[:HISTORY_ROWS_SHOWN]
    )
