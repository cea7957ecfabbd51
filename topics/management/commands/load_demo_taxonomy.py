"""``manage.py load_demo_taxonomy``: a topic per arXiv archive of the stored papers."""

from django.core.management.base import BaseCommand

from topics.importers.demo import demo_taxonomy_load


class Command(BaseCommand):
    """Thin wrapper over ``topics.importers.demo.demo_taxonomy_load``; idempotent."""

    help = (
        "Create a topic per arXiv archive present among the stored papers, under a topic per "
        "arXiv group, with category rules; then run `tag --all` to place the papers."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--no-tag-hint",
            action="store_true",
            help="Do not suggest `tag --all` afterwards (the demo runs it next).",
        )

    def handle(self, *args, no_tag_hint=False, **options):
        result = demo_taxonomy_load()
        self.stdout.write(
            f"Archives among stored papers: {result.archives}. Topics created: "
            f"{result.groups_created} groups, {result.archives_created} archives. "
            f"Rules set or changed: {result.rules_set}."
        )
        changed = result.groups_created or result.archives_created or result.rules_set
        if changed and not no_tag_hint:
            self.stdout.write("Run `manage.py tag --all` to apply the rules to stored papers.")
