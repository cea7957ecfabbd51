"""``manage.py tag`` with Redis (the broker) down: one line and a non-zero exit."""

import pytest
from django.core.management import CommandError, call_command

from papers.tests.factories import PaperFactory
from topics.tasks import tag_papers
from topicsite.tests.dead_broker import dead_broker_delay

# Real commits: the command queues each chunk on commit, at once outside a transaction.
pytestmark = pytest.mark.django_db(transaction=True)


def test_a_stopped_broker_is_one_line_and_a_failure(monkeypatch):
    paper = PaperFactory()
    monkeypatch.setattr(tag_papers, "delay", dead_broker_delay(tag_papers.name))
    with pytest.raises(CommandError) as raised:
        call_command("tag", "--ids", str(paper.pk))
    message = str(raised.value)
    assert message.startswith("Redis (the Celery broker, REDIS_URL) is unreachable:")
    assert "Connection refused" in message and "run this command again" in message
    assert "\n" not in message
