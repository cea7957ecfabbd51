"""The daily incremental OAI harvest as a django-celery-beat periodic task, disabled.

An operator enables it (and edits its time or its ``kwargs``, e.g. ``"sets": ["cs", "stat"]``)
in the admin under Periodic tasks; beat's database scheduler picks the change up. Without
``sets`` it harvests ``settings.ARXIV_OAI_SETS``.
"""

import json

from django.db import migrations

NAME = "Daily incremental arXiv OAI harvest"


def create_schedule(apps, schema_editor):
    CrontabSchedule = apps.get_model("django_celery_beat", "CrontabSchedule")
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    # arXiv announces new papers at 00:00 UTC (20:00 US Eastern), Sunday to Thursday.
    crontab, _ = CrontabSchedule.objects.get_or_create(
        minute="30",
        hour="2",
        day_of_week="*",
        day_of_month="*",
        month_of_year="*",
        timezone="UTC",
    )
    PeriodicTask.objects.get_or_create(
        name=NAME,
        defaults={
            "task": "papers.tasks.harvest",
            "crontab": crontab,
            "kwargs": json.dumps({"kind": "oai", "params": {"incremental": True}}),
            "queue": "harvest",
            "enabled": False,
            "description": (
                "OAI-PMH ListRecords of the configured sets (ARXIV_OAI_SETS, or "
                '"sets": [...] in the params) from the day before the last incremental '
                "harvest started. Enable it once the first backfill is done."
            ),
        },
    )


def remove_schedule(apps, schema_editor):
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    PeriodicTask.objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("papers", "0002_harvestrun"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(create_schedule, remove_schedule)]
