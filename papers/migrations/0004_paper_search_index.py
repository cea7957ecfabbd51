"""A GIN index for full-text search over papers' title and abstract (PostgreSQL only).

The indexed expression is exactly the one ``SearchVector("title", "abstract",
config="english")`` compiles to (``api.filters.full_text_vector``), so the planner uses it for
``@@`` matches. Built ``CONCURRENTLY`` (non-atomic migration) so a large table stays writable
meanwhile. SQLite, the embedded default, has no such index: search falls back to substrings.
"""

from django.db import migrations

INDEX_NAME = "paper_search_idx"
CREATE = (
    f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {INDEX_NAME} ON papers_paper USING gin "
    "(to_tsvector('english'::regconfig, "
    "COALESCE(title, '') || ' ' || COALESCE(abstract, '')))"
)
DROP = f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX_NAME}"


def _run(sql):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("papers", "0003_default_harvest_schedule")]

    operations = [migrations.RunPython(_run(CREATE), _run(DROP), elidable=False)]
