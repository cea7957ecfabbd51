"""``manage.py send_digests``: run the hourly digest sweep now (what beat runs every hour).

Exits non-zero, in one line, when Redis (the cache holding the sweep's lock, and the broker
the emails are queued on) cannot be reached."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from digests.tasks import SweepLockUnavailable, digests_send_due
from topicsite.publish import BROKER_ERRORS, broker_unreachable


class Command(BaseCommand):
    help = (
        "Send every daily and weekly digest that is due now (the beat task's sweep). With "
        "REDIS_URL set the emails go out from the Celery workers; without it, here."
    )

    def handle(self, *args, **options):
        try:
            queued = digests_send_due()
        except SweepLockUnavailable as error:
            raise CommandError(str(error)) from None
        except BROKER_ERRORS as error:
            raise CommandError(
                broker_unreachable(
                    error,
                    "Some digests may not be queued; the next sweep queues what is still due.",
                )
            ) from None
        if queued is None:
            self.stdout.write("Another digest sweep is running; nothing done.")
            return
        where = "run here" if settings.CELERY_TASK_ALWAYS_EAGER else "queued for the Celery workers"
        self.stdout.write(
            f"Digests queued: {queued['daily']} daily, {queued['weekly']} weekly, {where} "
            "(users with no new papers get none; the admin's Digests page shows each result)."
        )
