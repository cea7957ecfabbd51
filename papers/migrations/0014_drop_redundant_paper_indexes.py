"""Drop five single-column indexes another index of the same table leads with.

Each paper written paid for them (about seven index insertions a paper: the paper's category
and submitted date, its versions', authorships' and affiliations' paper), and no query needs
them: ``paper_category_newest_idx`` (primary_category, -submitted, -id) serves every lookup by
category and the category's ``PROTECT`` check, ``paper_newest_idx`` (-submitted, -id) every
range and order on ``submitted``, and the unique (paper, number), (paper, position) and (paper,
affiliation) indexes every lookup by paper, the cascade's included. The same reasoning as the
assignment indexes dropped in topics.

Django's own ``AlterField`` would drop and re-add each foreign key, which re-checks every row
under an exclusive lock; the database side here only drops the indexes, ``CONCURRENTLY``
(non-atomic migration), as the other large index migrations do.
"""

from django.db import migrations, models

from topicsite.migration_indexes import indexes_run

# (table, column(s), index name as Django created it)
INDEXES = (
    ("papers_paper", "primary_category_id", "papers_paper_primary_category_id_20a5b8ce"),
    ("papers_paper", "submitted", "papers_paper_submitted_55223a4e"),
    ("papers_paperversion", "paper_id", "papers_paperversion_paper_id_fb73ce42"),
    ("papers_authorship", "paper_id", "papers_authorship_paper_id_e204c1b4"),
    ("papers_paperaffiliation", "paper_id", "papers_paperaffiliation_paper_id_961d03da"),
)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("papers", "0013_embed_index_reconcile_schedule"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunPython(
                    indexes_run(INDEXES, drop=True),
                    indexes_run(INDEXES, drop=False),
                    elidable=False,
                )
            ],
            state_operations=[
                migrations.AlterField(
                    model_name="authorship",
                    name="paper",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=models.deletion.CASCADE,
                        related_name="authorships",
                        to="papers.paper",
                    ),
                ),
                migrations.AlterField(
                    model_name="paper",
                    name="primary_category",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=models.deletion.PROTECT,
                        related_name="primary_papers",
                        to="papers.category",
                    ),
                ),
                migrations.AlterField(
                    model_name="paper",
                    name="submitted",
                    field=models.DateField(),
                ),
                migrations.AlterField(
                    model_name="paperaffiliation",
                    name="paper",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=models.deletion.CASCADE,
                        related_name="paper_affiliations",
                        to="papers.paper",
                    ),
                ),
                migrations.AlterField(
                    model_name="paperversion",
                    name="paper",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=models.deletion.CASCADE,
                        related_name="versions",
                        to="papers.paper",
                    ),
                ),
            ],
        ),
    ]
