"""``manage.py import_arxiv_topics [--archive cs --archive hep-th] [--no-categories]``."""

from django.core.management.base import BaseCommand, CommandError

from topics.importers.taxonomies import arxiv_topics_import


class Command(BaseCommand):
    """Thin wrapper over ``topics.importers.taxonomies.arxiv_topics_import``. Raises CommandError
    when the categories are not loaded or an archive code is unknown; nothing is written then."""

    help = (
        "Import arXiv's taxonomy as topics: group > archive > category, each category topic "
        "with that category as its rule. Idempotent; needs `load_categories` first. Then run "
        "`tag --all` to place the stored papers."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--archive",
            action="append",
            dest="archives",
            metavar="CODE",
            help="Only this archive (cs, math, hep-th ...); repeat for more.",
        )
        parser.add_argument(
            "--no-categories",
            action="store_true",
            help="Stop at archives: each archive topic carries all its categories as its rule.",
        )

    def handle(self, *args, archives, no_categories, **options):
        try:
            result = arxiv_topics_import(archives=archives, categories=not no_categories)
        except ValueError as error:
            raise CommandError(str(error)) from None
        created = ", ".join(
            f"{result.created.get(level, 0)} {plural}"
            for level, plural in (
                ("group", "groups"),
                ("archive", "archives"),
                ("category", "categories"),
            )
        )
        self.stdout.write(
            f"arXiv topics: created {created}; {result.unchanged} found again; rules set or "
            f"changed: {result.rules_set}."
        )
        if result.rules_set:
            self.stdout.write("Run `manage.py tag --all` to apply the new rules.")
