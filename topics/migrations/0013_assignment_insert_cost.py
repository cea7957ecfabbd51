"""Make each machine-made assignment cheaper to insert (tagging writes thousands a second).

1. **The decider's index only where there is a decider.** Machine-made assignments, nearly all
   of them, have none; the full index took an entry for each. The partial index serves what
   the full one did: a curator's decisions, and the SET NULL when a user is deleted (``WHERE
   decided_by_id = %s`` implies the index's condition).
2. **The paper's submitted date and liveness given by the insert.** Migration 0005's trigger
   looked the paper up once per inserted row (a PL/pgSQL call and a query each: 4.7 µs a row,
   a fifth of an assignment's insert); tagging's bulk INSERT now joins the paper itself and
   gives ``submitted`` and ``paper_live``, so the insert trigger runs only for a row whose
   ``submitted`` is not given (every ORM insert: Django sends NULL for a field nobody set).
   Moving an assignment to another paper still always runs it, as before.

On PostgreSQL the indexes are built and dropped ``CONCURRENTLY`` (a non-atomic migration), as
0012 does; Django's own ``AlterField`` would drop and re-add the foreign key under an
exclusive lock. SQLite (the embedded default) gets the same indexes; its triggers (AFTER
triggers, migration 0005) are unchanged.
"""

from django.conf import settings
from django.db import migrations, models

from topicsite.migration_indexes import index_create, index_drop

OLD_INDEX = "topics_assignment_decided_by_id_aa5d40ad"
NEW_INDEX = "assignment_decided_by_idx"
TABLE = "topics_assignment"
COLUMN = '"decided_by_id"'

POSTGRES_TRIGGER_SPLIT = """
DROP TRIGGER IF EXISTS topics_assignment_submitted ON topics_assignment;
CREATE TRIGGER topics_assignment_submitted
    BEFORE INSERT ON topics_assignment
    FOR EACH ROW WHEN (NEW.submitted IS NULL)
    EXECUTE FUNCTION topics_assignment_set_submitted();
CREATE TRIGGER topics_assignment_moved
    BEFORE UPDATE OF paper_id ON topics_assignment
    FOR EACH ROW EXECUTE FUNCTION topics_assignment_set_submitted();
"""
# Back to migration 0005's single trigger (the function is 0006's, unchanged here).
POSTGRES_TRIGGER_JOIN = """
DROP TRIGGER IF EXISTS topics_assignment_moved ON topics_assignment;
DROP TRIGGER IF EXISTS topics_assignment_submitted ON topics_assignment;
CREATE TRIGGER topics_assignment_submitted
    BEFORE INSERT OR UPDATE OF paper_id ON topics_assignment
    FOR EACH ROW EXECUTE FUNCTION topics_assignment_set_submitted();
"""


def _indexes(forwards: bool):
    def run(apps, schema_editor):
        if forwards:
            index_create(schema_editor, NEW_INDEX, TABLE, COLUMN, where=f"{COLUMN} IS NOT NULL")
            index_drop(schema_editor, OLD_INDEX)
        else:
            index_create(schema_editor, OLD_INDEX, TABLE, COLUMN)
            index_drop(schema_editor, NEW_INDEX)

    return run


def _triggers(forwards: bool):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(POSTGRES_TRIGGER_SPLIT if forwards else POSTGRES_TRIGGER_JOIN)

    return run


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("topics", "0012_assignment_redundant_indexes_dropped"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(
            _triggers(forwards=True), _triggers(forwards=False), atomic=True, elidable=False
        ),
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunPython(
                    _indexes(forwards=True), _indexes(forwards=False), elidable=False
                )
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="assignment",
                    name="decided_by",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=models.deletion.SET_NULL,
                        related_name="assignment_decisions",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                migrations.AddIndex(
                    model_name="assignment",
                    index=models.Index(
                        condition=models.Q(decided_by__isnull=False),
                        fields=["decided_by"],
                        name="assignment_decided_by_idx",
                    ),
                ),
            ],
        ),
    ]
