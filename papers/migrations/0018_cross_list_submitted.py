"""Cross-lists carry their paper's submitted date, and an index walks a category's cross-listed
papers newest first: ``cross_list_category_newest_idx`` (category, submitted desc, paper desc),
in place of 0017's (category, paper).

Why: a ``category`` list (``api.filters.PaperFilter.filter_category``) newest first either
walked every paper newest first until a page matched (5,300 rows for a 842-paper category:
15 ms at 1M papers) or read every paper of the category through the union to sort them
(8-19 ms for 800-17,000 papers). With the primary category's papers already in
``paper_category_newest_idx`` (category, submitted desc, id desc), the cross-listed half was
the only part that could not be read newest first; now a page is the newest ``page_size + 1``
rows of two index ranges per category (``papers.category_selectors``), whatever the category's
size, and a capped count reads at most that many index entries.

The through table is the one Django makes for ``Paper.cross_lists`` (0017 says why its
indexes live in the database only); the column does too: the ORM never writes it (triggers
do, for every writer: the import's COPY, the ORM, the admin, hand-written SQL) and only
``papers.category_selectors`` reads it, in SQL. Set on insert and when a cross-list moves to
another paper; rewritten when a paper's date changes, as papers 0015 keeps authorships'.
As there, the paper must be written first: a cross-list inserted before its paper in one
transaction (the foreign key is deferred) would keep no date. Every writer here stores the
paper first (``papers.ingest``, the admin, ``bench/make_corpus.py``).

PostgreSQL only, as the walk that reads it: the embedded SQLite default keeps 0017's index
and no column (its lists read the category as before). Safe on a large table, as 0015: the
column is added nullable (no rewrite), the triggers come before the batched backfill, the
index is built ``CONCURRENTLY`` once the values are in and 0017's is dropped after it.
"""

from django.db import migrations

from topicsite.migration_indexes import index_create, index_drop
from topicsite.migration_submitted import SubmittedCopy

TABLE = "papers_paper_cross_lists"
INDEX = "cross_list_category_newest_idx"
INDEX_COLUMNS = '"category_id", "submitted" DESC, "paper_id" DESC'
OLD_INDEX = "paper_cross_list_category_paper_idx"  # papers 0017
OLD_INDEX_COLUMNS = '"category_id", "paper_id"'

COPY = SubmittedCopy(table=TABLE, row="papers_cross_list", rows="cross_lists", sqlite=False)
COLUMN_ADD = f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS submitted date"
COLUMN_DROP = f"ALTER TABLE {TABLE} DROP COLUMN IF EXISTS submitted"


def _postgresql(schema_editor) -> bool:
    return schema_editor.connection.vendor == "postgresql"


def column_and_triggers_create(apps, schema_editor):
    if _postgresql(schema_editor):
        schema_editor.execute(COLUMN_ADD)
    COPY.triggers_create(apps, schema_editor)


def column_and_triggers_drop(apps, schema_editor):
    COPY.triggers_drop(apps, schema_editor)
    if _postgresql(schema_editor):
        schema_editor.execute(COLUMN_DROP)


backfill = COPY.backfill


def index_swap(apps, schema_editor):
    if _postgresql(schema_editor):
        index_create(schema_editor, INDEX, TABLE, INDEX_COLUMNS)
        index_drop(schema_editor, OLD_INDEX)


def index_swap_back(apps, schema_editor):
    if _postgresql(schema_editor):
        index_create(schema_editor, OLD_INDEX, TABLE, OLD_INDEX_COLUMNS)
        index_drop(schema_editor, INDEX)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("papers", "0017_cross_list_category_paper_idx"),
    ]

    operations = [
        migrations.RunPython(column_and_triggers_create, column_and_triggers_drop, elidable=False),
        migrations.RunPython(backfill, migrations.RunPython.noop, elidable=False),
        migrations.RunPython(index_swap, index_swap_back, elidable=False),
    ]
