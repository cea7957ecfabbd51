"""``manage.py import_reference_page [PATH]``: import the reference topic page."""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from topics.importers.reference import ReferencePageError, reference_page_import

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "data" / "llm-agent-training.json"


class Command(BaseCommand):
    """Thin wrapper over ``topics.importers.reference.reference_page_import``.

    Raises CommandError naming the file for an unreadable file, bad JSON (line and column),
    JSON nested too deeply to read, or malformed data (paper index and field: missing, of the
    wrong type, too long for its column, holding a NUL character, a count out of range), and
    for categories not loaded yet; nothing is written then.
    """

    help = (
        "Import the reference topic page (topics, papers, authors, affiliations and their "
        "topic assignments) from a JSON file. Idempotent. Needs `load_categories` first."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "path",
            nargs="?",
            default=str(DEFAULT_PATH),
            help="JSON file of the reference page (default: topics/data/llm-agent-training.json).",
        )

    def handle(self, *args, path, **options):
        try:
            data = json.loads(Path(path).read_bytes())
        except OSError as error:
            raise CommandError(f"{path}: cannot read: {error.strerror or error}") from None
        except json.JSONDecodeError as error:
            raise CommandError(
                f"{path}: not valid JSON at line {error.lineno}, column {error.colno}: {error.msg}"
            ) from None
        except UnicodeDecodeError as error:
            raise CommandError(f"{path}: not UTF-8 text: {error}") from None
        except RecursionError:
            # json's decoder recurses once per nested array or object.
            raise CommandError(f"{path}: JSON nested too deeply to read") from None
        try:
            result = reference_page_import(data=data)
        except ReferencePageError as error:
            raise CommandError(f"{path}: {error}") from None
        self.stdout.write(
            f"Topics: {result.topics_created} created, {result.topics_updated} updated, "
            f"{result.topics_unchanged} unchanged.\n"
            f"Papers: {result.papers_created} created, {result.papers_updated} updated, "
            f"{result.papers_unchanged} unchanged.\n"
            f"Assignments: {result.assignments_created} created, "
            f"{result.assignments_updated} updated, {result.assignments_removed} removed."
        )
