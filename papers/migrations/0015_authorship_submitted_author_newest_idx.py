"""Authorships carry their paper's submitted date, and an index walks an author's papers newest
first: ``authorship_author_newest_idx`` (author, submitted desc, paper desc), which replaces
the author foreign key's own index (it leads with the author).

Why: the API's ``papers/?author=`` list (newest first) collected every paper of the matching
authors and fetched each from the heap to sort it by date (58 ms at a million papers for a
common name); the index gives each author's newest papers from the index alone, as
``assignment_topic_newest_idx`` does for a topic's (topics 0005/0006).

``submitted`` is kept by triggers rather than services, for the reason topics 0005 gives:
every writer (the import's COPY, the ORM ingestion, curation, factories, hand-written SQL)
keeps it. Set on insert and when an authorship moves to another paper; rewritten when a
paper's date changes. An author merge moves authorships between authors only: the date
stays right.

Safe on a large table (non-atomic migration, PostgreSQL):

1. the column is added nullable without a default: a catalogue change, no rewrite;
2. the triggers are made before the backfill, so rows written meanwhile are right;
3. the backfill updates :data:`BATCH` authorship ids per statement, each its own
   transaction: row locks on one batch at a time, never the whole table (rows a trigger set
   meanwhile are skipped: ``submitted IS NULL``);
4. the index is built ``CONCURRENTLY`` (writes go on), once the values are in; an invalid
   index left by an interrupted build is dropped and built again;
5. the foreign key's index is dropped ``CONCURRENTLY``.

The backfill writes a new version of every authorship row: the table is twice its size until
(auto)vacuum has passed; run ``VACUUM ANALYZE papers_authorship`` after it on a large
database. SQLite (the embedded default) gets the same column, triggers, index and backfill
(one statement: a demo's table is small).
"""

from django.db import migrations, models

from topicsite.migration_indexes import index_create, index_drop

BATCH = 50_000
INDEX = "authorship_author_newest_idx"
INDEX_COLUMNS = '"author_id", "submitted" DESC, "paper_id" DESC'
# The author foreign key's index, as Django named it (papers 0001).
AUTHOR_FK_INDEX = "papers_authorship_author_id_ac7ce411"

POSTGRES_TRIGGERS = """
CREATE OR REPLACE FUNCTION papers_authorship_set_submitted() RETURNS trigger AS $$
BEGIN
    SELECT submitted INTO NEW.submitted FROM papers_paper WHERE id = NEW.paper_id;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS papers_authorship_submitted ON papers_authorship;
CREATE TRIGGER papers_authorship_submitted
    BEFORE INSERT OR UPDATE OF paper_id ON papers_authorship
    FOR EACH ROW EXECUTE FUNCTION papers_authorship_set_submitted();
CREATE OR REPLACE FUNCTION papers_paper_submitted_authorships() RETURNS trigger AS $$
BEGIN
    UPDATE papers_authorship SET submitted = NEW.submitted
    WHERE paper_id = NEW.id AND submitted IS DISTINCT FROM NEW.submitted;
    RETURN NULL;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS papers_paper_submitted_authorships ON papers_paper;
CREATE TRIGGER papers_paper_submitted_authorships
    AFTER UPDATE OF submitted ON papers_paper
    FOR EACH ROW WHEN (OLD.submitted IS DISTINCT FROM NEW.submitted)
    EXECUTE FUNCTION papers_paper_submitted_authorships();
"""
POSTGRES_TRIGGERS_DROP = """
DROP TRIGGER IF EXISTS papers_paper_submitted_authorships ON papers_paper;
DROP FUNCTION IF EXISTS papers_paper_submitted_authorships();
DROP TRIGGER IF EXISTS papers_authorship_submitted ON papers_authorship;
DROP FUNCTION IF EXISTS papers_authorship_set_submitted();
"""
_SQLITE_SET = (
    "UPDATE papers_authorship SET submitted ="
    " (SELECT submitted FROM papers_paper WHERE id = NEW.paper_id) WHERE id = NEW.id"
)
SQLITE_TRIGGERS = [
    "CREATE TRIGGER IF NOT EXISTS papers_authorship_submitted_insert AFTER INSERT ON"
    f" papers_authorship BEGIN {_SQLITE_SET}; END",
    "CREATE TRIGGER IF NOT EXISTS papers_authorship_submitted_move AFTER UPDATE OF paper_id ON"
    f" papers_authorship BEGIN {_SQLITE_SET}; END",
    "CREATE TRIGGER IF NOT EXISTS papers_paper_submitted_authorships AFTER UPDATE OF submitted"
    " ON papers_paper BEGIN UPDATE papers_authorship SET submitted = NEW.submitted"
    " WHERE paper_id = NEW.id; END",
]
SQLITE_TRIGGERS_DROP = [
    "DROP TRIGGER IF EXISTS papers_authorship_submitted_insert",
    "DROP TRIGGER IF EXISTS papers_authorship_submitted_move",
    "DROP TRIGGER IF EXISTS papers_paper_submitted_authorships",
]
BACKFILL_BATCH = (
    "UPDATE papers_authorship a SET submitted = p.submitted FROM papers_paper p"
    " WHERE p.id = a.paper_id AND a.id >= %s AND a.id < %s AND a.submitted IS NULL"
)
BACKFILL_SQLITE = (
    "UPDATE papers_authorship SET submitted ="
    " (SELECT submitted FROM papers_paper WHERE id = papers_authorship.paper_id)"
    " WHERE submitted IS NULL"
)


