"""Reactions to other apps' signals."""

from django.db.models.signals import pre_delete
from django.dispatch import receiver

from papers.models import Paper
from papers.signals import papers_embedded, papers_live_changed, papers_stored

from .caches import topic_caches_invalidate_on_commit
from .models import Assignment, Topic


@receiver(papers_stored, dispatch_uid="topics.tag_stored_papers")
def tag_stored_papers(sender, paper_ids, **kwargs):
    """Queue tagging for papers an ingestion batch stored (the signal fires after commit). With
    the broker down the papers stay stored and the failure is logged with the command that tags
    them (``topicsite.publish.task_publish``)."""
    from topicsite.publish import task_publish

    from .tasks import tag_papers

    if paper_ids:
        ids = sorted(paper_ids)
        task_publish(tag_papers, ids, remedy=f"manage.py tag --ids {','.join(map(str, ids))}")


@receiver(papers_embedded, dispatch_uid="topics.tag_embedded_papers")
def tag_embedded_papers(sender, paper_ids, **kwargs):
    """Queue tagging again for papers whose vectors were stored (the signal fires after
    commit): until then they were tagged by their words alone; now semantic similarity scores
    them too. Queued like :func:`tag_stored_papers`."""
    tag_stored_papers(sender, paper_ids)


@receiver(pre_delete, sender=Paper, dispatch_uid="topics.counts_after_paper_delete")
def counts_after_paper_delete(sender, instance, **kwargs):
    """A paper about to be deleted (its assignments go with it): once that commits, the stored
    counts and momentum of the topics it was in, and of their ancestors, are recounted as
    after any change of assignments. One query on the paper's assignments."""
    topic_ids = Assignment.objects.filter(paper=instance).values_list("topic_id", flat=True)
    topic_caches_invalidate_on_commit(list(topic_ids))


@receiver(papers_live_changed, dispatch_uid="topics.counts_after_papers_live_changed")
def counts_after_papers_live_changed(sender, paper_ids, **kwargs):
    """Papers were withdrawn or deleted, or stopped being so (the signal fires after commit;
    triggers have already set their assignments' ``paper_live``): the stored counts and
    momentum of the topics they are in, and of their ancestors, are recounted, and the topics
    index rebuilt. One query on their assignments, then the invalidation's two."""
    from .caches import topic_caches_invalidate

    topic_ids = set(
        Assignment.objects.filter(paper_id__in=paper_ids).values_list("topic_id", flat=True)
    )
    if topic_ids:
        topic_caches_invalidate(topic_ids)


@receiver(pre_delete, sender=Topic, dispatch_uid="topics.counts_after_topic_delete")
def counts_after_topic_delete(sender, instance, **kwargs):
    """A topic about to be deleted (the admin's delete, or a cascade from its parent): once
    that commits, the stored counts and momentum of its ancestors are recounted, as after any
    change of assignments, since its papers no longer count for them. No query: the ancestors
    are in the topic's path."""
    ancestors = [int(pk) for pk in instance.path.split("/") if pk and int(pk) != instance.pk]
    topic_caches_invalidate_on_commit(ancestors)
