"""Papers that stop counting: deleted records marked, and withdrawals announced.

A paper counts unless it is withdrawn or deleted (``papers.querysets.LIVE``). OAI-PMH reports a
record arXiv removed as a header with ``status="deleted"`` and no metadata (OAI-PMH 2.0,
section 2.5.1; arXiv keeps deleted records, ``deletedRecord`` persistent in its ``Identify``):
:func:`papers_mark_deleted` marks the stored paper (``Paper.deleted_at``) and keeps the row.
Whenever papers start or stop counting, ``papers.signals.papers_live_changed`` is sent after
commit so that what is counted about them (``topics``' stored counts, momentum, the index) is
counted again.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from functools import partial

from django.db import transaction
from django.utils import timezone

from papers.models import Paper
from papers.signals import papers_live_changed
from topicsite.signals import content_changed_on_commit

__all__ = ["papers_live_changed_on_commit", "papers_mark_deleted"]


def papers_live_changed_on_commit(paper_ids: Iterable[int]) -> None:
    """Once the current transaction commits, send ``papers_live_changed`` (``sender=Paper``,
    ``paper_ids``: the pks, sorted) for papers that started or stopped counting; nothing for
    none. Call inside the transaction that changed them."""
    paper_ids = sorted(set(paper_ids))
    if paper_ids:
        transaction.on_commit(partial(papers_live_changed.send, sender=Paper, paper_ids=paper_ids))


def papers_mark_deleted(*, arxiv_ids: Iterable[str], when: dt.datetime | None = None) -> list[int]:
    """Mark the stored papers among ``arxiv_ids`` (canonical arXiv identifiers, as
    ``papers.parsers.oai`` gives deleted headers) deleted: ``deleted_at`` = ``when`` (default
    now). Papers already marked keep their first mark; ids not stored are ignored (nothing is
    written for them: a deleted record of a paper never harvested is not a paper). The rows,
    with their versions, authors and assignments, stay.

    One UPDATE in one transaction (inside the caller's, when there is one), then after commit
    ``papers_live_changed`` for the papers newly marked and the page cache is told. Returns
    the pks newly marked, sorted.
    """
    arxiv_ids = sorted(set(arxiv_ids))
    if not arxiv_ids:
        return []
    when = when or timezone.now()
    with transaction.atomic():
        marked = sorted(
            Paper.objects.filter(arxiv_id__in=arxiv_ids, deleted_at__isnull=True)
            .order_by("arxiv_id")
            .select_for_update()
            .values_list("pk", flat=True)
        )
        if marked:
            Paper.objects.filter(pk__in=marked).update(deleted_at=when, updated_at=when)
            papers_live_changed_on_commit(marked)
            content_changed_on_commit()
    return marked
