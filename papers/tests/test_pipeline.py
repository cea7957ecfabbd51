"""The whole path through real Celery workers consuming from Redis:

``papers.tasks.harvest`` (queue ``harvest``) -> ``papers_upsert`` -> on commit ``papers_stored``
-> ``topics.receivers`` -> ``topics.tasks.tag_papers`` (queue ``tag``) -> rule assignments;

and a harvest whose worker is killed with SIGKILL in the middle of it, in a real
``celery worker`` process (the whole worker, or only the pool process running the task): the
run resumes from its checkpoint and the database ends equal to an uninterrupted harvest.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from celery.contrib.testing.worker import start_worker
from celery.signals import after_task_publish, task_postrun
from django.conf import settings as django_settings
from django.core.cache import cache
from django.core.management import call_command
from django.db import connections

from papers.categories import category_sync
from papers.harvest import harvest_run
from papers.models import Category, HarvestRun, Paper
from papers.sources.transports import RequestLimiter, redis_client
from papers.tasks import harvest
from topics.models import Assignment
from topics.services import topic_create
from topicsite.celery import app

from .conftest import RECORDED_DIR, RECORDED_DISTINCT_IDS, RECORDED_RECORDS, table_state
from .httpserver import LocalHttpServer, Reply
from .test_harvest import PAGES, TOKENS, content_state, oai_list, page_ids, wipe

pytestmark = [pytest.mark.pipeline, pytest.mark.django_db(transaction=True)]

DEADLINE_SECONDS = 180
QUEUES = ["harvest", "tag", "default"]


class TaskLog:
    """Tasks published and finished while the worker runs (filled from Celery's signals)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.published: list[str] = []
        self.names: dict[str, str] = {}
        self.finished: dict[str, tuple[str, object, str]] = {}

    def on_publish(self, sender=None, headers=None, routing_key=None, **kwargs):
        # Only tasks for this worker's queues: embedding goes to the ``embed`` queue, which
        # a worker of its own (an accelerator host) takes; these tests are not about it.
        if routing_key not in QUEUES:
            return
        with self.lock:
            task_id = (headers or {}).get("id")
            self.published.append(task_id)
            self.names[task_id] = sender

    def last_published(self, name: str) -> str:
        """The id of the newest published task named ``name``."""
        with self.lock:
            return [task_id for task_id in self.published if self.names[task_id] == name][-1]

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
    """A real worker thread consuming ``harvest``, ``tag`` and ``default`` from Redis.

    Starting a worker sets up Celery's logging, which raises the root logger's level; it is put
    back afterwards so later tests' ``caplog`` still sees INFO records."""
    root = logging.getLogger()
    root_level, root_handlers = root.level, list(root.handlers)
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
        root.setLevel(root_level)
        root.handlers[:] = root_handlers


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


# --- a worker killed in the middle of a harvest ---------------------------------------------

WORKER_START_SECONDS = 90
# Where kombu's Redis transport keeps messages delivered and not yet acknowledged.
KOMBU_UNACKED_KEYS = ("unacked", "unacked_index", "unacked_mutex")


class WorkerProcess:
    """``celery -A topicsite worker`` in its own process group, on the test database."""

    def __init__(self, log_path: Path, env: dict[str, str], name: str):
        self.log_path = log_path
        self.log = log_path.open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "topicsite",
                "worker",
                "--queues",
                "harvest",
                "--pool",
                "prefork",
                "--concurrency",
                "1",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "--hostname",
                f"{name}@%h",
                "--loglevel",
                "INFO",
            ],
            cwd=django_settings.BASE_DIR,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def pool_children(self) -> list[int]:
        """Pids of the worker's pool processes (children of the main process)."""
        children = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # The command name may hold spaces; the parent pid follows the closing bracket.
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            if parent == self.process.pid:
                children.append(int(entry.name))
        return children

    def kill_all(self) -> None:
        """SIGKILL the whole worker, main process and pool, as a crashed host would."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            # Cold shutdown: the worker is idle by now, nothing to finish.
            os.killpg(self.process.pid, signal.SIGQUIT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)
        self.log.close()

    def tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]


@pytest.fixture
def worker_env(settings, tmp_path):
    """What a worker process needs to share the test's database, Redis and fast settings."""
    database = settings.DATABASES["default"]
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "topicsite.settings.test",
        "DATABASE_URL": (
            f"postgres://{database['USER']}@{database['HOST']}:{database['PORT']}/"
            f"{database['NAME']}"
        ),
        "REDIS_URL": settings.REDIS_URL,
        "ARXIV_REQUEST_INTERVAL_MS": "5",
        "ARXIV_HTTP_RETRIES": "1",
        "ARXIV_HTTP_BACKOFF_SECONDS": "0",
        "ARXIV_OAI_SETS": "cs",
    }
    return env


