"""Writes for follows: a user starts or stops following a topic."""

from django.db import transaction
from django.utils import timezone

from topics.models import Topic

from .models import Follow


@transaction.atomic
def follow_create(*, user, topic: Topic) -> Follow:
    """Make ``user`` follow ``topic`` and return the :class:`Follow`.

    Idempotent: following a topic already followed returns the existing row (the unique
    (user, topic) constraint settles concurrent requests).
    """
    follow, _ = Follow.objects.get_or_create(user=user, topic=topic)
    return follow


@transaction.atomic
def follow_delete(*, user, topic: Topic) -> None:
    """Make ``user`` stop following ``topic``; does nothing if they did not follow it."""
    Follow.objects.filter(user=user, topic=topic).delete()


@transaction.atomic
def follows_move(*, source_id: int, target_id: int) -> int:
    """Move every follow of topic ``source_id`` to topic ``target_id`` (pks).

    A user who already follows the target keeps that one follow (the source's is deleted); the
    others' follows move, keeping when they began. Returns the number of follows moved.
    Idempotent: a second call finds nothing left to move.
    """
    Follow.objects.filter(
        topic_id=source_id,
        user_id__in=Follow.objects.filter(topic_id=target_id).values("user_id"),
    ).delete()
    return Follow.objects.filter(topic_id=source_id).update(
        topic_id=target_id, updated_at=timezone.now()
    )
