"""Reactions to other apps' signals."""

from django.dispatch import receiver

from topics.signals import topics_merged

from .services import follows_move


@receiver(topics_merged, dispatch_uid="follows.move_follows_of_merged_topic")
def move_follows_of_merged_topic(sender, source_id: int, target_id: int, **kwargs) -> int:
    """A merge moved topic ``source_id`` into ``target_id`` (the signal fires after the merge
    commits): its followers now follow the target. Returns the number of follows moved."""
    return follows_move(source_id=source_id, target_id=target_id)
