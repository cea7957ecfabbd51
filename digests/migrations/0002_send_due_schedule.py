"""The hourly digest sweep, as a django-celery-beat schedule in the database.

Beat (``DatabaseScheduler``) sends ``digests.tasks.digests_send_due`` at minute 5 of every hour;
the task queues one ``digests.tasks.digest_send_user`` per user whose daily (from
``DIGESTS_SEND_HOUR``) or weekly (Monday, from that hour) digest is due. Operators change the
time or switch it off in the admin (Periodic tasks); running this migration again never
overrides their change.
"""

from django.db import migrations
from django.utils import timezone

TASK_NAME = "Send due email digests hourly"
TASK = "digests.tasks.digests_send_due"
SCHEDULE = {
    "minute": "5",
    "hour": "*",
    "day_of_week": "*",
    "day_of_month": "*",
    "month_of_year": "*",
    "timezone": "UTC",
}


def send_due_schedule_create(apps, schema_editor):
    using = schema_editor.connection.alias
    CrontabSchedule = apps.get_model("django_celery_beat", "CrontabSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    PeriodicTasks = apps.get_model("django_celery_beat", "PeriodicTasks")
    if PeriodicTask.objects.using(using).filter(name=TASK_NAME).exists():
        return
    crontab, _ = CrontabSchedule.objects.using(using).get_or_create(**SCHEDULE)
    PeriodicTask.objects.using(using).create(
        name=TASK_NAME,
        task=TASK,
        crontab=crontab,
        queue="default",
        description=(
            "Queue one digest email task per user whose daily or weekly digest is due; a "
            "digest already sent, empty or being sent is never sent again."
        ),
    )
    # Historical models send no signals: tell a running beat that the schedule changed.
    PeriodicTasks.objects.using(using).update_or_create(
        ident=1, defaults={"last_update": timezone.now()}
    )


def send_due_schedule_delete(apps, schema_editor):
    using = schema_editor.connection.alias
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    PeriodicTask.objects.using(using).filter(name=TASK_NAME, task=TASK).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("digests", "0001_initial"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(send_due_schedule_create, send_due_schedule_delete)]
