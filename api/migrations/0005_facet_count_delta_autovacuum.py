"""Vacuum the facet-count deltas eagerly: the table is a queue (rows appended by triggers,
deleted by every fold), so PostgreSQL's default (vacuum once a fifth of the rows are dead)
leaves a bulk import's hundreds of thousands of dead rows for the next folds to read."""

from django.db import migrations

TABLE = "api_facetcountdelta"


def autovacuum_set(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"ALTER TABLE {TABLE} SET (autovacuum_vacuum_scale_factor = 0, "
            "autovacuum_vacuum_threshold = 10000, autovacuum_vacuum_insert_scale_factor = 0, "
            "autovacuum_vacuum_insert_threshold = 10000)"
        )


def autovacuum_reset(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"ALTER TABLE {TABLE} RESET (autovacuum_vacuum_scale_factor, "
            "autovacuum_vacuum_threshold, autovacuum_vacuum_insert_scale_factor, "
            "autovacuum_vacuum_insert_threshold)"
        )


class Migration(migrations.Migration):
    dependencies = [("api", "0004_fold_facet_counts_schedule")]

    operations = [migrations.RunPython(autovacuum_set, autovacuum_reset)]
