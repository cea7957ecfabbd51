"""The vector index reconcile as a django-celery-beat schedule in the database, every ten
minutes.

Beat (``DatabaseScheduler``) sends ``papers.tasks.embed_index_reconcile``, routed to the
``embed`` queue: it adds to the index file the stored vectors it lacks (an embed run killed,
or whose index update failed, after its vectors committed) and drops the ones gone, reading
only the rows embedded since its last run. Operators change the interval or switch it off in
the admin (Periodic tasks); running this migration again never overrides their change.
"""

from django.db import migrations
from django.utils import timezone

TASK_NAME = "Reconcile the vector index with PostgreSQL"
TASK = "papers.tasks.embed_index_reconcile"


def reconcile_schedule_create(apps, schema_editor):
    using = schema_editor.connection.alias
    IntervalSchedule = apps.get_model("django_celery_beat", "IntervalSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    PeriodicTasks = apps.get_model("django_celery_beat", "PeriodicTasks")
    if PeriodicTask.objects.using(using).filter(name=TASK_NAME).exists():
        return
    interval, _ = IntervalSchedule.objects.using(using).get_or_create(every=10, period="minutes")
    PeriodicTask.objects.using(using).create(
        name=TASK_NAME,
        task=TASK,
        interval=interval,
        description=(
            "Add to the current model's vector index file the stored vectors it lacks and "
            "drop the ones gone (rows embedded since its last reconcile; nothing is encoded)."
        ),
    )
    # Historical models send no signals: tell a running beat that the schedule changed.
    PeriodicTasks.objects.using(using).update_or_create(
        ident=1, defaults={"last_update": timezone.now()}
    )


def reconcile_schedule_delete(apps, schema_editor):
    using = schema_editor.connection.alias
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    PeriodicTask.objects.using(using).filter(name=TASK_NAME, task=TASK).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("papers", "0012_paper_dois_lower_index"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(reconcile_schedule_create, reconcile_schedule_delete)]
