"""Paper affiliations carry their paper's submitted date, and an index walks an affiliation's
papers newest first: ``paper_affil_affil_newest_idx`` (affiliation, submitted desc, paper
desc), in place of 0016's (affiliation, paper).

Why: the API's ``papers/?affiliation=`` list (newest first) walked every paper newest first
and looked each one up among the matching affiliations' papers (733 papers read for a page of
``university`` at a million papers, 11-15 ms); with the date in the index the page is the
newest rows of each matching affiliation, as ``author=`` reads authors' (0015). Counting an
affiliation's papers still reads the index alone (its paper is in it).

Kept by triggers, for every writer, as 0015 keeps authorships' (whose docstring says how the
migration stays safe on a large table: nullable column, triggers before the batched backfill,
the index built ``CONCURRENTLY`` once the values are in, the old one dropped after it). The
paper must be written before its affiliations, as every writer here does. SQLite (the
embedded default) gets the same column, triggers, index and backfill.
"""

from django.db import migrations, models

from topicsite.migration_indexes import index_create, index_drop
from topicsite.migration_submitted import SubmittedCopy

TABLE = "papers_paperaffiliation"
INDEX = "paper_affil_affil_newest_idx"
INDEX_COLUMNS = '"affiliation_id", "submitted" DESC, "paper_id" DESC'
OLD_INDEX = "paper_affil_affil_paper_idx"  # papers 0016
OLD_INDEX_COLUMNS = '"affiliation_id", "paper_id"'

COPY = SubmittedCopy(table=TABLE, row="papers_paper_affiliation", rows="affiliations")
backfill = COPY.backfill


def index_swap(apps, schema_editor):
    index_create(schema_editor, INDEX, TABLE, INDEX_COLUMNS)
    index_drop(schema_editor, OLD_INDEX)


def index_swap_back(apps, schema_editor):
    index_create(schema_editor, OLD_INDEX, TABLE, OLD_INDEX_COLUMNS)
    index_drop(schema_editor, INDEX)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("papers", "0018_cross_list_submitted"),
    ]

    operations = [
        migrations.AddField(
            model_name="paperaffiliation",
            name="submitted",
            field=models.DateField(blank=True, editable=False, null=True),
        ),
        migrations.RunPython(COPY.triggers_create, COPY.triggers_drop, elidable=False),
        migrations.RunPython(backfill, migrations.RunPython.noop, elidable=False),
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunPython(index_swap, index_swap_back, elidable=False),
            ],
            state_operations=[
                migrations.RemoveIndex(model_name="paperaffiliation", name=OLD_INDEX),
                migrations.AddIndex(
                    model_name="paperaffiliation",
                    index=models.Index(fields=["affiliation", "-submitted", "-paper"], name=INDEX),
                ),
            ],
        ),
    ]
