"""Drill: a Celery worker SIGKILLed in the middle of ``topics.tasks.tag_papers``.

The recorded papers (``papers/recorded/``, 1317) and three topics with rules are stored; an
undisturbed ``papers_tag`` run gives the expected assignments, which are then removed. One
``tag_papers`` task for every paper goes to Redis. Tagging works in batches of 1000 papers, one
transaction each: a second connection holds an uncommitted assignment of a paper in the second
batch, so the worker commits batch 1 and then waits on that row's unique key. Mid-task, the
whole worker (main and pool process) is SIGKILLed; the lock is released (the dead worker's
half-done batch 2 rolls back). A new worker starts after the visibility timeout; the broker
delivers the same message again, and the end state must equal the undisturbed run: the same
assignments and the same number of history rows (no lost and no doubled work).

Run: ``DATABASE_URL=postgres://postgres@127.0.0.1:5432/topicsite_h_faults
REDIS_URL=redis://127.0.0.1:6379/5 .venv/bin/python drills/kill_worker_tagging.py``
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from drills import common


def prepare() -> dict:
    """Store the papers and topics, run tagging undisturbed in-process; return the expected
    state (``assignments``, ``history_rows``) and remove every assignment again."""
    from papers.categories import category_sync
    from papers.harvest import harvest_run
    from papers.sources.recorded import DEFAULT_RECORDED_DIR
    from topics.models import Assignment, Topic
    from topics.services import topic_create
    from topics.tagging.engine import papers_tag

    category_sync()
    # Eager here: no topic exists yet, so the harvest's own tagging writes nothing.
    harvest_run(kind="recorded", params={"directory": str(DEFAULT_RECORDED_DIR)})
    topic_create(name="Theory", slug="drill-hep-th", rule_categories=_categories("hep-th"))
    topic_create(name="Learning", slug="drill-learning", rule_query="learning OR neural")
    topic_create(name="Quantum", slug="drill-quantum", rule_query="quantum")
    papers_tag(paper_ids=_paper_ids())
    expected = {"assignments": assignment_state(), "history_rows": _history_rows()}
    Assignment.objects.all().delete()
    # After the rows: deleting them records history rows of their own.
    Assignment.history.all().delete()
    assert Topic.objects.filter(slug__startswith="drill-").count() == 3
    return expected


def _categories(*codes):
    from papers.models import Category

    return list(Category.objects.filter(code__in=codes))


def _paper_ids() -> list[int]:
    from papers.models import Paper

    return list(Paper.objects.order_by("pk").values_list("pk", flat=True))


def _history_rows() -> int:
    from topics.models import Assignment

    return Assignment.history.count()


def assignment_state() -> list[tuple]:
    from topics.models import Assignment

    return sorted(
        Assignment.objects.values_list("paper__arxiv_id", "topic__slug", "source", "state", "score")
    )


def run(*, log_dir: Path = common.LOG_DIR) -> tuple[bool, dict]:
    """The drill on the current database; returns (passed, figures)."""
    from topics.models import Assignment, Topic
    from topics.tagging.engine import TAG_BATCH_SIZE
    from topics.tasks import tag_papers

    started = time.monotonic()
    expected = prepare()
    paper_ids = _paper_ids()
    # A paper of batch 2 that the rules place in a topic: its row is the one held.
    second_batch = set(paper_ids[TAG_BATCH_SIZE:])
    held_paper, held_topic = next(
        (paper, topic)
        for paper, topic in _expected_pairs(expected["assignments"])
        if paper in second_batch
    )
    common.use_broker()
    env = common.worker_env()
    holder = common.LockHolder()
    holder.hold(
        "INSERT INTO topics_assignment (paper_id, topic_id, source, state, score, created_at, "
        "updated_at) VALUES (%s, %s, 'rule', 'accepted', 1.0, now(), now())",
        (held_paper, held_topic),
    )
    first = common.Worker("tagging-first", env, log_dir)
    result = tag_papers.delay(paper_ids)
    holder.wait_for_a_blocked_backend("the worker blocks", 120, first)
    committed_at_kill = Assignment.objects.count()
    first.kill()
    killed_at = time.monotonic()
    blocked = common.backends_waiting_for_a_lock(holder.pid)
    holder.release()
    for pid in blocked:
        common.wait_until(lambda pid=pid: not common.backend_alive(pid), "the dead backend ends")
    after_kill = Assignment.objects.count()
    unacked = common.broker_redis().hlen("unacked")

    # The message becomes visible again after the timeout; a new worker restores it on start.
    time.sleep(max(0.0, common.VISIBILITY_TIMEOUT + 0.5 - (time.monotonic() - killed_at)))
    second = common.Worker("tagging-second", env, log_dir)
    try:
        common.wait_until(
            lambda: f"tag_papers[{result.id}] succeeded" in second.log(),
            "the redelivered task succeeds",
            120,
            second,
        )
        redelivered_after = time.monotonic() - killed_at
    finally:
        second.stop()
    end = {"assignments": assignment_state(), "history_rows": _history_rows()}
    figures = {
        "papers": len(paper_ids),
        "topics": Topic.objects.filter(slug__startswith="drill-").count(),
        "assignments expected (undisturbed run)": len(expected["assignments"]),
        "assignments committed when killed (batch 1)": committed_at_kill,
        "assignments after the kill (batch 2 rolled back)": after_kill,
        "unacknowledged messages after the kill": unacked,
        "redelivered and finished, s after the kill": round(redelivered_after, 1),
        "assignments at the end": len(end["assignments"]),
        "history rows expected / at the end": f"{expected['history_rows']} / {end['history_rows']}",
        "end state equals the undisturbed run": end == expected,
        "drill seconds": round(time.monotonic() - started, 1),
    }
    passed = (
        end == expected
        and 0 < committed_at_kill < len(expected["assignments"])
        and after_kill == committed_at_kill
        and unacked == 1
    )
    return passed, figures


def _expected_pairs(assignments: list[tuple]) -> list[tuple[int, int]]:
    """(paper pk, topic pk) of the expected assignments."""
    from papers.models import Paper
    from topics.models import Topic

    papers = dict(Paper.objects.values_list("arxiv_id", "pk"))
    topics = dict(Topic.objects.values_list("slug", "pk"))
    return [(papers[arxiv_id], topics[slug]) for arxiv_id, slug, *_ in assignments]


if __name__ == "__main__":
    sys.exit(common.main("kill_worker_tagging", run))
