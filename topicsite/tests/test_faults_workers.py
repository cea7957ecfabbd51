"""A Celery worker SIGKILLed in the middle of tagging and of a digest run: the drills of
``drills/`` (real ``celery -A topicsite worker`` processes, Redis, PostgreSQL, a local SMTP
server), run on the test database. Each drill compares the end state with an undisturbed run;
see the drill modules for the exact moments of the kills. About 30 s and 60 s."""

import pytest

from drills import common, kill_worker_digest, kill_worker_tagging
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
