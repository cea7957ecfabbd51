"""Reactions of ``papers`` to its own signals (connected in ``PapersConfig.ready``)."""

from django.dispatch import receiver

from .signals import papers_stored


@receiver(papers_stored, dispatch_uid="papers.embed_stored_papers")
def embed_stored_papers(sender, paper_ids, **kwargs):
    """Queue embedding (``papers.tasks.embed_papers``, queue ``embed``) for the papers an
    ingestion batch stored (the signal fires after commit). With the broker down the papers
    stay stored and the failure is logged with the command that embeds them
    (``topicsite.publish.task_publish``)."""
    from topicsite.publish import task_publish

    from .tasks import embed_papers

    if paper_ids:
        ids = sorted(paper_ids)
        task_publish(embed_papers, ids, remedy="manage.py embed (embeds what is missing)")


@receiver(papers_stored, dispatch_uid="papers.detect_duplicates_of_stored_papers")
def detect_duplicates_of_stored_papers(sender, paper_ids, **kwargs) -> bool:
    """Queue ``papers.tasks.duplicates_detect`` for papers an ingestion batch stored (the
    signal fires after commit). With the broker down the papers stay stored and the failure is
    logged with the command that detects them. Returns whether a task was queued."""
    from topicsite.publish import task_publish

    from .tasks import duplicates_detect

    if not paper_ids:
        return False
    ids = sorted(paper_ids)
    return task_publish(
        duplicates_detect,
        ids,
        remedy=f"manage.py detect_duplicates --ids {','.join(map(str, ids))}",
    )
