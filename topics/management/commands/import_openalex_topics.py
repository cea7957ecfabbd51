"""``manage.py import_openalex_topics [PATH] [--domain NAME] [--field NAME]``."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from topics.importers.taxonomies import (
    TaxonomyFileError,
    openalex_topics_import,
    openalex_topics_parse,
)

DEFAULT_PATH = (
    Path(__file__).resolve().parents[2] / "data" / "openalex" / "openalex_topics_2024-09.csv"
)


class Command(BaseCommand):
    """Thin wrapper over ``topics.importers.taxonomies.openalex_topics_parse`` and
    ``openalex_topics_import``.

    Raises CommandError naming the file for an unreadable or malformed file (with the line),
    and naming the known names for a ``--domain``/``--field`` that matches none; nothing is
    written then.
    """

    help = (
        "Import OpenAlex's topic tree (domain > field > subfield > topic, 4,516 topics) as "
        "topics, each OpenAlex topic with a starting rule built from its name and description. "
        "Idempotent. Then run `tag --all` to place the stored papers."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "path",
            nargs="?",
            default=str(DEFAULT_PATH),
            help="OpenAlex topics CSV (default: topics/data/openalex/openalex_topics_2024-09.csv).",
        )
        parser.add_argument("--domain", help="Only this domain, e.g. 'Physical Sciences'.")
        parser.add_argument("--field", help="Only this field, e.g. 'Computer Science'.")

    def handle(self, *args, path, domain, field, **options):
        try:
            with Path(path).open(encoding="utf-8", newline="") as handle:
                topics = openalex_topics_parse(handle, source=path)
        except OSError as error:
            raise CommandError(f"{path}: cannot read: {error.strerror or error}") from None
        except UnicodeDecodeError as error:
            raise CommandError(f"{path}: not UTF-8 text: {error}") from None
        except TaxonomyFileError as error:
            raise CommandError(str(error)) from None
        try:
            result = openalex_topics_import(topics=topics, domain=domain, field=field)
        except ValueError as error:
            raise CommandError(str(error)) from None
        created = ", ".join(
            f"{result.created.get(level, 0)} {level}s"
            for level in ("domain", "field", "subfield", "topic")
        )
        self.stdout.write(
            f"OpenAlex topics: created {created}; {result.unchanged} found again and left as "
            f"they are; rules set: {result.rules_set}."
        )
        if result.rules_set:
            self.stdout.write("Run `manage.py tag --all` to apply the new rules.")
