"""Paper affiliations by affiliation: index (affiliation, paper) in place of (affiliation).

``papers/?affiliation=`` counts the distinct papers of the matching affiliations from the
paper affiliations alone (``api.facets.linked_count``); with only (affiliation) indexed, a
common word's count (64 of 274 names hold 16 % of the rows) read the table's rows one by one
or sequentially. With the paper in the index the count is an index-only scan. The new index
replaces the foreign key's own (same number of indexes, so importing costs no more); the
``PROTECT`` check on deleting an affiliation uses it as it used the old one.

Built and dropped ``CONCURRENTLY`` on PostgreSQL (non-atomic migration), as the other large
index migrations are (``topicsite.migration_indexes``).
"""

from django.db import migrations, models

from topicsite.migration_indexes import index_replace

TABLE = "papers_paperaffiliation"
NEW = "paper_affil_affil_paper_idx"
OLD = "papers_paperaffiliation_affiliation_id_a94630a4"


forwards, backwards = index_replace(
    TABLE, (NEW, '"affiliation_id", "paper_id"'), (OLD, '"affiliation_id"')
)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("papers", "0015_authorship_submitted_author_newest_idx"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(forwards, backwards, elidable=False)],
            state_operations=[
                migrations.AlterField(
                    model_name="paperaffiliation",
                    name="affiliation",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=models.deletion.PROTECT,
                        related_name="+",
                        to="papers.affiliation",
                    ),
                ),
                migrations.AddIndex(
                    model_name="paperaffiliation",
                    index=models.Index(
                        fields=["affiliation", "paper"],
                        name="paper_affil_affil_paper_idx",
                    ),
                ),
            ],
        ),
    ]
