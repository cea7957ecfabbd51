"""History rows for bulk writes: django-simple-history records a row when a model instance is
saved or deleted one by one; writes made with a bulk UPDATE or INSERT record theirs here."""

from __future__ import annotations

from collections.abc import Sequence

from django.utils import timezone

__all__ = ["HISTORY_REASON_LENGTH", "history_bulk_record"]

# simple-history's history_change_reason column holds this many characters.
HISTORY_REASON_LENGTH = 100
# History rows per INSERT.
_BATCH_SIZE = 1000


def history_bulk_record(rows: Sequence, *, history_type: str, user, reason: str) -> None:
    """One history row per row in ``rows`` (``"+"`` created, ``"~"`` changed), as the rows are
    in memory. For writes made with a bulk UPDATE or INSERT, which never reach the save signal
    django-simple-history listens to."""
    if not rows:
        return
    history_model = type(rows[0]).history.model
    now = timezone.now()
    history_model.objects.bulk_create(
        [
            history_model(
                history_date=now,
                history_user=user,
                history_change_reason=reason[:HISTORY_REASON_LENGTH],
                history_type=history_type,
                **{
                    field.attname: getattr(row, field.attname)
                    for field in history_model.tracked_fields
                },
            )
            for row in rows
        ],
        batch_size=_BATCH_SIZE,
    )
