"""The whole path through a real Celery worker consuming from Redis:

``papers.tasks.harvest`` (queue ``harvest``) -> ``papers_upsert`` -> on commit ``papers_stored``
-> ``topics.receivers`` -> ``topics.tasks.tag_papers`` (queue ``tag``) -> rule assignments.
"""

from __future__ import annotations

import threading
import time

import pytest
from celery.contrib.testing.worker import start_worker
from celery.signals import after_task_publish, task_postrun
from django.db import connections

from papers.models import Category, Paper
from papers.services import category_sync
from papers.tasks import harvest
from topics.models import Assignment
from topics.services import topic_create
from topicsite.celery import app

from .conftest import RECORDED_DIR, RECORDED_DISTINCT_IDS, RECORDED_RECORDS, table_state

pytestmark = [pytest.mark.pipeline, pytest.mark.django_db(transaction=True)]

DEADLINE_SECONDS = 180
QUEUES = ["harvest", "tag", "default"]


class TaskLog:
    """Tasks published and finished while the worker runs (filled from Celery's signals)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.published: list[str] = []
        self.finished: dict[str, tuple[str, object, str]] = {}

    def on_publish(self, sender=None, headers=None, **kwargs):
        with self.lock:
            self.published.append((headers or {}).get("id"))

    def on_postrun(self, sender=None, task_id=None, task=None, retval=None, state=None, **kwargs):
        with self.lock:
            self.finished[task_id] = (task.name, retval, state)
        # The worker thread's own database connection must not outlive the test database.
        if threading.current_thread() is not threading.main_thread():
            connections.close_all()

    def wait_for(self, task_id: str, what: str):
        """Block until ``task_id`` and every task published so far have finished."""
        deadline = time.monotonic() + DEADLINE_SECONDS
        while time.monotonic() < deadline:
            with self.lock:
                done = task_id in self.finished and all(
                    published in self.finished for published in self.published
                )
            if done:
                return self.finished[task_id]
            time.sleep(0.2)
        raise AssertionError(f"{what}: not finished within {DEADLINE_SECONDS} s")


@pytest.fixture
def live_worker(settings):
    """A real worker thread consuming ``harvest``, ``tag`` and ``default`` from Redis."""
    saved = {key: app.conf[key] for key in ("task_always_eager", "broker_url")}
    app.conf.task_always_eager = False
    app.conf.broker_url = settings.REDIS_URL
    app.control.purge()
    log = TaskLog()
    after_task_publish.connect(log.on_publish, weak=False)
    task_postrun.connect(log.on_postrun, weak=False)
    try:
        with start_worker(
            app,
            pool="solo",
            perform_ping_check=False,
            queues=QUEUES,
            shutdown_timeout=60,
        ):
            yield log
    finally:
        after_task_publish.disconnect(log.on_publish)
        task_postrun.disconnect(log.on_postrun)
        app.conf.update(saved)


def assignment_state():
    return sorted(
        Assignment.objects.values_list(
            "paper__arxiv_id", "topic__slug", "source", "state", "score", "updated_at"
        )
    )


def test_harvest_and_tagging_through_a_real_worker(live_worker):
    category_sync()
    hep_th = topic_create(
        name="High Energy Physics - Theory",
        slug="hep-th",
        rule_categories=[Category.objects.get(code="hep-th")],
    )

    first = harvest.apply_async(args=["recorded", {"directory": str(RECORDED_DIR)}])
    assert first.id in live_worker.published
    name, summary, state = live_worker.wait_for(first.id, "first harvest")

    assert (name, state) == ("papers.tasks.harvest", "SUCCESS")
    assert (summary["created"], summary["error_count"]) == (RECORDED_DISTINCT_IDS, 0)
    assert Paper.objects.count() == RECORDED_DISTINCT_IDS
    # The harvest queued tag_papers once per stored batch, all run by the worker.
    tag_runs = [v for v in live_worker.finished.values() if v[0] == "topics.tasks.tag_papers"]
    assert tag_runs and all(state == "SUCCESS" for _, _, state in tag_runs)

    expected_hep_th = set(Paper.objects.in_category("hep-th").values_list("pk", flat=True))
    assert len(expected_hep_th) > 50
    assert set(hep_th.assignments.values_list("paper_id", flat=True)) == expected_hep_th
    assert set(hep_th.assignments.values_list("source", "state")) == {("rule", "accepted")}

    papers_before, assignments_before = table_state(), assignment_state()
    published_before = len(live_worker.published)

    second = harvest.apply_async(args=["recorded", {"directory": str(RECORDED_DIR)}])
    _, summary, state = live_worker.wait_for(second.id, "second harvest")

    assert state == "SUCCESS"
    assert (summary["created"], summary["updated"], summary["unchanged"]) == (
        0,
        0,
        RECORDED_RECORDS,
    )
    # Nothing changed, so nothing was announced and no tagging was queued.
    assert live_worker.published[published_before:] == [second.id]
    assert table_state() == papers_before
    assert assignment_state() == assignments_before
