"""Saved-search tasks (queue ``default``). Thin: take ids, call one service."""

from celery import shared_task


@shared_task(name="follows.tasks.saved_search_backfill")
def saved_search_backfill(follow_id: int) -> int:
    """Match the new saved search ``follow_id`` (pk) against recent papers
    (``follows.services.search_matches_backfill``); returns the number of matches found, 0 if
    the follow is gone. Safe to run twice."""
    from .models import Follow
    from .services import search_matches_backfill

    follow = Follow.objects.filter(pk=follow_id, kind=Follow.Kind.SEARCH).first()
    if follow is None:
        return 0
    return search_matches_backfill(follow=follow)


@shared_task(name="follows.tasks.saved_searches_match")
def saved_searches_match(paper_ids: list[int]) -> int:
    """Match every saved search against the papers ``paper_ids`` (pks; ones since deleted are
    ignored) through ``follows.services.search_matches_create``; returns the number of matches
    found. Safe to run twice: the second run writes nothing."""
    from .services import search_matches_create

    return search_matches_create(paper_ids=paper_ids)
