"""Drill: a Celery worker SIGKILLed in the middle of a digest run (``digests.services``'s
delivery record: claim, send, mark sent). A local SMTP server (aiosmtpd, real socket) takes the
mail; the workers run the local settings with ``EMAIL_URL`` pointing at it.

Each user follows a topic daily with two papers in it; an undisturbed in-process
``digest_send`` gives the expected digest (papers, one email), then is removed. Three kills:

1. **The sweep** (``digests_send_due``, via Redis): a second connection holds the digest table
   locked, so the sweep stops at its first write; the worker is SIGKILLed, the lock released.
   The same message comes back after the visibility timeout, the redelivered sweep takes its own
   stale lock over (the lock holds the task id) and queues the sends: one email per user.
2. **Before sending** (``digest_send_user``): the claim's INSERT waits on the same kind of lock;
   killed there, nothing was committed; redelivered, exactly one email.
3. **After the mail server accepted** the message, before the digest is marked sent: the SMTP
   server keeps the message and holds its reply. Killed there, the digest stays ``sending``;
   the redelivered task sends nothing; once stale (time moved on by rewinding
   ``sending_started_at``) the next sweep marks it ``unconfirmed`` (the documented choice: a
   rare digest to check by hand rather than a duplicate). Exactly one email.

Run: ``DATABASE_URL=postgres://postgres@127.0.0.1:5432/topicsite_h_faults
REDIS_URL=redis://127.0.0.1:6379/5 .venv/bin/python drills/kill_worker_digest.py``
"""

from __future__ import annotations

import asyncio
import datetime as dt
import sys
import threading
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from drills import common


class HoldingHandler:
    """An aiosmtpd handler that keeps every message; while ``hold`` is set it keeps a message
    (it is accepted: a real server would deliver it) and delays the reply until ``release``."""

    def __init__(self):
        self.lock = threading.Lock()
        self.recipients: list[str] = []
        self.hold = False
        self.accepted = threading.Event()
        self.release = threading.Event()

    async def handle_DATA(self, server, session, envelope):
        with self.lock:
            self.recipients.extend(envelope.rcpt_tos)
        if self.hold:
            self.accepted.set()
            await asyncio.get_running_loop().run_in_executor(None, self.release.wait)
        return "250 Message accepted for delivery"

    def count(self, address: str) -> int:
        with self.lock:
            return self.recipients.count(address)


def make_user():
    """A user following a new topic daily, with two papers accepted in it."""
    from accounts.tests.factories import UserFactory
    from follows.services import follow_create
    from papers.tests.factories import PaperFactory
    from topics.tests.factories import AssignmentFactory, TopicFactory

    user = UserFactory()
    topic = TopicFactory()
    follow_create(user=user, topic=topic, digest_frequency="daily")
    for _ in range(2):
        AssignmentFactory(paper=PaperFactory(), topic=topic)
    return user


def digest_state(users) -> dict:
    """Per user email: (digest status, the arXiv ids of the digest's papers)."""
    from digests.models import Digest

    state = {}
    for user in users:
        digest = Digest.objects.filter(user=user, period="daily").first()
        papers = sorted(digest.items.values_list("paper__arxiv_id", flat=True)) if digest else []
        state[user.email] = (digest.status if digest else None, papers)
    return state


def undisturbed(users, handler, port: int, today: dt.date) -> dict:
    """Send each user's digest in-process (the undisturbed run); return its state with the
    emails each user got, then remove the digests so that the drill sends them anew."""
    from django.test import override_settings

    from digests.models import Digest
    from digests.services import digest_send

    with override_settings(
        EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend",
        EMAIL_HOST="127.0.0.1",
        EMAIL_PORT=port,
        EMAIL_USE_TLS=False,
        EMAIL_USE_SSL=False,
    ):
        for user in users:
            digest_send(user=user, period="daily", period_end=today)
    state = digest_state(users)
    emails = {user.email: handler.count(user.email) for user in users}
    Digest.objects.filter(user__in=users).delete()
    with handler.lock:
        handler.recipients.clear()
    return {"digests": state, "emails": emails}


def kill_mid_task(name: str, env, log_dir, lock_sql: str, send) -> tuple[common.Worker, float]:
    """Hold ``lock_sql``, start a worker, ``send()`` the task, SIGKILL the worker once its
    database connection waits for the lock, release it; then start a new worker after the
    visibility timeout. Returns the new worker and the seconds from kill to its start."""
    holder = common.LockHolder()
    holder.hold(lock_sql)
    first = common.Worker(f"{name}-first", env, log_dir)
    send()
    holder.wait_for_a_blocked_backend(f"{name}: blocks", 120, first)
    first.kill()
    killed_at = time.monotonic()
    blocked = common.backends_waiting_for_a_lock(holder.pid)
    holder.release()
    for pid in blocked:
        common.wait_until(lambda pid=pid: not common.backend_alive(pid), "the dead backend ends")
    time.sleep(max(0.0, common.VISIBILITY_TIMEOUT + 0.5 - (time.monotonic() - killed_at)))
    return common.Worker(f"{name}-second", env, log_dir), killed_at


def queues_drained() -> bool:
    redis = common.broker_redis()
    return not redis.hlen("unacked") and not any(
        redis.llen(queue) for queue in ("default", "tag", "harvest")
    )


