"""Store the submitted year, month and week facets as groups of their own (the fold adds each
day's delta to its periods: ``api.facet_counts``), counted here once from the stored days.
Pending day deltas are not counted here: the fold adds them to their periods when it adds
them to their days."""

from django.db import migrations, models

COUNTS = "api_facetcount"
FOLD_LOCK = 0x61706966616365  # api.facet_counts._FOLD_LOCK
PERIODS = {"submitted_year": "year", "submitted_month": "month", "submitted_week": "week"}
FACET_CHOICES = [
    ("primary_category", "Primary Category"),
    ("submitted_day", "Submitted Day"),
    ("submitted_year", "Submitted Year"),
    ("submitted_month", "Submitted Month"),
    ("submitted_week", "Submitted Week"),
    ("withdrawn", "Withdrawn"),
    ("topic", "Topic"),
    ("author", "Author"),
]


def periods_count(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("SELECT pg_advisory_xact_lock(%s)", [FOLD_LOCK])
    for facet, period in PERIODS.items():
        schema_editor.execute(
            f"""INSERT INTO {COUNTS} (facet, key, count)
            SELECT %s, date_trunc(%s, (DATE '1970-01-01' + key::integer)::timestamp)::date
                - DATE '1970-01-01', sum(count)
            FROM {COUNTS} WHERE facet = 'submitted_day' GROUP BY 2 HAVING sum(count) > 0
            ON CONFLICT (facet, key) DO UPDATE SET count = EXCLUDED.count""",
            [facet, period],
        )


def periods_delete(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DELETE FROM {COUNTS} WHERE facet = ANY(%s)", [list(PERIODS)])


class Migration(migrations.Migration):
    dependencies = [("api", "0005_facet_count_delta_autovacuum")]

    operations = [
        migrations.AlterField(
            model_name="facetcount",
            name="facet",
            field=models.CharField(choices=FACET_CHOICES, max_length=16),
        ),
        migrations.AlterField(
            model_name="facetcountdelta",
            name="facet",
            field=models.CharField(choices=FACET_CHOICES, max_length=16),
        ),
        migrations.RunPython(periods_count, periods_delete),
    ]
