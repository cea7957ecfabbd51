"""``manage.py harvest`` when the harvest goes to a worker: with Redis (the broker) down, one
line and a non-zero exit; queued, it says plainly that the worker reports rejected records."""

from io import StringIO

import pytest
from celery.result import AsyncResult
from django.core.management import CommandError, call_command

from papers.tasks import harvest
from topicsite.tests.dead_broker import dead_broker_delay

pytestmark = pytest.mark.django_db


def test_a_stopped_broker_is_one_line_and_a_failure(monkeypatch, tmp_path):
    monkeypatch.setattr(harvest, "delay", dead_broker_delay(harvest.name))
    with pytest.raises(CommandError) as raised:
        call_command("harvest", "--recorded", str(tmp_path))
    message = str(raised.value)
    assert message.startswith("Redis (the Celery broker, REDIS_URL) is unreachable:")
    assert "Connection refused" in message and "--sync" in message
    assert "\n" not in message


def test_a_queued_harvest_says_the_worker_reports_rejected_records(monkeypatch, tmp_path):
    monkeypatch.setattr(harvest, "delay", lambda *args: AsyncResult("queued-task-id"))
    out = StringIO()
    call_command("harvest", "--recorded", str(tmp_path), stdout=out)
    text = out.getvalue()
    assert "Queued harvest task queued-task-id" in text
    assert "rejected records included, is reported there, not here" in text
    assert "--sync" in text
