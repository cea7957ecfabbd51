"""``manage.py load_categories``: store arXiv's category taxonomy."""

from django.core.management.base import BaseCommand

from papers.categories import category_sync


class Command(BaseCommand):
    help = "Create or update every canonical arXiv category from the bundled taxonomy."

    def handle(self, *args, **options):
        count = category_sync()
        self.stdout.write(self.style.SUCCESS(f"{count} categories loaded."))
