"""A stored full-text vector for papers, replacing 0004's expression index (PostgreSQL only),
trigram indexes for the author and affiliation filters (PostgreSQL only), and an index for
the newest papers of one primary category (every database).

On PostgreSQL ``search_vector`` is a generated column: title weight A, abstract weight B,
'english' configuration, computed by PostgreSQL on every insert and update (the ORM and the
backfill's COPY alike), with the GIN index ``paper_search_vector_idx``. Matching and ranking
read it instead of recomputing ``to_tsvector`` per row. To Django the field is virtual
(``papers.models.StoredSearchVectorField``): ``AddField`` creates nothing, the SQL below does.
SQLite, the embedded default, has no such column; search falls back to substrings there.

Adding a stored generated column rewrites ``papers_paper`` under an exclusive lock (reads
wait meanwhile): nine minutes for the rewrite and the GIN index at a million papers, on this
busy 2-core machine. The indexes are built ``CONCURRENTLY`` (non-atomic migration), as
0004's was.
"""

from django.contrib.postgres.operations import TrigramExtension
from django.db import migrations, models

import papers.models

VECTOR = (
    "setweight(to_tsvector('english'::regconfig, COALESCE(title, '')), 'A') || "
    "setweight(to_tsvector('english'::regconfig, COALESCE(abstract, '')), 'B')"
)
FORWARD = [
    "DROP INDEX CONCURRENTLY IF EXISTS paper_search_idx",
    "ALTER TABLE papers_paper ADD COLUMN IF NOT EXISTS search_vector tsvector "
    f"GENERATED ALWAYS AS ({VECTOR}) STORED",
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS paper_search_vector_idx ON papers_paper "
    "USING gin (search_vector)",
    "ANALYZE papers_paper",
    # The API's author= / affiliation= filters are case-insensitive substrings
    # (UPPER(name) LIKE UPPER('%…%')): trigram indexes serve them without a scan of every name.
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS author_name_trgm_idx ON papers_author "
    "USING gin (UPPER(name::text) gin_trgm_ops)",
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS affiliation_name_trgm_idx ON papers_affiliation "
    "USING gin (UPPER(name::text) gin_trgm_ops)",
]
BACKWARD = [
    "DROP INDEX CONCURRENTLY IF EXISTS author_name_trgm_idx",
    "DROP INDEX CONCURRENTLY IF EXISTS affiliation_name_trgm_idx",
    "DROP INDEX CONCURRENTLY IF EXISTS paper_search_vector_idx",
    "ALTER TABLE papers_paper DROP COLUMN IF EXISTS search_vector",
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS paper_search_idx ON papers_paper USING gin "
    "(to_tsvector('english'::regconfig, COALESCE(title, '') || ' ' || COALESCE(abstract, '')))",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for sql in statements:
                schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    atomic = False

    dependencies = [("papers", "0004_paper_search_index")]

    operations = [
        TrigramExtension(),
        migrations.AddField(
            model_name="paper",
            name="search_vector",
            field=papers.models.StoredSearchVectorField(),
        ),
        migrations.RunPython(_run(FORWARD), _run(BACKWARD), elidable=False),
        migrations.AddIndex(
            model_name="paper",
            index=models.Index(
                fields=["primary_category", "-submitted", "-id"],
                name="paper_category_newest_idx",
            ),
        ),
    ]
