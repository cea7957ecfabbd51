"""What an adversarial tester found on the topics side: curator decisions racing with re-tagging
and re-imports, concurrent reference imports, and admin actions without their permission.

The races run for real: a second thread on its own PostgreSQL connection acts at the exact
point named (a ``pre_delete`` receiver, a statement about to run), and the first waits until
that thread has finished or is waiting for a lock the first holds (``pg_locks``), never for a
fixed time.
"""

import copy
import json
import queue
import threading
import time
from io import StringIO
from pathlib import Path

import pytest
from celery.signals import task_prerun
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.db import connection
from django.db.models.signals import pre_delete
from django.urls import reverse

from papers.categories import category_sync
from papers.tests.factories import CategoryFactory, PaperFactory
from topics.assignments import assignment_add, assignment_decide
from topics.importers.reference import reference_page_import
from topics.models import Assignment, Topic
from topics.tagging.engine import papers_tag
from topics.tests.factories import AssignmentFactory, TopicFactory, UserFactory

REFERENCE = json.loads(
    (Path(__file__).resolve().parents[1] / "data" / "llm-agent-training.json").read_text("utf-8")
)
ACCEPTED = Assignment.State.ACCEPTED
REJECTED = Assignment.State.REJECTED
# How long a concurrent thread may take to finish or block before the test gives up (a hang
# guard only: the tests never depend on it).
HANG_GUARD_SECONDS = 60


def run_concurrently(work) -> threading.Thread:
    """Run ``work()`` in another thread on its own database connection and return once that
    thread has finished or is waiting for a lock (``pg_locks``, not granted). Errors raised by
    ``work`` are kept in ``thread.errors``; join the thread before reading them."""
    pids: queue.Queue[int] = queue.Queue()
    errors: list[BaseException] = []

    def target():
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                pids.put(cursor.fetchone()[0])
            work()
        except BaseException as error:  # noqa: BLE001 - reported to the test through errors
            errors.append(error)
            pids.put(-1)
        finally:
            connection.close()

    thread = threading.Thread(target=target, daemon=True)
    thread.errors = errors
    thread.start()
    pid = pids.get(timeout=HANG_GUARD_SECONDS)
    deadline = time.monotonic() + HANG_GUARD_SECONDS
    while thread.is_alive():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = %s AND NOT granted)", [pid]
            )
            if cursor.fetchone()[0]:
                break
        assert time.monotonic() < deadline, "the concurrent thread neither finished nor blocked"
        time.sleep(0.005)
    return thread


def finish(thread: threading.Thread) -> None:
    thread.join(HANG_GUARD_SECONDS)
    assert not thread.is_alive()
    assert thread.errors == []


def decide_in_another_connection(pk: int, state: str, user) -> None:
    assignment_decide(assignment=Assignment.objects.get(pk=pk), state=state, user=user)


# --- 1. a reference re-import removing an import assignment a curator decides meanwhile ------


@pytest.mark.django_db(transaction=True)
def test_a_decision_made_while_a_reimport_removes_the_assignment_is_kept():
    category_sync()
    reference_page_import(data=REFERENCE)
    item = REFERENCE["papers"][0]
    dropped_topic = item["topics"][-1]
    doomed = Assignment.objects.get(paper__title=item["title"], topic__name=dropped_topic)
    curator = UserFactory()
    changed = copy.deepcopy(REFERENCE)
    changed["papers"][0]["topics"].remove(dropped_topic)
    threads = []

    def curator_accepts_it_now(sender, instance, **kwargs):
        if instance.pk == doomed.pk and not threads:
            threads.append(
                run_concurrently(lambda: decide_in_another_connection(doomed.pk, ACCEPTED, curator))
            )

    pre_delete.connect(curator_accepts_it_now, sender=Assignment, dispatch_uid="hardening")
    try:
        reference_page_import(data=changed)
    finally:
        pre_delete.disconnect(sender=Assignment, dispatch_uid="hardening")
    assert threads, "the re-import did not remove the assignment"
    finish(threads[0])

    kept = Assignment.objects.get(paper_id=doomed.paper_id, topic_id=doomed.topic_id)
    assert (kept.source, kept.state, kept.score, kept.decided_by) == (
        Assignment.Source.IMPORT,
        ACCEPTED,
        None,
        curator,
    )
    assert kept.history.latest("history_id").decided_by_id == curator.pk
    # A third import leaves the decision alone.
    reference_page_import(data=changed)
    assert Assignment.objects.get(pk=kept.pk).decided_by == curator


