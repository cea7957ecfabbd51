"""Tagging tasks (queue ``tag``). Thin: take ids, call one service."""

from celery import shared_task


@shared_task(name="topics.tasks.tag_papers")
def tag_papers(paper_ids: list[int]) -> int:
    """Apply every active topic's rule to the papers ``paper_ids`` (pks; ones since deleted are
    ignored) through ``topics.services.papers_tag``; returns the number of assignments created,
    changed or removed. Safe to run twice: the second run writes nothing."""
    from .services import papers_tag

    return papers_tag(paper_ids=paper_ids)
