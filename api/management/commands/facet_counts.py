"""``manage.py facet_counts [--rebuild]``: check the stored whole-corpus facet counts against
a live count of every paper, assignment and authorship, and rebuild them on request."""

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from api.facet_counts import facet_counts_check, facet_counts_rebuild


class Command(BaseCommand):
    help = (
        "Compare the stored facet counts (the API's group_by without filters) with a live "
        "count; --rebuild counts everything again and stores it. Exits 1 when they differ "
        "and --rebuild was not given."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--rebuild", action="store_true", help="store a fresh count of every group"
        )

    def handle(self, *args, rebuild: bool, **options):
        if connection.vendor != "postgresql":
            raise CommandError("Stored facet counts are kept on PostgreSQL only.")
        if rebuild:
            groups = facet_counts_rebuild()
            self.stdout.write(f"Rebuilt the facet counts: {groups:,} groups.")
            return
        wrong = facet_counts_check()
        for (facet, key), (stored, live) in sorted(wrong.items())[:20]:
            self.stdout.write(f"{facet} {key}: stored {stored:,}, live {live:,}")
        if wrong:
            raise CommandError(
                f"{len(wrong):,} facet groups differ from a live count; run with --rebuild."
            )
        self.stdout.write("The stored facet counts equal a live count.")
