"""Assignment writes by curators: decide one assignment, place a paper in a topic, decide many
at once, move papers from one topic to another. Views, admin and the API call these.

A **curator decision** (an assignment with ``decided_by`` set, or ``decided_at`` once the
curator's account is gone) is final: only a person acting through these functions (or a topic
merge, which keeps it) changes one. Tagging, training and imports change only machine-made
assignments. Every write is one transaction and leaves a history row naming the user.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from papers.models import Paper

from .caches import topic_caches_invalidate_on_commit
from .history import history_bulk_record
from .models import Assignment, AssignmentReport, Topic

__all__ = [
    "AssignmentMoveResult",
    "ReportLimitReached",
    "assignment_add",
    "assignment_decide",
    "assignment_report",
    "assignments_bulk_decide",
    "assignments_move",
]

# Assignments read and written per statement by bulk operations.
_CHUNK = 1000


# --- one assignment ------------------------------------------------------------------------


def _assignment_store(
    *, paper_id: int, topic_id: int, pk: int | None, values: dict, create_values: dict
) -> Assignment:
    """Inside a transaction: lock the assignment ``pk`` (or, when it is gone, the one for
    ``(paper_id, topic_id)``), set ``values`` and save; when there is none, insert one with
    ``create_values`` and ``values``. An insert that loses a race to a concurrent insert of
    the pair (tagging, another curator) locks and updates that row instead. Returns the stored
    row. Simple-history records the change as usual."""
    locked = Assignment.objects.select_for_update()
    row = locked.filter(pk=pk).first() if pk is not None else None
    if row is None:
        row = locked.filter(paper_id=paper_id, topic_id=topic_id).first()
    if row is None:
        try:
            with transaction.atomic():
                return Assignment.objects.create(
                    paper_id=paper_id, topic_id=topic_id, **{**create_values, **values}
                )
        except IntegrityError:
            row = locked.filter(paper_id=paper_id, topic_id=topic_id).first()
            if row is None:
                raise
    for name, value in values.items():
        setattr(row, name, value)
    row.save(update_fields=[*values, "updated_at"])
    return row


def assignment_decide(*, assignment: Assignment, state: str, user) -> Assignment:
    """Record a curator decision: set ``state`` (``"accepted"``/``"rejected"``) and mark the
    assignment decided by ``user`` now. From then on re-tagging leaves it alone.

    The source (rule, classifier, import ...) and score are kept, so it stays visible where
    the assignment came from. The stored row is locked first; when re-tagging removed it
    since ``assignment`` was read, the decision is recorded anyway: the (paper, topic)
    assignment is created again with the decision and the source and score of ``assignment``.
    Returns the stored assignment (``assignment`` itself is brought up to date too, its pk
    included). Raises ``ValueError`` for an unknown state.
    """
    if state not in Assignment.State.values:
        raise ValueError(
            f"Unknown assignment state {state!r}; use one of {Assignment.State.values}."
        )
    with transaction.atomic():
        stored = _assignment_store(
            paper_id=assignment.paper_id,
            topic_id=assignment.topic_id,
            pk=assignment.pk,
            values={"state": state, "decided_by": user, "decided_at": timezone.now()},
            create_values={"source": assignment.source, "score": assignment.score},
        )
        topic_caches_invalidate_on_commit([stored.topic_id])
    for name in ("pk", "source", "score", "state", "decided_by", "decided_at", "updated_at"):
        setattr(assignment, name, getattr(stored, name))
    return stored


def assignment_add(*, paper: Paper, topic: Topic, user) -> Assignment:
    """Place ``paper`` in ``topic`` as a curator: source curator, accepted, decided by ``user``.

    An existing assignment for the pair (machine-made or decided) becomes this curator
    assignment; it is locked first, and an insert that races with tagging's insert of the pair
    turns that row into the curator's, so the curator's row always stands. Returns it.
    """
    with transaction.atomic():
        assignment = _assignment_store(
            paper_id=paper.pk,
            topic_id=topic.pk,
            pk=None,
            values={
                "source": Assignment.Source.CURATOR,
                "state": Assignment.State.ACCEPTED,
                "score": None,
                "decided_by": user,
                "decided_at": timezone.now(),
            },
            create_values={},
        )
        topic_caches_invalidate_on_commit([topic.pk])
    return assignment


# --- readers' reports --------------------------------------------------------------------

# Reports a reader may file in an hour (a hostile or careless account cannot flood the queue).
REPORTS_PER_HOUR = 20


class ReportLimitReached(Exception):
    """The reader filed :data:`REPORTS_PER_HOUR` reports in the last hour."""


def assignment_report(
    *, assignment: Assignment, user, note: str = ""
) -> tuple[AssignmentReport, bool]:
    """Record ``user``'s report that ``assignment`` is a wrong topic for its paper, with an
    optional ``note`` (surrounding whitespace dropped). The assignment then shows in the
    admin's review queue until a curator decides it (``AssignmentQuerySet.reported``).

    One report per reader and assignment: while theirs is open, reporting again changes
    nothing and returns ``(report, False)``; after a curator decided the assignment, it opens
    again (now, with the new note). Returns ``(report, True)`` when a report was opened.
    Raises ``ValueError`` naming the limit for a note over
    ``AssignmentReport.NOTE_MAX_LENGTH`` characters or with a NUL character (PostgreSQL
    cannot store it: was a 500), and :class:`ReportLimitReached` after
    :data:`REPORTS_PER_HOUR` reports in the last hour; nothing is written then.
    """
    note = note.strip()
    if "\x00" in note:
        raise ValueError("A note cannot contain NUL characters.")
    if len(note) > AssignmentReport.NOTE_MAX_LENGTH:
        raise ValueError(
            f"A note holds at most {AssignmentReport.NOTE_MAX_LENGTH} characters; this one "
            f"has {len(note)}."
        )
    now = timezone.now()
    with transaction.atomic():
        report = (
            AssignmentReport.objects.select_for_update()
            .filter(assignment=assignment, reporter=user)
            .first()
        )
        decided_at = assignment.decided_at
        if report is not None and (decided_at is None or report.created_at > decided_at):
            return report, False
        recent = AssignmentReport.objects.filter(
            reporter=user, created_at__gte=now - timedelta(hours=1)
        ).count()
        if recent >= REPORTS_PER_HOUR:
            raise ReportLimitReached(
                f"You have reported {recent} topics in the last hour; please wait a while."
            )
        if report is None:
            try:
                with transaction.atomic():
                    report = AssignmentReport.objects.create(
                        assignment=assignment, reporter=user, note=note, created_at=now
                    )
            except IntegrityError:  # a concurrent report of the same reader won
                report = AssignmentReport.objects.get(assignment=assignment, reporter=user)
                return report, False
        else:
            report.note, report.created_at = note, now
            report.save(update_fields=["note", "created_at"])
    return report, True


# --- many assignments ----------------------------------------------------------------------


def _assignment_ids(assignments: QuerySet[Assignment] | Iterable[Assignment | int]) -> list[int]:
    if isinstance(assignments, QuerySet):
        return list(assignments.order_by().values_list("pk", flat=True))
    return [item.pk if isinstance(item, Assignment) else int(item) for item in assignments]


def assignments_bulk_decide(
    *, assignments: QuerySet[Assignment] | Iterable[Assignment | int], state: str, user
) -> int:
    """Record one curator decision on many assignments: set ``state`` (``"accepted"`` or
    ``"rejected"``), ``decided_by`` ``user`` and ``decided_at`` now, keeping each one's source
    and score. ``assignments``: a queryset, assignments or their pks (unknown pks ignored).

    One UPDATE and one history row per assignment, a chunk of 1,000 at a time, in one
    transaction. Returns the number decided. Raises ``ValueError`` for another state
    (``"pending"`` is the classifier's, not a decision) and for ``user`` ``None``.
    """
    decisions = (Assignment.State.ACCEPTED, Assignment.State.REJECTED)
    if state not in decisions:
        raise ValueError(f"A curator decides {list(decisions)}, not {state!r}.")
    if user is None:
        raise ValueError("A curator decision needs the user who made it.")
    ids = sorted(set(_assignment_ids(assignments)))
    decided = 0
    with transaction.atomic():
        for start in range(0, len(ids), _CHUNK):
            rows = list(
                Assignment.objects.select_for_update()
                .filter(pk__in=ids[start : start + _CHUNK])
                .order_by("pk")
            )
            now = timezone.now()
            Assignment.objects.filter(pk__in=[row.pk for row in rows]).update(
                state=state, decided_by=user, decided_at=now, updated_at=now
            )
            for row in rows:
                row.state, row.decided_by, row.decided_at, row.updated_at = state, user, now, now
            history_bulk_record(rows, history_type="~", user=user, reason=f"marked {state}")
            topic_caches_invalidate_on_commit({row.topic_id for row in rows})
            decided += len(rows)
    return decided


@dataclass(frozen=True)
class AssignmentMoveResult:
    """What :func:`assignments_move` did: ``moved`` papers now accepted in the target (from
    ``rejected`` assignments left behind), ``unchanged`` assignments already in the target."""

    moved: int
    unchanged: int


def assignments_move(
    *, assignments: QuerySet[Assignment] | Iterable[Assignment | int], topic: Topic, user
) -> AssignmentMoveResult:
    """Move papers from the topics of ``assignments`` to ``topic``, as a curator decision.

    Each assignment stays where it is, rejected by ``user`` (so re-tagging cannot put the paper
    back there), and the paper is accepted in ``topic`` by ``user``: its assignment there, if
    any, keeps its source and score; otherwise a curator assignment is created. Assignments
    already in ``topic`` are left as they are. One history row per assignment written; one
    transaction. Raises ``ValueError`` when ``topic`` is inactive or ``user`` is ``None``.
    """
    if user is None:
        raise ValueError("A curator decision needs the user who made it.")
    ids = sorted(set(_assignment_ids(assignments)))
    with transaction.atomic():
        target = Topic.objects.get(pk=topic.pk)
        if not target.active:
            raise ValueError(f"Cannot move assignments to {target.name!r}: it is inactive.")
        reason = f"moved to {target.slug!r}"
        rows = list(Assignment.objects.select_for_update().filter(pk__in=ids).order_by("pk"))
        leaving = [row for row in rows if row.topic_id != target.pk]
        paper_ids = sorted({row.paper_id for row in leaving})
        now = timezone.now()
        for start in range(0, len(leaving), _CHUNK):
            chunk = leaving[start : start + _CHUNK]
            Assignment.objects.filter(pk__in=[row.pk for row in chunk]).update(
                state=Assignment.State.REJECTED, decided_by=user, decided_at=now, updated_at=now
            )
            for row in chunk:
                row.state, row.decided_by, row.decided_at, row.updated_at = (
                    Assignment.State.REJECTED,
                    user,
                    now,
                    now,
                )
            history_bulk_record(chunk, history_type="~", user=user, reason=reason)
        for start in range(0, len(paper_ids), _CHUNK):
            chunk_ids = paper_ids[start : start + _CHUNK]
            existing = set(
                Assignment.objects.filter(topic=target, paper_id__in=chunk_ids).values_list(
                    "paper_id", flat=True
                )
            )
            # Upsert: a pair the tagger inserted since the read above keeps its source and
            # score and takes the decision, like a pair that existed.
            Assignment.objects.bulk_create(
                [
                    Assignment(
                        paper_id=paper_id,
                        topic=target,
                        source=Assignment.Source.CURATOR,
                        state=Assignment.State.ACCEPTED,
                        decided_by=user,
                        decided_at=now,
                    )
                    for paper_id in chunk_ids
                ],
                update_conflicts=True,
                unique_fields=["paper", "topic"],
                update_fields=["state", "decided_by", "decided_at", "updated_at"],
            )
            written = list(Assignment.objects.filter(topic=target, paper_id__in=chunk_ids))
            for history_type, group in (
                ("+", [row for row in written if row.paper_id not in existing]),
                ("~", [row for row in written if row.paper_id in existing]),
            ):
                history_bulk_record(group, history_type=history_type, user=user, reason=reason)
        topic_caches_invalidate_on_commit({row.topic_id for row in leaving} | {target.pk})
    return AssignmentMoveResult(moved=len(paper_ids), unchanged=len(rows) - len(leaving))
