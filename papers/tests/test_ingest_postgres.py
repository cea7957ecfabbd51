"""The bulk path's PostgreSQL COPY writer on its own: the race it guards against."""

from __future__ import annotations

import dataclasses

from papers.ingest import papers_upsert
from papers.ingest.checks import record_prepare
from papers.ingest.postgres import plans_write_copy
from papers.ingest.write import PaperPlan
from papers.models import Paper, PaperVersion
from papers.parsers.snapshot import iter_snapshot

from .conftest import SNAPSHOT_HEAD


def test_a_paper_stored_by_another_worker_meanwhile_is_upserted(categories):
    """The race the COPY path guards against: a paper absent when the batch read the table
    and present when it writes. The batch's report then overwrites it, as papers_upsert's
    ``ON CONFLICT`` does."""
    with SNAPSHOT_HEAD.open("rb") as stream:
        records = list(iter_snapshot(stream, source="s"))[:3]
    papers_upsert(records=[dataclasses.replace(records[1], title="Stored meanwhile")])
    author_parts: dict = {}
    plans = [
        PaperPlan(state=record_prepare(record, source="s", author_parts=author_parts), old=None)
        for record in records
    ]

    plans_write_copy(plans, author_parts)

    assert Paper.objects.count() == 3
    stored = Paper.objects.get(arxiv_id=records[1].arxiv_id)
    assert stored.title == records[1].title and stored.pk == plans[1].pk
    assert list(stored.authorships.order_by("position").values_list("author__name", flat=True)) == [
        author.name for author in records[1].authors
    ]
    assert PaperVersion.objects.filter(paper=stored).count() == len(records[1].versions)
