"""API upkeep tasks (queue ``default``). Thin: call one function."""

from celery import shared_task


@shared_task(name="api.tasks.fold_facet_counts")
def fold_facet_counts() -> int:
    """Fold the facet-count deltas the triggers appended into the stored counts
    (``api.facet_counts.facet_counts_fold``), so they do not pile up where nobody asks for a
    whole-corpus facet; returns the delta rows folded. Runs every few minutes from
    django-celery-beat; safe beside another run or a facet read (one statement)."""
    from .facet_counts import facet_counts_fold

    return facet_counts_fold()
