"""``manage.py send_digests``: run the hourly digest sweep now (what beat runs every hour)."""

from django.conf import settings
from django.core.management.base import BaseCommand

from digests.tasks import digests_send_due


class Command(BaseCommand):
    help = (
        "Send every daily and weekly digest that is due now (the beat task's sweep). With "
        "REDIS_URL set the emails go out from the Celery workers; without it, here."
    )

    def handle(self, *args, **options):
        queued = digests_send_due()
        if queued is None:
            self.stdout.write("Another digest sweep is running; nothing done.")
            return
        where = "run here" if settings.CELERY_TASK_ALWAYS_EAGER else "queued for the Celery workers"
        self.stdout.write(
            f"Digests queued: {queued['daily']} daily, {queued['weekly']} weekly, {where} "
            "(users with no new papers get none; the admin's Digests page shows each result)."
        )
