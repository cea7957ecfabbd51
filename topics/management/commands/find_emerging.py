"""``manage.py find_emerging``: recompute the emerging clusters (``topics.emerging``)."""

import datetime as dt

from django.core.management.base import BaseCommand, CommandError

from topics.emerging import (
    DISTANCE_THRESHOLD,
    MIN_SIZE,
    WINDOW_WEEKS,
    emerging_clusters_refresh,
)


class Command(BaseCommand):
    """Calls ``topics.emerging.emerging_clusters_refresh`` here and prints each cluster: size,
    growth, name terms. Raises CommandError for a bad option, naming it."""

    help = (
        "Cluster the recent papers no topic fits (no accepted or pending assignment) on their "
        "embeddings and store the clusters for curators (admin: Emerging clusters)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--weeks", type=int, default=WINDOW_WEEKS, help="Window, in weeks.")
        parser.add_argument(
            "--as-of", type=dt.date.fromisoformat, help="Last day of the window (YYYY-MM-DD)."
        )
        parser.add_argument(
            "--distance-threshold",
            type=float,
            default=DISTANCE_THRESHOLD,
            help="Cosine distance at which clusters are cut (0 to 2).",
        )
        parser.add_argument("--min-size", type=int, default=MIN_SIZE, help="Smallest cluster.")

    def handle(self, *args, weeks, as_of, distance_threshold, min_size, **options):
        try:
            clusters = emerging_clusters_refresh(
                as_of=as_of, weeks=weeks, distance_threshold=distance_threshold, min_size=min_size
            )
        except ValueError as error:
            raise CommandError(str(error)) from None
        for cluster in clusters:
            self.stdout.write(
                f"{cluster.size:>5} papers  growth {cluster.growth:4.1f}x  "
                f"{cluster.name}: {', '.join(cluster.terms)}"
            )
        self.stdout.write(self.style.SUCCESS(f"{len(clusters)} emerging clusters."))