@pytest.fixture
def broker(settings):
    """Tasks sent from the test go to Redis for the worker processes (not run in-process)."""
    saved = {key: app.conf[key] for key in ("task_always_eager", "broker_url")}
    app.conf.task_always_eager = False
    app.conf.broker_url = settings.REDIS_URL
    client = redis_client(settings.REDIS_URL)
    app.control.purge()
    client.delete(RequestLimiter.KEY, *KOMBU_UNACKED_KEYS)
    cache.delete("papers:harvest-lock:oai")
    yield
    app.control.purge()
    # A killed worker's unacknowledged message must not be restored into a later test.
    client.delete(RequestLimiter.KEY, *KOMBU_UNACKED_KEYS)
    cache.delete("papers:harvest-lock:oai")
    app.conf.update(saved)


@pytest.fixture
def workers(tmp_path, worker_env):
    started: list[WorkerProcess] = []

    def start(name: str) -> WorkerProcess:
        worker = WorkerProcess(tmp_path / f"{name}.log", worker_env, name)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()
    connections.close_all()


def wait_until(condition, what: str, worker: WorkerProcess, seconds: float = WORKER_START_SECONDS):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {seconds} s. Worker log:\n{worker.tail()}")


def page_two_held():
    """A handler serving the list, but holding the first request for page 2 until released."""
    normal = oai_list()
    requested, release = threading.Event(), threading.Event()

    def handler(request):
        if request.query.get("resumptionToken") == TOKENS[0] and not requested.is_set():
            return Reply(body=PAGES[1], on_request=requested, hold=release)
        return normal(request)

    return handler, requested, release


@pytest.fixture
def uninterrupted_state(settings, worker_env):
    """The database an uninterrupted harvest of the list gives (then emptied again), harvested
    here with the workers' settings."""
    settings.ARXIV_REQUEST_INTERVAL_MS = int(worker_env["ARXIV_REQUEST_INTERVAL_MS"])
    with LocalHttpServer(oai_list()) as server:
        harvest_run(kind="oai", params={"base_url": server.url, "from": "2008-01-25"})
    state = content_state()
    wipe()
    return state


def test_a_killed_worker_s_harvest_resumes_on_a_new_worker(
    broker, workers, uninterrupted_state, capsys
):
    handler, page_two_requested, release = page_two_held()
    with LocalHttpServer(handler) as server:
        params = {"base_url": server.url, "from": "2008-01-25"}
        first = workers("first")
        harvest.apply_async(args=["oai", params])
        wait_until(page_two_requested.is_set, "the worker asks for page 2", first)

        # Mid-harvest: page 1 and its checkpoint are committed, page 2 is on its way.
        run = HarvestRun.objects.get()
        assert (run.status, run.pages_done, run.resumption_token) == ("running", 1, TOKENS[0])
        assert set(Paper.objects.values_list("arxiv_id", flat=True)) == page_ids(1)
        first.kill_all()
        release.set()
        requests_before = len(server.requests)
        # A dead worker leaves its run running and its lock held: only that run may go on.
        assert HarvestRun.objects.get().status == "running"
        assert cache.get("papers:harvest-lock:oai") == f"run #{run.pk}"

        second = workers("second")
        call_command("harvest", "--resume", str(run.pk))
        assert "Queued harvest task" in capsys.readouterr().out
        wait_until(
            lambda: HarvestRun.objects.get().status == "succeeded", "the resumed run", second
        )

        run.refresh_from_db()
        assert (run.pages_done, run.attempt) == (3, 2)
        # Exactly where it stopped: page 2 and 3 asked for once more, nothing stored twice.
        assert server.queries()[requests_before:] == [
            {"verb": "ListRecords", "resumptionToken": TOKENS[0]},
            {"verb": "ListRecords", "resumptionToken": TOKENS[1]},
        ]
        assert (run.records_created, run.records_updated, run.records_unchanged) == (120, 0, 0)
        assert content_state() == uninterrupted_state


def test_a_killed_pool_process_s_task_is_delivered_again_and_resumes(
    broker, workers, uninterrupted_state
):
    handler, page_two_requested, release = page_two_held()
    with LocalHttpServer(handler) as server:
        params = {"base_url": server.url, "from": "2008-01-25"}
        worker = workers("pool")
        result = harvest.apply_async(args=["oai", params])
        wait_until(page_two_requested.is_set, "the worker asks for page 2", worker)
        (child,) = worker.pool_children()

        os.kill(child, signal.SIGKILL)
        release.set()

        # acks_late + reject_on_worker_lost: the message goes back on the queue, a new pool
        # process gets the same task (same id), which finds its run and resumes it.
        wait_until(
            lambda: HarvestRun.objects.get().status == "succeeded", "the redelivered task", worker
        )
        run = HarvestRun.objects.get()
        assert run.task_id == result.id
        assert (run.pages_done, run.attempt) == (3, 2)
        assert (run.records_created, run.records_updated, run.records_unchanged) == (120, 0, 0)
        assert content_state() == uninterrupted_state
        assert "WorkerLostError" in worker.tail() or "SIGKILL" in worker.tail()
