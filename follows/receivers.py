"""Reactions to other apps' signals."""

from django.dispatch import receiver

from papers.signals import authors_merged, papers_stored
from topics.signals import topics_merged

from .models import Follow
from .services import follows_author_move, follows_move


@receiver(authors_merged, dispatch_uid="follows.move_follows_of_merged_authors")
def move_follows_of_merged_authors(sender, source_ids: list[int], target_id: int, **kwargs) -> int:
    """A curator merged the authors ``source_ids`` into ``target_id`` (inside the merge's
    transaction): their followers now follow the survivor. Returns the number moved."""
    return follows_author_move(source_ids=source_ids, target_id=target_id)


@receiver(topics_merged, dispatch_uid="follows.move_follows_of_merged_topic")
def move_follows_of_merged_topic(sender, source_id: int, target_id: int, **kwargs) -> int:
    """A merge moved topic ``source_id`` into ``target_id`` (the signal fires after the merge
    commits): its followers now follow the target. Returns the number of follows moved."""
    return follows_move(source_id=source_id, target_id=target_id)


@receiver(papers_stored, dispatch_uid="follows.match_saved_searches")
def match_saved_searches(sender, paper_ids, **kwargs) -> bool:
    """Queue ``follows.tasks.saved_searches_match`` for papers an ingestion batch stored (the
    signal fires after commit); nothing is queued while nobody has a saved search. Returns
    whether a task was queued."""
    from topicsite.publish import task_publish

    from .tasks import saved_searches_match

    if not paper_ids or not Follow.objects.filter(kind=Follow.Kind.SEARCH).exists():
        return False
    # With the broker down: logged with the command that queues it again, the papers stay.
    return task_publish(saved_searches_match, list(paper_ids))
