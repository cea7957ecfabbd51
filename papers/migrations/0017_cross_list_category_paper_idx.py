"""Cross-lists by category: index (category, paper) in place of (category).

A ``category`` filter reads the category's papers as ``primary UNION ALL cross-listed``
(``api.filters.PaperFilter.filter_category``). With only (category) indexed, the cross-listed
half fetched every row from the table to learn its paper: 9,179 rows of math.PR were 2,958
heap pages, two thirds of the count of a mid-sized category at 1M papers. With the paper in
the index it is an index-only scan. The new index replaces the foreign key's own (same number
of indexes, so importing costs no more); the ``PROTECT``/cascade checks on a category use it
as they used the old one.

The through table is the one Django makes for ``Paper.cross_lists``, so the index lives in the
database only: no model state names either index, and Django never alters this table's
indexes unless the field itself changes. Built and dropped ``CONCURRENTLY`` on PostgreSQL
(non-atomic migration), as the other large index migrations are
(``topicsite.migration_indexes``).
"""

from django.db import migrations

from topicsite.migration_indexes import index_replace

TABLE = "papers_paper_cross_lists"
NEW = "paper_cross_list_category_paper_idx"
OLD = "papers_paper_cross_lists_category_id_c31a9cc2"


forwards, backwards = index_replace(
    TABLE, (NEW, '"category_id", "paper_id"'), (OLD, '"category_id"')
)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("papers", "0016_paper_affiliation_by_affiliation_idx"),
    ]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
