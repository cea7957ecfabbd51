"""Index builds and drops for migrations on large tables, shared by the migrations that swap
Django's own index operations for these (``SeparateDatabaseAndState``).

On PostgreSQL both run ``CONCURRENTLY`` (writes go on; the migration must be non-atomic), so
that dropping a foreign key's index does not drop and re-add the key under an exclusive lock
as Django's ``AlterField`` would. SQLite (the embedded default) takes the same statements
without ``CONCURRENTLY``. Both are idempotent (``IF [NOT] EXISTS``), so a migration that was
interrupted can run again.
"""


def _concurrently(schema_editor) -> str:
    return " CONCURRENTLY" if schema_editor.connection.vendor == "postgresql" else ""


def index_create(schema_editor, name: str, table: str, columns: str, where: str = "") -> None:
    """Build index ``name`` on ``table`` (``columns``: SQL, quoted as needed, e.g.
    ``'"author_id", "submitted" DESC'``; ``where``: an SQL condition for a partial index).
    An invalid index of that name, left by an interrupted concurrent build (which ``IF NOT
    EXISTS`` would keep), is dropped and built again."""
    if schema_editor.connection.vendor == "postgresql":
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(
                "SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
                " WHERE c.relname = %s AND NOT i.indisvalid",
                [name],
            )
            if cursor.fetchone():
                index_drop(schema_editor, name)
    condition = f" WHERE {where}" if where else ""
    schema_editor.execute(
        f'CREATE INDEX{_concurrently(schema_editor)} IF NOT EXISTS "{name}" ON "{table}"'
        f" ({columns}){condition}"
    )


def index_drop(schema_editor, name: str) -> None:
    """Drop index ``name`` if it exists."""
    schema_editor.execute(f'DROP INDEX{_concurrently(schema_editor)} IF EXISTS "{name}"')


def indexes_run(indexes, *, drop: bool):
    """A ``RunPython`` function dropping (``drop``) or building the single-column indexes
    ``indexes``: ``(table, column, index name)`` triples, as Django named them."""

    def run(apps, schema_editor):
        for table, column, name in indexes:
            if drop:
                index_drop(schema_editor, name)
            else:
                index_create(schema_editor, name, table, f'"{column}"')

    return run


def index_replace(table: str, new: tuple[str, str], old: tuple[str, str]):
    """``(forwards, backwards)`` ``RunPython`` functions replacing index ``old`` of ``table``
    by ``new`` (each ``(name, columns)``, columns as :func:`index_create` takes them): the new
    one built before the old one is dropped, and the other way back."""

    def forwards(apps, schema_editor):
        index_create(schema_editor, new[0], table, new[1])
        index_drop(schema_editor, old[0])

    def backwards(apps, schema_editor):
        index_create(schema_editor, old[0], table, old[1])
        index_drop(schema_editor, new[0])

    return forwards, backwards
