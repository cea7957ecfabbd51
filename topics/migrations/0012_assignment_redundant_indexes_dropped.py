"""Drop four indexes of the assignments and their history that nothing needs.

Every assignment tagging writes paid for them: ``unique_paper_topic`` (paper, topic) serves
every lookup by paper (and the paper's cascade), ``assignment_topic_state_idx`` (topic,
state) every lookup by topic; the history is read by paper, topic, assignment and date, never
by creation time or decider.

Django's own ``AlterField`` would drop and re-add each foreign key, which re-checks every row
under an exclusive lock; the database side here only drops the indexes, ``CONCURRENTLY`` on
PostgreSQL (a non-atomic migration), as ``papers`` 0014 does.
"""

from django.conf import settings
from django.db import migrations, models

from topicsite.migration_indexes import indexes_run

# (table, column, index name as Django created it)
INDEXES = (
    ("topics_assignment", "paper_id", "topics_assignment_paper_id_378a614d"),
    ("topics_assignment", "topic_id", "topics_assignment_topic_id_6e9877d7"),
    (
        "topics_historicalassignment",
        "created_at",
        "topics_historicalassignment_created_at_0907e13a",
    ),
    (
        "topics_historicalassignment",
        "decided_by_id",
        "topics_historicalassignment_decided_by_id_62ff544b",
    ),
)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("papers", "0012_paper_dois_lower_index"),
        ("topics", "0011_merge_reports_and_author_curation"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunPython(
                    indexes_run(INDEXES, drop=True),
                    indexes_run(INDEXES, drop=False),
                    elidable=False,
                )
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="assignment",
                    name="paper",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=models.deletion.CASCADE,
                        related_name="assignments",
                        to="papers.paper",
                    ),
                ),
                migrations.AlterField(
                    model_name="assignment",
                    name="topic",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=models.deletion.CASCADE,
                        related_name="assignments",
                        to="topics.topic",
                    ),
                ),
                migrations.AlterField(
                    model_name="historicalassignment",
                    name="created_at",
                    field=models.DateTimeField(blank=True, editable=False),
                ),
                migrations.AlterField(
                    model_name="historicalassignment",
                    name="decided_by",
                    field=models.ForeignKey(
                        blank=True,
                        db_constraint=False,
                        db_index=False,
                        null=True,
                        on_delete=models.deletion.DO_NOTHING,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
        ),
    ]
