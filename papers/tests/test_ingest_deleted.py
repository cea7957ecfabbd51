"""Deleted records: a harvest marks the stored paper (``papers.ingest.deleted``), keeps the row,
writes nothing for a paper never stored, and announces papers that stop counting.

The deleted record is a minimally edited real page (see ``data/SOURCES.md``): hepcrawl's
``ListRecords`` of physics:hep-ex with record 1706.09418 turned into a deleted header.
"""

import dataclasses
import datetime as dt
import json

import pytest

from papers.harvest import harvest_run
from papers.ingest import papers_upsert
from papers.ingest.deleted import papers_mark_deleted
from papers.models import HarvestRun, Paper
from papers.parsers.oai import parse_oai_page
from papers.signals import papers_live_changed

from .conftest import TEST_DATA_DIR, table_state

pytestmark = pytest.mark.django_db

PAGE = TEST_DATA_DIR / "oai" / "hepcrawl" / "arxiv-physics-hep-ex.xml"
DELETED_PAGE = TEST_DATA_DIR / "oai" / "hepcrawl" / "arxiv-physics-hep-ex_1706.09418-deleted.xml"
# The request both pages answer (from their <request> element).
PARAMS = {
    "verb": "ListRecords",
    "metadataPrefix": "arXiv",
    "set": "physics:hep-ex",
    "from": "2017-12-14",
}


def replay(directory, page):
    """Harvest ``page`` as a recorded OAI answer (``harvest --recorded``); the summary."""
    directory.mkdir()
    (directory / "page.xml").write_bytes(page.read_bytes())
    entries = [{"kind": "oai", "file": "page.xml", "params": PARAMS}]
    (directory / "manifest.json").write_text(json.dumps({"entries": entries}))
    return harvest_run(kind="recorded", params={"directory": str(directory)})


@pytest.fixture
def live_changed():
    """Every ``papers_live_changed`` sent while the test runs, as lists of paper ids (sent on
    commit: run the code under ``django_capture_on_commit_callbacks(execute=True)``)."""
    sent = []

    def receiver(sender, paper_ids, **kwargs):
        sent.append(list(paper_ids))

    papers_live_changed.connect(receiver, dispatch_uid="test-live-changed")
    yield sent
    papers_live_changed.disconnect(dispatch_uid="test-live-changed")


def test_a_deleted_record_marks_the_stored_paper_and_keeps_it(
    tmp_path, live_changed, django_capture_on_commit_callbacks
):
    replay(tmp_path / "first", PAGE)
    paper = Paper.objects.get(arxiv_id="1706.09418")
    before = table_state()
    assert paper.deleted_at is None and Paper.objects.live().count() == 3

    with django_capture_on_commit_callbacks(execute=True):
        summary = replay(tmp_path / "second", DELETED_PAGE)

    paper.refresh_from_db()
    assert paper.deleted_at is not None
    assert (summary.deleted, summary.marked_deleted) == (1, 1)
    assert summary.as_dict()["marked_deleted"] == 1
    assert HarvestRun.objects.get(pk=summary.run_id).records_deleted == 1
    # The row and everything under it stays as it was; only the mark is new.
    after = table_state()
    assert after["authorships"] == before["authorships"]
    assert after["versions"] == before["versions"]
    assert paper.title == "R-Parity Violation at the LHC" and paper.author_count == 5
    # It no longer counts; the other two papers of the page do.
    assert sorted(Paper.objects.live().values_list("arxiv_id", flat=True)) == [
        "1706.05371",
        "1707.00874",
    ]
    assert live_changed == [[paper.pk]]


def test_a_deleted_record_of_a_paper_never_stored_writes_nothing(
    tmp_path, live_changed, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        summary = replay(tmp_path / "only", DELETED_PAGE)

    assert (summary.deleted, summary.marked_deleted) == (1, 0)
    assert sorted(Paper.objects.values_list("arxiv_id", flat=True)) == [
        "1706.05371",
        "1707.00874",
    ]
    assert live_changed == []


def test_marking_again_keeps_the_first_mark_and_announces_nothing(
    tmp_path, live_changed, django_capture_on_commit_callbacks
):
    replay(tmp_path / "first", PAGE)
    first = dt.datetime(2017, 12, 15, 6, 0, tzinfo=dt.UTC)

    with django_capture_on_commit_callbacks(execute=True):
        assert papers_mark_deleted(arxiv_ids=["1706.09418", "9999.99999"], when=first) == [
            Paper.objects.get(arxiv_id="1706.09418").pk
        ]
        assert papers_mark_deleted(arxiv_ids=["1706.09418"]) == []
        assert papers_mark_deleted(arxiv_ids=[]) == []

    assert Paper.objects.get(arxiv_id="1706.09418").deleted_at == first
    assert len(live_changed) == 1


def test_a_later_report_of_a_deleted_paper_does_not_bring_it_back(tmp_path):
    replay(tmp_path / "first", PAGE)
    replay(tmp_path / "second", DELETED_PAGE)
    record = next(
        r for r in harvest_records(PAGE) if r.arxiv_id == "1706.09418"
    )  # an older report of it, replayed (a mirror, a snapshot)

    papers_upsert(records=[record])

    assert Paper.objects.get(arxiv_id="1706.09418").deleted_at is not None


def test_a_withdrawal_stored_later_is_announced_once(
    live_changed, django_capture_on_commit_callbacks
):
    record = next(r for r in harvest_records(PAGE) if r.arxiv_id == "1707.00874")
    with django_capture_on_commit_callbacks(execute=True):
        papers_upsert(records=[record])
    assert live_changed == []

    with django_capture_on_commit_callbacks(execute=True):
        papers_upsert(records=[_withdrawn(record)])
        papers_upsert(records=[_withdrawn(record)])  # nothing new: no second announcement

    assert live_changed == [[Paper.objects.get(arxiv_id="1707.00874").pk]]
    assert not Paper.objects.live().exists()


def harvest_records(page):
    return parse_oai_page(page.read_bytes(), source=str(page)).records


def _withdrawn(record):
    """``record`` as its withdrawal arrives (a later version whose abstract is arXiv's notice):
    the paper is the same, the report newer."""
    return dataclasses.replace(
        record,
        withdrawn=True,
        abstract_raw="This paper has been withdrawn by the author.",
        abstract="This paper has been withdrawn by the author.",
        datestamp=(record.datestamp or dt.date(2017, 12, 14)) + dt.timedelta(days=30),
    )
