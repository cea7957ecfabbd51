"""Tagging outside a transaction, the way the ``tag`` queue's worker and ``manage.py tag`` run
it: batches judged in the calling thread while a writer thread on its own connection writes the
batch before (``topics.tagging.engine._tag_pipelined``). Same assignments as one batch at a time,
nothing written twice, a failed write stops the run with nothing half-written, and the writer's
connection is closed afterwards. Real commits, so these tests use ``transaction=True``."""

import threading
import time

import pytest
from django.db import connection

from papers.tests.factories import PaperFactory
from topics.models import Assignment
from topics.tagging import engine
from topics.tagging.engine import papers_tag
from topics.tests.factories import TopicFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def papers(categories):
    """Six papers, three matching a phrase rule, all six in a category-only topic."""
    TopicFactory(name="RL", rule_query='"reinforcement learning"')
    hep = TopicFactory(name="HEP")
    hep.rule_categories.add(categories["hep-th"])
    return [
        PaperFactory(
            title=f"Paper {number}",
            abstract="Deep reinforcement learning." if number % 2 else "Flux vacua.",
            primary_category=categories["hep-th"],
        )
        for number in range(6)
    ]


def pairs():
    return set(Assignment.objects.values_list("paper__title", "topic__name"))


def connections_to_this_database(expected: int | None = None) -> int:
    """Client connections to the test database; with ``expected``, waits up to 5 s for the
    count to reach it (a server process leaves ``pg_stat_activity`` shortly after its client
    disconnects)."""
    deadline = time.monotonic() + 5
    while True:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            )
            count = cursor.fetchone()[0]
        if expected is None or count == expected or time.monotonic() > deadline:
            return count
        time.sleep(0.05)


@pytest.fixture
def writer_threads(monkeypatch):
    """The names of the threads that wrote batches."""
    names = []
    write = engine._written_in_thread

    def spy(judged, tagger):
        names.append(threading.current_thread().name)
        return write(judged, tagger)

    monkeypatch.setattr(engine, "_written_in_thread", spy)
    return names


def test_pipelined_batches_write_what_one_batch_at_a_time_writes(
    papers, monkeypatch, writer_threads
):
    paper_ids = [paper.pk for paper in papers]
    monkeypatch.setattr(engine, "TAG_BATCH_SIZE", 2)
    before = connections_to_this_database()

    written = papers_tag(paper_ids=paper_ids)

    assert len(writer_threads) == 3
    assert all(name.startswith("tag-write") for name in writer_threads)
    expected = {(f"Paper {n}", "HEP") for n in range(6)} | {(f"Paper {n}", "RL") for n in (1, 3, 5)}
    assert pairs() == expected
    assert written == len(expected)
    # Every write is in the history, once.
    assert Assignment.history.filter(history_type="+").count() == len(expected)
    # The writer thread's connection is closed with the run.
    assert connections_to_this_database(before) == before

    rows = list(Assignment.objects.order_by("pk").values())
    assert papers_tag(paper_ids=paper_ids) == 0
    assert list(Assignment.objects.order_by("pk").values()) == rows

    # One batch at a time (what a caller's transaction gets) gives the same assignments.
    Assignment.objects.all().delete()
    monkeypatch.setattr(engine, "TAG_BATCH_SIZE", 1000)
    assert papers_tag(paper_ids=paper_ids) == len(expected)
    assert pairs() == expected


def test_a_failed_write_stops_the_run_and_leaves_no_half_written_batch(
    papers, monkeypatch, writer_threads
):
    paper_ids = sorted(paper.pk for paper in papers)
    monkeypatch.setattr(engine, "TAG_BATCH_SIZE", 2)
    write = engine._plan_write_sql
    calls = []

    def failing_second(plan, batch_ids, tagger, now):
        calls.append(batch_ids)
        if len(calls) == 2:
            # Half of the batch's rows, then the failure: the transaction rolls back.
            Assignment.objects.create(
                paper_id=batch_ids[0], topic=engine.Topic.objects.get(name="HEP")
            )
            raise RuntimeError("database went away")
        return write(plan, batch_ids, tagger, now)

    monkeypatch.setattr(engine, "_plan_write_sql", failing_second)
    before = connections_to_this_database()

    with pytest.raises(RuntimeError, match="database went away"):
        papers_tag(paper_ids=paper_ids)

    # The first batch is written whole, the second not at all, the third never started.
    tagged = set(Assignment.objects.values_list("paper_id", flat=True))
    assert tagged == set(paper_ids[:2])
    assert len(calls) == 2
    assert connections_to_this_database(before) == before

    # Nothing stuck: the next run completes the papers.
    monkeypatch.setattr(engine, "_plan_write_sql", write)
    papers_tag(paper_ids=paper_ids)
    assert set(Assignment.objects.values_list("paper_id", flat=True)) == set(paper_ids)
