"""A Celery worker SIGKILLed in the middle of tagging and of a digest run, and a web server and a
worker SIGKILLed together under load: the drills of ``drills/`` (real ``celery -A topicsite
worker`` and gunicorn processes, Redis, PostgreSQL, a local SMTP or OAI-PMH server), run on the
test database. Each drill compares the end state with an undisturbed run; see the drill modules
for the exact moments of the kills. About 30 s, 60 s and 45 s."""

import pytest

from drills import common, kill_web_and_worker, kill_worker_digest, kill_worker_tagging
from topicsite.celery import app

pytestmark = [pytest.mark.pipeline, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def drill_broker():
    """Tasks from the test go to Redis; the queues and kombu's unacknowledged set are emptied
    before and after, so that no killed worker's message outlives the test."""
    saved = {key: app.conf[key] for key in ("task_always_eager", "broker_url")}
    yield
    app.control.purge()
    common.broker_redis().delete(*common.KOMBU_UNACKED_KEYS)
    app.conf.update(saved)


def test_a_worker_killed_mid_tagging_ends_as_an_undisturbed_run(drill_broker, tmp_path):
    passed, figures = kill_worker_tagging.run(log_dir=tmp_path)
    assert figures["end state equals the undisturbed run"] is True, figures
    assert passed, figures


def test_a_worker_killed_mid_digest_run_sends_each_digest_once(drill_broker, tmp_path):
    passed, figures = kill_worker_digest.run(log_dir=tmp_path)
    assert figures["checks"] == {"sweep": True, "before send": True, "after accept": True}, figures
    assert passed, figures


def test_a_web_server_and_a_worker_killed_under_load_lose_double_and_strand_nothing(
    drill_broker, tmp_path
):
    passed, figures = kill_web_and_worker.run(**kill_web_and_worker.SMOKE, log_dir=tmp_path)
    assert figures["requests answered by neither server"] == 0, figures
    failed = [check for check, ok in figures["checks"].items() if not ok]
    # The failed checks first: pytest cuts a long dict of figures short.
    assert not failed, (failed, figures)
    assert passed, figures
