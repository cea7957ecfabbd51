"""Reactions to other apps' signals."""

from django.dispatch import receiver

from papers.signals import papers_stored


@receiver(papers_stored, dispatch_uid="topics.tag_stored_papers")
def tag_stored_papers(sender, paper_ids, **kwargs):
    """Queue tagging for papers an ingestion batch stored (the signal fires after commit)."""
    from .tasks import tag_papers

    if paper_ids:
        tag_papers.delay(list(paper_ids))
