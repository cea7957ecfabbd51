"""Tagging tasks (queue ``tag``). Thin: take ids, call one service."""

from celery import shared_task


@shared_task(name="topics.tasks.tag_papers")
def tag_papers(paper_ids: list[int]) -> int:
    """Apply every active topic's rule to the given papers; returns assignments written."""
    from .services import papers_tag

    return papers_tag(paper_ids=paper_ids)
