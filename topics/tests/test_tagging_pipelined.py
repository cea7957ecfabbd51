"""Tagging outside a transaction, the way the ``tag`` queue's worker and ``manage.py tag`` run
it: batches judged in the calling thread while a reader thread reads the next batch and a
writer thread writes the batch before, each on its own connection
(``topics.tagging.engine._tag_pipelined``). Same assignments as one batch at a time, nothing
written twice, a failed read or write stops the run with nothing half-written, and the
threads' connections are closed afterwards. Real commits, so these tests use
``transaction=True``."""

import gc
import sys
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


@pytest.fixture
def reader_threads(monkeypatch):
    """The names of the threads that read batches, and the batches they read."""
    reads = []
    read = engine._read_in_thread

    def spy(paper_ids):
        reads.append((threading.current_thread().name, list(paper_ids)))
        return read(paper_ids)

    monkeypatch.setattr(engine, "_read_in_thread", spy)
    return reads


def test_pipelined_batches_write_what_one_batch_at_a_time_writes(
    papers, monkeypatch, writer_threads, reader_threads
):
    paper_ids = [paper.pk for paper in papers]
    monkeypatch.setattr(engine, "TAG_BATCH_SIZE", 2)
    before = connections_to_this_database()

    written = papers_tag(paper_ids=paper_ids)

    assert len(writer_threads) == 3
    assert all(name.startswith("tag-write") for name in writer_threads)
    # Every batch read once, in order, on the reader thread.
    assert [batch for _, batch in reader_threads] == [
        sorted(paper_ids)[i : i + 2] for i in (0, 2, 4)
    ]
    assert all(name.startswith("tag-read") for name, _ in reader_threads)
    expected = {(f"Paper {n}", "HEP") for n in range(6)} | {(f"Paper {n}", "RL") for n in (1, 3, 5)}
    assert pairs() == expected
    assert written == len(expected)
    # Every write is in the history, once.
    assert Assignment.history.filter(history_type="+").count() == len(expected)
    # The writer thread's connection is closed with the run.
    # The reader's and the writer's connections are closed with the run.
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


def test_a_failed_read_stops_the_run_after_the_batches_before_it(papers, monkeypatch):
    paper_ids = sorted(paper.pk for paper in papers)
    monkeypatch.setattr(engine, "TAG_BATCH_SIZE", 2)
    read = engine._read_in_thread

    def failing_third(batch_ids):
        if batch_ids == paper_ids[4:]:
            raise RuntimeError("connection lost while reading")
        return read(batch_ids)

    monkeypatch.setattr(engine, "_read_in_thread", failing_third)
    before = connections_to_this_database()

    with pytest.raises(RuntimeError, match="connection lost while reading"):
        papers_tag(paper_ids=paper_ids)

    # The batches read before the failure are written whole; the failed one not at all.
    tagged = set(Assignment.objects.values_list("paper_id", flat=True))
    assert tagged <= set(paper_ids[:4])
    assert set(paper_ids[:2]) <= tagged
    assert connections_to_this_database(before) == before


def test_the_run_shortens_the_switch_interval_and_restores_it(papers, monkeypatch):
    """The reader and writer threads wait for the GIL after every round trip; the run keeps
    the switch interval short while they work and gives the process its own back after,
    also when a stage fails; likewise the paused garbage collector."""
    paper_ids = sorted(paper.pk for paper in papers)
    monkeypatch.setattr(engine, "TAG_BATCH_SIZE", 2)
    seen = []
    judge = engine._batch_judged

    def spy(read, tagger):
        seen.append((sys.getswitchinterval(), gc.isenabled()))
        return judge(read, tagger)

    monkeypatch.setattr(engine, "_batch_judged", spy)
    before = sys.getswitchinterval()
    assert before > engine.TAG_SWITCH_INTERVAL

    papers_tag(paper_ids=paper_ids)

    # Automatic garbage collection is paused too (the run collects between batches).
    assert seen == [(pytest.approx(engine.TAG_SWITCH_INTERVAL), False)] * 3
    assert sys.getswitchinterval() == before
    assert gc.isenabled() and not gc.get_freeze_count()

    def failing(read, tagger):
        raise RuntimeError("judging failed")

    monkeypatch.setattr(engine, "_batch_judged", failing)
    with pytest.raises(RuntimeError, match="judging failed"):
        papers_tag(paper_ids=paper_ids)
    assert sys.getswitchinterval() == before
    assert gc.isenabled() and not gc.get_freeze_count()
