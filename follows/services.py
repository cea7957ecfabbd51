"""Writes for follows: a user starts or stops following a topic."""

from django.db import transaction

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
