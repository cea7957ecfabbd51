"""The nightly classifier retraining, as a django-celery-beat schedule in the database.

Beat (``DatabaseScheduler``) sends ``topics.tasks.retrain_classifier`` every night at 03:30
UTC; the task routes to the ``tag`` queue. Operators change the time or switch it off in the
admin (Periodic tasks); running this migration again never overrides their change.
"""

from django.db import migrations
from django.utils import timezone

TASK_NAME = "Retrain the topic classifier nightly"
TASK = "topics.tasks.retrain_classifier"
SCHEDULE = {
    "minute": "30",
    "hour": "3",
    "day_of_week": "*",
    "day_of_month": "*",
    "month_of_year": "*",
    "timezone": "UTC",
}


def retrain_schedule_create(apps, schema_editor):
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
        description=(
            "Train a new topic classifier version on the curators' decisions and the rule and "
            "import assignments, then re-tag every paper with it."
        ),
    )
    # Historical models send no signals: tell a running beat that the schedule changed.
    PeriodicTasks.objects.using(using).update_or_create(
        ident=1, defaults={"last_update": timezone.now()}
    )


def retrain_schedule_delete(apps, schema_editor):
    using = schema_editor.connection.alias
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    PeriodicTask.objects.using(using).filter(name=TASK_NAME, task=TASK).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("topics", "0002_curation_history_classifier"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(retrain_schedule_create, retrain_schedule_delete)]
