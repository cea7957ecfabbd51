"""The hourly sweep and its fan-out through a real Celery worker consuming from Redis, sending
to the local SMTP server: duplicated tasks still deliver exactly one email."""

import pytest
from django.utils import timezone

from digests.models import Digest, DigestItem
from digests.selectors import period_end_due
from digests.tasks import digest_send_user, digests_send_due
from follows.services import follow_create
from papers.tests.test_pipeline import live_worker  # noqa: F401 (the real worker fixture)

from .conftest import TopicFactory, UserFactory, paper_in, parts

pytestmark = [pytest.mark.pipeline, pytest.mark.django_db(transaction=True)]


def test_sweep_and_duplicated_tasks_through_a_real_worker_send_one_email(
    smtp_server,
    settings,
    live_worker,  # noqa: F811
):
    settings.DIGESTS_SEND_HOUR = 0  # due at any hour the test runs
    user = UserFactory()
    topic = TopicFactory(name="Agents")
    follow_create(user=user, topic=topic, digest_frequency="daily")
    papers = [paper_in(topic), paper_in(topic)]
    today = period_end_due(period="daily", now=timezone.now()).isoformat()

    sweep = digests_send_due.apply_async()
    duplicates = [digest_send_user.apply_async(args=[user.pk, "daily", today]) for _ in range(2)]
    for task in [sweep, *duplicates]:
        name, _, state = live_worker.wait_for(task.id, task.id)
        assert state == "SUCCESS", name
    # The sweep queued one more send for the user (run by the worker too).
    sends = [v for v in live_worker.finished.values() if v[0] == "digests.tasks.digest_send_user"]

    assert live_worker.finished[sweep.id][1] == {"daily": 1, "weekly": 0}
    assert len(sends) == 3
    assert len(smtp_server.messages) == 1
    text, _ = parts(smtp_server.messages[0])
    assert all(paper.title in text for paper in papers)
    digest = Digest.objects.get(user=user)
    assert (digest.status, digest.attempts) == (Digest.Status.SENT, 1)
    assert DigestItem.objects.filter(digest=digest).count() == 2
