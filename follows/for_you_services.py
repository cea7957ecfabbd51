"""Writes for "For you": the reader's "Not interested" feedback on a pick."""

from django.db import transaction

from papers.models import Paper

from .models import ForYouFeedback


@transaction.atomic
def for_you_feedback_create(*, user, paper: Paper) -> ForYouFeedback:
    """Record that ``user`` is not interested in ``paper`` (hidden from their picks from now
    on, and a negative example for their ranking); returns the row. Idempotent: pressing it
    twice keeps one row with the first time."""
    feedback, _ = ForYouFeedback.objects.get_or_create(user=user, paper=paper)
    return feedback
