"""Emerging clusters (topics.emerging) and their weekly recomputation as a beat schedule."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
from django.utils import timezone

TASK_NAME = "Find emerging topics weekly"
TASK = "topics.tasks.find_emerging"
SCHEDULE = {
    "minute": "30",
    "hour": "4",
    "day_of_week": "1",
    "day_of_month": "*",
    "month_of_year": "*",
    "timezone": "UTC",
}


def emerging_schedule_create(apps, schema_editor):
    """Beat sends ``topics.tasks.find_emerging`` on Mondays at 04:30 UTC (after the nightly
    retraining); operators change or switch it off in the admin, and this never overrides
    their change."""
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
            "Cluster the recent papers no topic fits and list the clusters for curators "
            "(admin: Emerging clusters)."
        ),
    )
    PeriodicTasks.objects.using(using).update_or_create(
        ident=1, defaults={"last_update": timezone.now()}
    )


def emerging_schedule_delete(apps, schema_editor):
    using = schema_editor.connection.alias
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    PeriodicTask.objects.using(using).filter(name=TASK_NAME, task=TASK).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("papers", "0010_paper_duplicate"),
        ("topics", "0006_assignment_paper_live"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [
        migrations.CreateModel(
            name="EmergingCluster",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True, db_index=True)),
                ("updated_at", models.DateTimeField(auto_now=True)),
                ("name", models.CharField(max_length=200)),
                ("terms", models.JSONField(blank=True, default=list)),
                ("example_titles", models.JSONField(blank=True, default=list)),
                ("size", models.PositiveIntegerField()),
                ("recent_count", models.PositiveIntegerField()),
                ("previous_count", models.PositiveIntegerField()),
                ("growth", models.FloatField()),
                ("window_start", models.DateField()),
                ("window_end", models.DateField()),
                ("adopted_at", models.DateTimeField(blank=True, null=True)),
                (
                    "adopted_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "adopted_topic",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="topics.topic",
                    ),
                ),
            ],
            options={
                "ordering": ["-growth", "-size", "pk"],
            },
        ),
        migrations.CreateModel(
            name="EmergingClusterPaper",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("similarity", models.FloatField()),
                (
                    "cluster",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="members",
                        to="topics.emergingcluster",
                    ),
                ),
                (
                    "paper",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="papers.paper",
                    ),
                ),
            ],
            options={
                "ordering": ["cluster", "-similarity", "paper"],
            },
        ),
        migrations.AddField(
            model_name="emergingcluster",
            name="papers",
            field=models.ManyToManyField(
                related_name="+", through="topics.EmergingClusterPaper", to="papers.paper"
            ),
        ),
        migrations.AddConstraint(
            model_name="emergingclusterpaper",
            constraint=models.UniqueConstraint(
                fields=("cluster", "paper"), name="unique_emerging_paper"
            ),
        ),
        migrations.RunPython(emerging_schedule_create, emerging_schedule_delete),
    ]
