"""Reactions to other apps' signals."""

from django.db import transaction
from django.dispatch import receiver
from django.utils import timezone

from topics.signals import topics_merged

from .models import Follow


@receiver(topics_merged, dispatch_uid="follows.move_follows_of_merged_topic")
def move_follows_of_merged_topic(sender, source_id: int, target_id: int, **kwargs) -> int:
    """A merge moved topic ``source_id`` into ``target_id`` (pks; the signal fires after the
    merge commits): its followers now follow the target. A user who already followed the target
    keeps that one follow (the source's is deleted); the others' follows move, keeping when
    they began. Returns the number of follows moved. Running it twice changes nothing more.
    """
    with transaction.atomic():
        Follow.objects.filter(
            topic_id=source_id,
            user_id__in=Follow.objects.filter(topic_id=target_id).values("user_id"),
        ).delete()
        return Follow.objects.filter(topic_id=source_id).update(
            topic_id=target_id, updated_at=timezone.now()
        )