@pytest.mark.django_db
def test_a_reimport_never_removes_a_decision_whose_curator_account_is_gone():
    category_sync()
    reference_page_import(data=REFERENCE)
    item = REFERENCE["papers"][0]
    decided = Assignment.objects.get(paper__title=item["title"], topic__name=item["topics"][-1])
    assignment_decide(assignment=decided, state=REJECTED, user=UserFactory())
    Assignment.objects.filter(pk=decided.pk).update(decided_by=None)  # the account was deleted
    before = Assignment.objects.filter(pk=decided.pk).values().get()
    changed = copy.deepcopy(REFERENCE)
    changed["papers"][0]["topics"].remove(item["topics"][-1])

    result = reference_page_import(data=changed)

    assert result.assignments_removed == 0
    assert Assignment.objects.filter(pk=decided.pk).values().get() == before


# --- 2. a decision on an assignment re-tagging just removed ---------------------------------


@pytest.fixture
def retagged():
    """A rule assignment that re-tagging removed (its rule stopped matching), read before."""
    category = CategoryFactory(code="cs.CL")
    paper = PaperFactory(title="Agents that plan", abstract="Planning.", primary_category=category)
    topic = TopicFactory(name="Agents", rule_query="agents")
    papers_tag(paper_ids=[paper.pk])
    stale = Assignment.objects.get(paper=paper, topic=topic)
    topic.rule_query = "robots"
    topic.save()
    papers_tag(paper_ids=[paper.pk])
    assert not Assignment.objects.filter(pk=stale.pk).exists()
    return stale


@pytest.mark.django_db
@pytest.mark.parametrize("state", [ACCEPTED, REJECTED])
def test_a_decision_on_an_assignment_retagging_removed_is_recorded(retagged, state):
    curator = UserFactory()

    stored = assignment_decide(assignment=retagged, state=state, user=curator)

    row = Assignment.objects.get(paper=retagged.paper, topic=retagged.topic)
    assert stored.pk == row.pk == retagged.pk
    assert (row.source, row.score, row.state, row.decided_by) == (
        Assignment.Source.RULE,
        1.0,
        state,
        curator,
    )
    assert row.decided_at is not None
    assert row.history.latest("history_id").history_type == "+"
    # Re-tagging leaves the recorded decision alone.
    before = Assignment.objects.filter(pk=row.pk).values().get()
    papers_tag(paper_ids=[retagged.paper_id])
    assert Assignment.objects.filter(pk=row.pk).values().get() == before


@pytest.mark.django_db
def test_a_decision_on_a_stale_copy_updates_the_row_stored_for_the_pair(retagged):
    """Re-tagging removed the row and a later run made the pair again under another pk."""
    retagged.topic.rule_query = "plan"
    retagged.topic.save()
    papers_tag(paper_ids=[retagged.paper_id])
    current = Assignment.objects.get(paper=retagged.paper, topic=retagged.topic)
    removed_pk = retagged.pk
    curator = UserFactory()

    stored = assignment_decide(assignment=retagged, state=REJECTED, user=curator)

    assert stored.pk == current.pk == retagged.pk != removed_pk
    assert Assignment.objects.filter(paper=retagged.paper, topic=retagged.topic).count() == 1
    assert Assignment.objects.get(pk=current.pk).decided_by == curator


