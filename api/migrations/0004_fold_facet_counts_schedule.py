"""Fold the facet-count deltas every five minutes, as a django-celery-beat schedule in the
database (``api.tasks.fold_facet_counts``, queue ``default``). Operators change or switch it off
in the admin (Periodic tasks); running this migration again never overrides their change."""

from django.db import migrations
from django.utils import timezone

TASK_NAME = "Fold facet counts"
TASK = "api.tasks.fold_facet_counts"
EVERY_MINUTES = 5


def schedule_create(apps, schema_editor):
    using = schema_editor.connection.alias
    IntervalSchedule = apps.get_model("django_celery_beat", "IntervalSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    PeriodicTasks = apps.get_model("django_celery_beat", "PeriodicTasks")
    if PeriodicTask.objects.using(using).filter(name=TASK_NAME).exists():
        return
    interval, _ = IntervalSchedule.objects.using(using).get_or_create(
        every=EVERY_MINUTES, period="minutes"
    )
    PeriodicTask.objects.using(using).create(
        name=TASK_NAME,
        task=TASK,
        interval=interval,
        description=(
            "Add the paper, topic and author count changes the database triggers recorded into "
            "the stored whole-corpus facet counts (the API's group_by without filters)."
        ),
    )
    # Historical models send no signals: tell a running beat that the schedule changed.
    PeriodicTasks.objects.using(using).update_or_create(
        ident=1, defaults={"last_update": timezone.now()}
    )


def schedule_delete(apps, schema_editor):
    using = schema_editor.connection.alias
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    PeriodicTask.objects.using(using).filter(name=TASK_NAME, task=TASK).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("api", "0003_facet_count_triggers"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(schedule_create, schedule_delete)]
