"""``manage.py detect_duplicates``: link near-duplicate papers (``papers.duplicates``)."""

from django.core.management.base import BaseCommand, CommandError

from papers.duplicates import duplicates_detect
from papers.models import Paper

BATCH = 500


def _ids(value: str) -> list[int]:
    try:
        ids = [int(part) for part in value.split(",") if part.strip()]
    except ValueError:
        raise CommandError(f"--ids takes paper pks separated by commas, got {value!r}") from None
    if not ids:
        raise CommandError("--ids names no paper")
    return ids


class Command(BaseCommand):
    help = (
        "Compare papers with their candidates and link near-duplicates: the papers named by "
        "--ids, or every live paper, newest first, in batches of 500."
    )

    def add_arguments(self, parser):
        parser.add_argument("--ids", type=_ids, help="Paper pks, separated by commas.")

    def handle(self, *args, ids=None, **options):
        if ids is None:
            ids = list(Paper.objects.live().newest_first().values_list("pk", flat=True))
        else:
            stored = set(Paper.objects.filter(pk__in=ids).values_list("pk", flat=True))
            unknown = [pk for pk in dict.fromkeys(ids) if pk not in stored]
            if unknown:
                raise CommandError(
                    f"--ids names no stored paper with pk {', '.join(map(str, unknown[:10]))}"
                    + (f" (and {len(unknown) - 10} more)" if len(unknown) > 10 else "")
                )
        compared = linked = 0
        for start in range(0, len(ids), BATCH):
            result = duplicates_detect(paper_ids=ids[start : start + BATCH])
            compared += result.compared
            linked += result.linked
        self.stdout.write(
            self.style.SUCCESS(f"{len(ids)} papers, {compared} pairs compared, {linked} linked.")
        )
