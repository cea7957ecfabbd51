"""Reactions to other apps' signals."""

from django.dispatch import receiver

from papers.signals import papers_stored


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