def run(*, log_dir: Path = common.LOG_DIR) -> tuple[bool, dict]:
    """The drill on the current database; returns (passed, figures)."""
    from aiosmtpd.controller import Controller
    from django.utils import timezone

    from digests.models import Digest
    from digests.tasks import digest_send_user, digests_send_due

    started = time.monotonic()
    handler = HoldingHandler()
    controller = Controller(handler, hostname="127.0.0.1", port=common.free_port())
    controller.start()
    env = common.worker_env(
        DJANGO_SETTINGS_MODULE="topicsite.settings.local",
        DJANGO_DEBUG="false",
        EMAIL_URL=f"smtp://127.0.0.1:{controller.port}",
        DIGESTS_SEND_HOUR="0",
    )
    # The daily boundary the workers see as due (they run with DIGESTS_SEND_HOUR=0).
    today = timezone.localdate()
    figures: dict = {}
    checks: dict[str, bool] = {}
    workers: list[common.Worker] = []
    try:
        common.use_broker()
        # 1. The sweep, killed at its first write.
        sweep_users = [make_user() for _ in range(3)]
        expected = undisturbed(sweep_users, handler, controller.port, today)
        second, killed_at = kill_mid_task(
            "digest-sweep",
            env,
            log_dir,
            "LOCK TABLE digests_digest IN EXCLUSIVE MODE",
            digests_send_due.delay,
        )
        workers.append(second)
        common.wait_until(
            lambda: (
                all(s == "sent" for s, _ in digest_state(sweep_users).values()) and queues_drained()
            ),
            "the redelivered sweep sends every digest",
            120,
            second,
        )
        second.stop()
        got = {
            "digests": digest_state(sweep_users),
            "emails": {u.email: handler.count(u.email) for u in sweep_users},
        }
        checks["sweep"] = got == expected and all(n == 1 for n in got["emails"].values())
        figures["1 sweep killed: emails per user (expected)"] = (
            f"{sorted(got['emails'].values())} ({sorted(expected['emails'].values())})"
        )
        figures["1 sweep killed: lock taken over on redelivery"] = "was interrupted" in (
            second.log()
        )
        figures["1 sweep killed: s from kill to all sent"] = round(time.monotonic() - killed_at, 1)

        # 2. One user's send, killed in the claim (before anything is committed or sent).
        user = make_user()
        expected = undisturbed([user], handler, controller.port, today)
        second, killed_at = kill_mid_task(
            "digest-before-send",
            env,
            log_dir,
            "LOCK TABLE digests_digest IN SHARE MODE",
            lambda: digest_send_user.delay(user.pk, "daily", today.isoformat()),
        )
        workers.append(second)
        common.wait_until(
            lambda: digest_state([user])[user.email][0] == "sent" and queues_drained(),
            "the redelivered send",
            120,
            second,
        )
        second.stop()
        got = {"digests": digest_state([user]), "emails": {user.email: handler.count(user.email)}}
        checks["before send"] = got == expected and got["emails"][user.email] == 1
        figures["2 killed before sending: emails (expected)"] = (
            f"{got['emails'][user.email]} ({expected['emails'][user.email]})"
        )
        figures["2 killed before sending: s from kill to sent"] = round(
            time.monotonic() - killed_at, 1
        )

        # 3. Killed after the mail server accepted, before the digest is marked sent.
        user = make_user()
        expected = undisturbed([user], handler, controller.port, today)
        handler.hold = True
        first = common.Worker("digest-after-accept-first", env, log_dir)
        workers.append(first)
        digest_send_user.delay(user.pk, "daily", today.isoformat())
        common.wait_until(handler.accepted.is_set, "the server accepts the digest", 120, first)
        first.kill()
        killed_at = time.monotonic()
        handler.hold = False
        handler.release.set()
        status_at_kill = digest_state([user])[user.email][0]
        time.sleep(common.VISIBILITY_TIMEOUT + 0.5)
        second = common.Worker("digest-after-accept-second", env, log_dir)
        workers.append(second)
        common.wait_until(queues_drained, "the redelivered send is done", 120, second)
        status_after_redelivery = digest_state([user])[user.email][0]
        # Time moves on: the digest has been sending longer than DIGESTS_SENDING_STALE_MINUTES.
        from django.conf import settings

        Digest.objects.filter(user=user).update(
            sending_started_at=timezone.now()
            - dt.timedelta(minutes=settings.DIGESTS_SENDING_STALE_MINUTES + 1)
        )
        digests_send_due.delay()
        common.wait_until(
            lambda: digest_state([user])[user.email][0] == "unconfirmed" and queues_drained(),
            "the sweep marks it unconfirmed",
            120,
            second,
        )
        second.stop()
        emails = handler.count(user.email)
        papers = digest_state([user])[user.email][1]
        checks["after accept"] = (
            status_at_kill == "sending"
            and status_after_redelivery == "sending"
            and emails == 1
            and papers == expected["digests"][user.email][1]
        )
        figures["3 killed after SMTP accepted: status at kill / after redelivery / after sweep"] = (
            f"{status_at_kill} / {status_after_redelivery} / unconfirmed"
        )
        figures["3 killed after SMTP accepted: emails (expected)"] = (
            f"{emails} ({expected['emails'][user.email]})"
        )
    finally:
        handler.release.set()
        for worker in workers:
            worker.stop()
        controller.stop()
    figures["checks"] = checks
    figures["drill seconds"] = round(time.monotonic() - started, 1)
    return len(checks) == 3 and all(checks.values()), figures


if __name__ == "__main__":
    sys.exit(common.main("kill_worker_digest", run))
