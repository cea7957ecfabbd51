"""``manage.py tag (--all | --ids 1,2,3)``: queue rule tagging for papers."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from papers.models import Paper
from topics.tagging.engine import TAG_CHUNK_SIZE, papers_tag_enqueue
from topicsite.publish import BROKER_ERRORS, broker_unreachable


def _paper_ids(text: str) -> list[int]:
    try:
        ids = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise CommandError(f"--ids {text!r}: expected paper ids separated by commas.") from None
    if not ids:
        raise CommandError("--ids names no paper.")
    return ids


class Command(BaseCommand):
    """Queues ``topics.tasks.tag_papers`` in chunks of 1000 paper ids through ``.delay``: on the
    embedded default the tasks run eagerly here, with a broker they go to the ``tag`` queue.
    Raises CommandError for a malformed ``--ids`` or one naming no stored paper, and when the
    broker (Redis) cannot be reached, in one line."""

    help = "Queue rule tagging for every paper (--all) or for the given paper ids (--ids 1,2,3)."

    def add_arguments(self, parser):
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--all", action="store_true", help="Every stored paper.")
        which.add_argument("--ids", help="Paper ids (primary keys) separated by commas.")

    def handle(self, *args, all, ids, **options):
        if all:
            paper_ids = (
                Paper.objects.order_by("pk")
                .values_list("pk", flat=True)
                .iterator(chunk_size=TAG_CHUNK_SIZE)
            )
        else:
            asked = _paper_ids(ids)
            paper_ids = sorted(Paper.objects.filter(pk__in=asked).values_list("pk", flat=True))
            missing = sorted(set(asked) - set(paper_ids))
            if missing:
                raise CommandError(f"--ids: no paper with id {', '.join(map(str, missing))}.")
        try:
            result = papers_tag_enqueue(paper_ids=paper_ids)
        except BROKER_ERRORS as error:
            raise CommandError(
                broker_unreachable(
                    error,
                    "Some papers may not be queued: run this command again once it is back "
                    "(tagging a paper twice changes nothing).",
                )
            ) from None
        # Without a broker (the embedded default) the chunks ran right here, in this process.
        verb = "Tagged" if settings.CELERY_TASK_ALWAYS_EAGER else "Queued tagging of"
        self.stdout.write(
            f"{verb} {result.papers} papers in {result.chunks} chunks of at most {TAG_CHUNK_SIZE}."
        )