def triggers_create(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        # One simple-query string: the functions and triggers appear together.
        schema_editor.execute(POSTGRES_TRIGGERS)
    elif vendor == "sqlite":
        for statement in SQLITE_TRIGGERS:
            schema_editor.execute(statement)
    else:
        raise RuntimeError(f"papers 0015: no submitted triggers for {vendor}")


def triggers_drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_TRIGGERS_DROP)
    else:
        for statement in SQLITE_TRIGGERS_DROP:
            schema_editor.execute(statement)


def backfill(apps, schema_editor):
    """Every authorship's ``submitted`` from its paper; on PostgreSQL :data:`BATCH` ids per
    statement, each committed on its own (the migration is not atomic)."""
    if schema_editor.connection.vendor != "postgresql":
        schema_editor.execute(BACKFILL_SQLITE)
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT min(id), max(id) FROM papers_authorship")
        low, high = cursor.fetchone()
        if low is None:
            return
        for start in range(low, high + 1, BATCH):
            cursor.execute(BACKFILL_BATCH, [start, start + BATCH])
        cursor.execute("ANALYZE papers_authorship")


def _index_run(create: bool, name: str, columns: str):
    def run(apps, schema_editor):
        if create:
            index_create(schema_editor, name, "papers_authorship", columns)
        else:
            index_drop(schema_editor, name)

    return run


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("papers", "0014_drop_redundant_paper_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="authorship",
            name="submitted",
            field=models.DateField(blank=True, editable=False, null=True),
        ),
        migrations.RunPython(triggers_create, triggers_drop, elidable=False),
        migrations.RunPython(backfill, migrations.RunPython.noop, elidable=False),
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunPython(
                    _index_run(True, INDEX, INDEX_COLUMNS),
                    _index_run(False, INDEX, INDEX_COLUMNS),
                    elidable=False,
                ),
                migrations.RunPython(
                    _index_run(False, AUTHOR_FK_INDEX, '"author_id"'),
                    _index_run(True, AUTHOR_FK_INDEX, '"author_id"'),
                    elidable=False,
                ),
            ],
            state_operations=[
                migrations.AddIndex(
                    model_name="authorship",
                    index=models.Index(fields=["author", "-submitted", "-paper"], name=INDEX),
                ),
                migrations.AlterField(
                    model_name="authorship",
                    name="author",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=models.deletion.PROTECT,
                        related_name="authorships",
                        to="papers.author",
                    ),
                ),
            ],
        ),
    ]
