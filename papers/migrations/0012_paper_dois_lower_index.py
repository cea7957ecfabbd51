"""An index for finding a paper by one of its journal DOIs, in any case (PostgreSQL only).

``/api/v1/papers/doi/<DOI>/`` looks a DOI up among ``Paper.dois`` (a JSON list) case-
insensitively (DOI Handbook 2.4): without an index that read every paper (a sequential scan of
a million rows). The GIN index over the lower-cased list (``jsonb_path_ops``, which serves
``@>``) answers it from the index; ``api.selectors.paper_by_doi`` writes the same expression.
Built ``CONCURRENTLY`` (non-atomic migration), as the other large indexes. SQLite, the embedded
default, has none: its lookup reads the papers' DOIs (a demo-sized table).
"""

from django.db import migrations

FORWARD = [
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS paper_dois_lower_idx ON papers_paper "
    "USING gin ((lower(dois::text)::jsonb) jsonb_path_ops)",
]
BACKWARD = ["DROP INDEX CONCURRENTLY IF EXISTS paper_dois_lower_idx"]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for sql in statements:
                schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("papers", "0011_author_variants_history")]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD), elidable=False)]
