"""The papers that do not count, indexed: ``paper_not_live_idx`` (id) where withdrawn or
deleted, in place of the index on ``withdrawn`` alone.

Why: an author's papers that count (``papers.author_selectors``) were their authorships
joined to each paper's row to test it, one random page of the papers table per authorship:
counting an 850-paper author's papers read 1,050 pages, 12-20 ms when they were not cached,
at a million papers. Their authorships less the few papers that do not count (an anti-join of
two index-only scans) reads about 50 pages: 1.2 ms. The old index on the boolean alone (a
million entries, nearly all ``false``) served no read a plan chose; a query for withdrawn
papers can use the new one, whose condition it implies. One index for one, so an import
writes no more (fewer: only papers that do not count have an entry).

Built and dropped ``CONCURRENTLY`` on PostgreSQL (non-atomic migration), as the other large
index migrations are (``topicsite.migration_indexes``).
"""

from django.db import migrations, models

from topicsite.migration_indexes import index_create, index_drop

TABLE = "papers_paper"
INDEX = "paper_not_live_idx"
# As Django writes models.Q(withdrawn=False, deleted_at__isnull=True) negated (papers.LIVE).
NOT_LIVE = 'NOT ("deleted_at" IS NULL AND NOT "withdrawn")'
OLD_INDEX = "papers_paper_withdrawn_43547ba3"


def forwards(apps, schema_editor):
    index_create(schema_editor, INDEX, TABLE, '"id"', where=NOT_LIVE)
    index_drop(schema_editor, OLD_INDEX)


def backwards(apps, schema_editor):
    index_create(schema_editor, OLD_INDEX, TABLE, '"withdrawn"')
    index_drop(schema_editor, INDEX)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("papers", "0019_paper_affiliation_submitted"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(forwards, backwards, elidable=False)],
            state_operations=[
                migrations.AlterField(
                    model_name="paper",
                    name="withdrawn",
                    field=models.BooleanField(default=False),
                ),
                migrations.AddIndex(
                    model_name="paper",
                    index=models.Index(
                        fields=["id"],
                        condition=models.Q(
                            ("deleted_at__isnull", True), ("withdrawn", False), _negated=True
                        ),
                        name="paper_not_live_idx",
                    ),
                ),
            ],
        ),
    ]
