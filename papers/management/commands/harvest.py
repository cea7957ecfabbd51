"""``manage.py harvest``: harvest arXiv records from recorded files, OAI-PMH, the API or a snapshot.

Runs through the ``papers.tasks.harvest`` Celery task (in-process when Celery is eager, the
embedded default; queued for a worker otherwise) unless ``--sync`` runs the service directly.
Exits non-zero when records were rejected, printing each error with its file and record or line.
"""

from pathlib import Path

from celery.exceptions import Retry
from django.core.management.base import BaseCommand, CommandError

from papers.services import harvest_run
from papers.sources import DEFAULT_RECORDED_DIR, HarvestError, ManifestError, NotRecorded
from papers.tasks import harvest


class Command(BaseCommand):
    help = (
        "Harvest arXiv records and store them as papers. Examples: "
        "harvest --recorded; harvest --oai --set cs --from 2024-01-01; "
        "harvest --atom --id-list 2409.01234,hep-th/9901001; harvest --snapshot file.jsonl.gz"
    )

    def add_arguments(self, parser):
        mode = parser.add_mutually_exclusive_group(required=True)
        mode.add_argument(
            "--recorded",
            nargs="?",
            const=str(DEFAULT_RECORDED_DIR),
            metavar="DIR",
            help="replay every response a recorded manifest lists (default papers/recorded/)",
        )
        mode.add_argument("--oai", action="store_true", help="OAI-PMH ListRecords from arXiv")
        mode.add_argument("--atom", action="store_true", help="the arXiv API (/api/query)")
        mode.add_argument("--snapshot", metavar="FILE", help="a Kaggle JSON-lines snapshot")

        oai = parser.add_argument_group("OAI-PMH options")
        oai.add_argument("--set", dest="set_spec", help="arXiv set, e.g. cs or physics:hep-th")
        oai.add_argument("--from", dest="from_date", help="first datestamp, YYYY-MM-DD")
        oai.add_argument("--until", dest="until_date", help="last datestamp, YYYY-MM-DD")
        oai.add_argument("--metadata-prefix", default="arXivRaw", help="arXivRaw, arXiv or oai_dc")
        oai.add_argument("--resumption-token", help="continue a list from this token")

        atom = parser.add_argument_group("arXiv API options")
        atom.add_argument("--id-list", help="comma-separated arXiv identifiers")
        atom.add_argument("--query", help="search query in the API's syntax, e.g. cat:cs.CL")
        atom.add_argument("--start", type=int, default=0, help="0-based offset of the first result")
        atom.add_argument("--max-results", type=int, help="results wanted (default 100)")

        parser.add_argument(
            "--sync", action="store_true", help="run here, without going through Celery"
        )

    def handle(self, *args, **options):
        kind, params = self._kind_and_params(options)
        try:
            if options["sync"]:
                summary = harvest_run(kind=kind, params=params).as_dict()
            else:
                result = harvest.delay(kind, params)
                if not result.ready():
                    self.stdout.write(f"Queued harvest task {result.id} ({kind}).")
                    return
                summary = result.get()
        except (HarvestError, NotRecorded, ManifestError, ValueError, OSError) as error:
            raise CommandError(str(error)) from error
        except Retry as retry:
            # Run eagerly, the task's retry cannot be scheduled: report the network failure.
            raise CommandError(f"harvest failed: {retry.exc}") from retry.exc

        self.stdout.write(
            f"{summary['kind']}: {summary['pages']} pages, {summary['created']} created, "
            f"{summary['updated']} updated, {summary['unchanged']} unchanged, "
            f"{summary['deleted']} deleted upstream, {summary['error_count']} errors"
        )
        if summary["error_count"]:
            for message in summary["errors"]:
                self.stderr.write(message)
            raise CommandError(f"{summary['error_count']} records or pages were rejected")

    def _kind_and_params(self, options):
        if options["recorded"]:
            return "recorded", {"directory": str(Path(options["recorded"]).resolve())}
        if options["snapshot"]:
            return "snapshot", {"path": str(Path(options["snapshot"]).resolve())}
        if options["oai"]:
            params = {
                "metadata_prefix": options["metadata_prefix"],
                "set": options["set_spec"],
                "from": options["from_date"],
                "until": options["until_date"],
                "resumption_token": options["resumption_token"],
            }
            return "oai", {key: value for key, value in params.items() if value}
        if not (options["id_list"] or options["query"]):
            raise CommandError("--atom needs --id-list or --query")
        params = {
            "id_list": options["id_list"],
            "search_query": options["query"],
            "start": options["start"],
            "max_results": options["max_results"],
        }
        return "atom", {key: value for key, value in params.items() if value not in (None, "")}
