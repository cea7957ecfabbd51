"""The hourly sweep and the per-user task: who is due, fan-out, locks, retries."""

import datetime as dt

import pytest
from django.core.cache import cache
from django.utils import timezone

from digests.models import Digest
from digests.selectors import period_end_due
from digests.tasks import SWEEP_LOCK_KEY, digest_send_user, digests_send_due
from follows.services import follow_create

from .conftest import TopicFactory, UserFactory, free_port, paper_in, use_smtp

UTC = dt.UTC


@pytest.mark.parametrize(
    ("now", "daily", "weekly"),
    [
        # Monday Nov 30, 2026, before and after the send hour (6 UTC).
        (dt.datetime(2026, 11, 30, 5, 59, tzinfo=UTC), None, None),
        (dt.datetime(2026, 11, 30, 6, 0, tzinfo=UTC), dt.date(2026, 11, 30), dt.date(2026, 11, 30)),
        # Wednesday: the weekly digest of that Monday is still due (a missed Monday catches up).
        (dt.datetime(2026, 12, 2, 3, 0, tzinfo=UTC), None, dt.date(2026, 11, 30)),
        (dt.datetime(2026, 12, 2, 23, 0, tzinfo=UTC), dt.date(2026, 12, 2), dt.date(2026, 11, 30)),
        # Sunday late: still the week that began on Monday the 30th.
        (dt.datetime(2026, 12, 6, 23, 59, tzinfo=UTC), dt.date(2026, 12, 6), dt.date(2026, 11, 30)),
    ],
)
def test_period_end_due(settings, now, daily, weekly):
    settings.DIGESTS_SEND_HOUR = 6

    assert period_end_due(period="daily", now=now) == daily
    assert period_end_due(period="weekly", now=now) == weekly


def test_period_end_due_refuses_an_unknown_period():
    with pytest.raises(ValueError, match="Unknown digest period 'monthly'"):
        period_end_due(period="monthly", now=timezone.now())


@pytest.mark.django_db
def test_the_sweep_fans_out_for_due_users_only_and_once(smtp_server, settings):
    settings.DIGESTS_SEND_HOUR = 0  # both periods are due at any hour of the test
    today = period_end_due(period="daily", now=timezone.now())
    topic = TopicFactory()

    def follower(frequency, **user_fields):
        user = UserFactory(**user_fields)
        follow_create(user=user, topic=topic, digest_frequency=frequency)
        return user

    daily, weekly, quiet = follower("daily"), follower("weekly"), follower("daily")
    follower("off")
    follower("daily", is_active=False)
    follower("daily", email="")
    follower("daily", email_address__verified=False)  # never confirmed their address
    already = follower("daily")
    Digest.objects.create(user=already, period="daily", period_end=today, status=Digest.Status.SENT)
    paper_in(topic)
    Digest.objects.filter(user=quiet).delete()
    # quiet follows a topic with no new papers for them: followed after the paper arrived.
    quiet.follows.update(created_at=timezone.now())

    queued = digests_send_due()
    again = digests_send_due()

    assert queued == {"daily": 2, "weekly": 1}
    assert again == {"daily": 0, "weekly": 0}
    assert sorted(m["To"] for m in smtp_server.messages) == sorted([daily.email, weekly.email])
    assert Digest.objects.get(user=quiet).status == Digest.Status.EMPTY
    assert Digest.objects.filter(user=already).count() == 1


@pytest.mark.django_db
def test_a_sweep_holding_the_lock_stops_a_second_one(smtp_server):
    user = UserFactory()
    follow_create(user=user, topic=TopicFactory(), digest_frequency="daily")
    cache.add(SWEEP_LOCK_KEY, "running", 60)

    assert digests_send_due() is None
    assert not Digest.objects.exists()


@pytest.mark.django_db
def test_the_sweep_marks_digests_left_sending_unconfirmed_without_resending(smtp_server, settings):
    settings.DIGESTS_SEND_HOUR = 0
    today = period_end_due(period="daily", now=timezone.now())
    user = UserFactory()
    topic = TopicFactory()
    follow_create(user=user, topic=topic, digest_frequency="daily")
    paper_in(topic)
    old = timezone.now() - dt.timedelta(minutes=settings.DIGESTS_SENDING_STALE_MINUTES + 5)
    stuck = Digest.objects.create(
        user=user,
        period="daily",
        period_end=today,
        status=Digest.Status.SENDING,
        sending_started_at=old,
        attempts=1,
    )

    assert digests_send_due() == {"daily": 0, "weekly": 0}

    stuck.refresh_from_db()
    assert stuck.status == Digest.Status.UNCONFIRMED
    assert smtp_server.messages == []


@pytest.mark.django_db
def test_refused_mail_is_tried_up_to_the_attempt_limit_then_left_alone(smtp_server, settings):
    settings.DIGESTS_SEND_HOUR = 0
    user = UserFactory()
    topic = TopicFactory()
    follow_create(user=user, topic=topic, digest_frequency="daily")
    paper_in(topic)
    working_port = settings.EMAIL_PORT
    use_smtp(settings, free_port())  # nothing listens there
    today = period_end_due(period="daily", now=timezone.now())

    for _ in range(settings.DIGESTS_MAX_ATTEMPTS):
        with pytest.raises(OSError):
            digest_send_user(user.pk, "daily", today.isoformat())
    use_smtp(settings, working_port)

    assert digest_send_user(user.pk, "daily", today.isoformat()) == Digest.Status.FAILED
    digest = Digest.objects.get(user=user)
    assert (digest.status, digest.attempts) == (Digest.Status.FAILED, settings.DIGESTS_MAX_ATTEMPTS)
    assert digests_send_due() == {"daily": 0, "weekly": 0}
    assert smtp_server.messages == []


@pytest.mark.django_db
def test_the_task_does_nothing_for_a_user_gone_or_inactive(smtp_server):
    inactive = UserFactory(is_active=False)
    follow_create(user=inactive, topic=TopicFactory(), digest_frequency="daily")

    assert digest_send_user(987654, "daily", "2026-11-30") is None
    assert digest_send_user(inactive.pk, "daily", "2026-11-30") is None
    assert not Digest.objects.exists()


@pytest.mark.django_db
def test_the_hourly_sweep_is_in_the_beat_schedule():
    from django_celery_beat.models import PeriodicTask

    task = PeriodicTask.objects.select_related("crontab").get(task="digests.tasks.digests_send_due")
    assert task.enabled
    assert (task.crontab.minute, task.crontab.hour, task.crontab.day_of_week) == ("5", "*", "*")
    assert task.queue == "default"


@pytest.mark.django_db
def test_send_digests_command_runs_the_sweep(smtp_server, settings):
    from io import StringIO

    from django.core.management import call_command

    settings.DIGESTS_SEND_HOUR = 0
    topic = TopicFactory()
    reader = UserFactory()
    follow_create(user=reader, topic=topic, digest_frequency="daily")
    paper_in(topic)
    out = StringIO()

    call_command("send_digests", stdout=out)

    assert "Digests queued: 1 daily, 0 weekly" in out.getvalue()
    assert [m["To"] for m in smtp_server.messages] == [reader.email]