# --- assignment_add racing with tagging -----------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_curator_addition_racing_with_tagging_keeps_the_curators_row():
    """Tagging inserts the pair after assignment_add looked for it and before it inserts."""
    category = CategoryFactory(code="cs.CL")
    paper = PaperFactory(title="Agents that plan", abstract="Planning.", primary_category=category)
    topic = TopicFactory(name="Agents", rule_query="agents")
    curator = UserFactory()
    threads = []

    def tag_first(execute, sql, params, many, context):
        if sql.startswith('INSERT INTO "topics_assignment"') and not threads:
            threads.append(run_concurrently(lambda: papers_tag(paper_ids=[paper.pk])))
            finish(threads[0])
        return execute(sql, params, many, context)

    with connection.execute_wrapper(tag_first):
        added = assignment_add(paper=paper, topic=topic, user=curator)

    assert threads, "assignment_add did not insert"
    row = Assignment.objects.get(paper=paper, topic=topic)
    assert row.pk == added.pk
    assert (row.source, row.state, row.score, row.decided_by) == (
        Assignment.Source.CURATOR,
        ACCEPTED,
        None,
        curator,
    )
    papers_tag(paper_ids=[paper.pk])
    assert Assignment.objects.get(pk=row.pk).source == Assignment.Source.CURATOR


# --- 3. concurrent reference imports --------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_concurrent_reference_imports_run_one_after_the_other():
    category_sync()
    workers = 3
    barrier = threading.Barrier(workers)
    outputs: list[str] = []
    errors: list[BaseException] = []

    def import_page():
        try:
            barrier.wait(HANG_GUARD_SECONDS)
            out = StringIO()
            call_command("import_reference_page", stdout=out)
            outputs.append(out.getvalue())
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=import_page, daemon=True) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(HANG_GUARD_SECONDS * 2)

    assert errors == []
    assert sum("Topics: 59 created" in output for output in outputs) == 1
    assert sum("Topics: 0 created, 0 updated, 59 unchanged" in output for output in outputs) == 2
    assert Topic.objects.count() == 59
    assert Assignment.objects.count() == 114


# --- 5. admin actions without their permission ----------------------------------------------


@pytest.fixture
def viewer(client):
    user = UserFactory(username="viewer", is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(codename__in=["view_assignment", "view_topic"])
    )
    client.force_login(user)
    return user


@pytest.fixture
def queued_tasks():
    started = []

    def record(sender=None, **kwargs):
        started.append(sender.name)

    task_prerun.connect(record, weak=False)
    yield started
    task_prerun.disconnect(record)


@pytest.mark.django_db
@pytest.mark.parametrize("action", ["reject", "accept", "retag_papers"])
def test_a_viewer_posting_an_assignment_action_changes_nothing(
    client, viewer, queued_tasks, django_capture_on_commit_callbacks, action
):
    assignment = AssignmentFactory(source=Assignment.Source.RULE, score=1.0)
    before = Assignment.objects.filter(pk=assignment.pk).values().get()

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(
            reverse("admin:topics_assignment_changelist"),
            {"action": action, "_selected_action": [assignment.pk]},
        )

    assert response.status_code == 200  # the changelist again, the action not run
    assert Assignment.objects.filter(pk=assignment.pk).values().get() == before
    assert not Assignment.history.filter(id=assignment.pk, history_type="~").exists()
    assert callbacks == [] and queued_tasks == []


@pytest.mark.django_db
def test_a_viewer_posting_retag_all_papers_queues_nothing(
    client, viewer, queued_tasks, django_capture_on_commit_callbacks
):
    topic = TopicFactory(name="Agents", rule_query="agents")
    PaperFactory(title="Agents")

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(
            reverse("admin:topics_topic_changelist"),
            {"action": "retag_all_papers", "_selected_action": [topic.pk]},
        )

    assert response.status_code == 200
    assert callbacks == [] and queued_tasks == []
    assert not Assignment.objects.exists()
