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

TABLE = "papers_paper_cross_lists"
BATCH = 50_000
INDEX = "cross_list_category_newest_idx"
INDEX_COLUMNS = '"category_id", "submitted" DESC, "paper_id" DESC'
OLD_INDEX = "paper_cross_list_category_paper_idx"  # papers 0017
OLD_INDEX_COLUMNS = '"category_id", "paper_id"'

COLUMN_ADD = f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS submitted date"
COLUMN_DROP = f"ALTER TABLE {TABLE} DROP COLUMN IF EXISTS submitted"
TRIGGERS = f"""
CREATE OR REPLACE FUNCTION papers_cross_list_set_submitted() RETURNS trigger AS $$
BEGIN
    SELECT submitted INTO NEW.submitted FROM papers_paper WHERE id = NEW.paper_id;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS papers_cross_list_submitted ON {TABLE};
CREATE TRIGGER papers_cross_list_submitted
    BEFORE INSERT OR UPDATE OF paper_id ON {TABLE}
    FOR EACH ROW EXECUTE FUNCTION papers_cross_list_set_submitted();
CREATE OR REPLACE FUNCTION papers_paper_submitted_cross_lists() RETURNS trigger AS $$
BEGIN
    UPDATE {TABLE} SET submitted = NEW.submitted
    WHERE paper_id = NEW.id AND submitted IS DISTINCT FROM NEW.submitted;
    RETURN NULL;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS papers_paper_submitted_cross_lists ON papers_paper;
CREATE TRIGGER papers_paper_submitted_cross_lists
    AFTER UPDATE OF submitted ON papers_paper
    FOR EACH ROW WHEN (OLD.submitted IS DISTINCT FROM NEW.submitted)
    EXECUTE FUNCTION papers_paper_submitted_cross_lists();
"""
TRIGGERS_DROP = f"""
DROP TRIGGER IF EXISTS papers_paper_submitted_cross_lists ON papers_paper;
DROP FUNCTION IF EXISTS papers_paper_submitted_cross_lists();
DROP TRIGGER IF EXISTS papers_cross_list_submitted ON {TABLE};
DROP FUNCTION IF EXISTS papers_cross_list_set_submitted();
"""
BACKFILL_BATCH = (
    f"UPDATE {TABLE} x SET submitted = p.submitted FROM papers_paper p"
    " WHERE p.id = x.paper_id AND x.id >= %s AND x.id < %s AND x.submitted IS NULL"
)


def _postgresql(schema_editor) -> bool:
    return schema_editor.connection.vendor == "postgresql"


def column_and_triggers_create(apps, schema_editor):
    if _postgresql(schema_editor):
        # One simple-query string: the column, functions and triggers appear together.
        schema_editor.execute(COLUMN_ADD + ";" + TRIGGERS)


def column_and_triggers_drop(apps, schema_editor):
    if _postgresql(schema_editor):
        schema_editor.execute(TRIGGERS_DROP + COLUMN_DROP)


def backfill(apps, schema_editor):
    """Every cross-list's ``submitted`` from its paper, :data:`BATCH` ids per statement, each
    committed on its own (the migration is not atomic)."""
    if not _postgresql(schema_editor):
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"SELECT min(id), max(id) FROM {TABLE}")
        low, high = cursor.fetchone()
        if low is None:
            return
        for start in range(low, high + 1, BATCH):
            cursor.execute(BACKFILL_BATCH, [start, start + BATCH])
        cursor.execute(f"ANALYZE {TABLE}")


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
