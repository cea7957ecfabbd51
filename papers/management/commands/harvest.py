"""``manage.py harvest``: harvest arXiv records from recorded files, OAI-PMH, the API or a
snapshot as a stored harvest run, or resume a run that failed or was interrupted.

Runs through the ``papers.tasks.harvest`` / ``harvest_resume`` Celery tasks (in-process when
Celery is eager, the embedded default; queued for a worker otherwise) unless ``--sync`` runs
the service here. Exits non-zero when the run failed (naming it and how to resume it), when it
ended incomplete (arXiv did not deliver all it was asked for: each gap printed with its query
and offset), or when records were rejected or asked-for ids not delivered, printing each with
its source and record. A harvest queued for a worker is reported by the worker (its harvest
run in the admin): the command says so, and exits 0 once the task is queued. A broker (Redis)
that cannot be reached is one line and a non-zero exit.
"""

from pathlib import Path

from celery.exceptions import Retry
from celery.result import EagerResult
from django.core.management.base import BaseCommand, CommandError

from papers.harvest import HarvestLocked, harvest_run, harvest_run_resume
from papers.identifiers import InvalidArxivId, api_identifier, parse_arxiv_id
from papers.models import HarvestRun
from papers.records import ParseError
from papers.sources.base import HarvestError, SourceError, identifiers_from
from papers.sources.recorded import DEFAULT_RECORDED_DIR, ManifestError, NotRecorded
from papers.tasks import harvest, harvest_resume
from topicsite.publish import BROKER_ERRORS, broker_unreachable

# What a harvest can fail with that an operator should read as a message, not a traceback.
EXPECTED_FAILURES = (
    HarvestError,
    HarvestLocked,
    ManifestError,
    NotRecorded,
    OSError,
    ParseError,
    SourceError,
    ValueError,
)


class Command(BaseCommand):
    help = (
        "Harvest arXiv records and store them as papers, as a harvest run. Examples: "
        "harvest --recorded; harvest --oai --set cs --from 2024-01-01; harvest --oai "
        "--incremental; harvest --atom --id-list 2409.01234,hep-th/9901001; "
        "harvest --snapshot file.jsonl.gz; harvest --resume 12"
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
        mode.add_argument(
            "--resume",
            type=int,
            metavar="RUN_ID",
            help="resume a harvest run that failed, paused or was interrupted",
        )

        oai = parser.add_argument_group("OAI-PMH options")
        oai.add_argument(
            "--set",
            dest="sets",
            action="append",
            metavar="SET",
            help="arXiv set, e.g. cs or physics:hep-th; repeat for several "
            "(default: the ARXIV_OAI_SETS setting)",
        )
        oai.add_argument("--from", dest="from_date", help="first datestamp, YYYY-MM-DD")
        oai.add_argument("--until", dest="until_date", help="last datestamp, YYYY-MM-DD")
        oai.add_argument(
            "--incremental",
            action="store_true",
            help="from ARXIV_OAI_LOOKBACK_DAYS days before the last incremental harvest "
            "started (what beat runs)",
        )
        oai.add_argument("--metadata-prefix", default="arXivRaw", help="arXivRaw, arXiv or oai_dc")
        oai.add_argument("--resumption-token", help="continue a list from this token")
        oai.add_argument(
            "--identifiers",
            help="comma-separated arXiv identifiers to fetch with GetRecord, any spelling "
            "(2409.01234v2, arXiv:2409.01234, an abs or pdf URL, the arXiv DOI); each is asked "
            "for by its bare id",
        )

        atom = parser.add_argument_group("arXiv API options")
        atom.add_argument(
            "--id-list",
            help="comma-separated arXiv identifiers, any spelling (as --identifiers); a "
            "version given is kept, so that version is fetched",
        )
        atom.add_argument("--query", help="search query in the API's syntax, e.g. cat:cs.CL")
        atom.add_argument("--start", type=int, default=0, help="0-based offset of the first result")
        atom.add_argument("--max-results", type=int, help="results wanted (default 100)")

        parser.add_argument(
            "--sync", action="store_true", help="run here, without going through Celery"
        )

    def handle(self, *args, **options):
        try:
            summary = self._run(options)
        except Retry as retry:
            # Run eagerly, the task's retry cannot be scheduled: report the network failure.
            raise CommandError(_described(retry.exc)) from retry.exc
        except EXPECTED_FAILURES as error:
            raise CommandError(_described(error)) from error
        except BROKER_ERRORS as error:
            raise CommandError(
                broker_unreachable(
                    error, "Nothing was queued; start it, or harvest here with --sync."
                )
            ) from None
        if summary is None:
            return

        run = HarvestRun.objects.filter(pk=summary["run_id"]).first()
        self.stdout.write(
            f"{summary['kind']}: {summary['pages']} pages, {summary['created']} created, "
            f"{summary['updated']} updated, {summary['unchanged']} unchanged, "
            f"{summary['deleted']} deleted upstream ({summary['marked_deleted']} stored papers "
            f"marked deleted), {summary.get('duplicates', 0)} duplicates, "
            f"{summary['error_count']} errors"
        )
        if run is not None:
            self.stdout.write(
                f"Harvest run #{run.pk} {run.status}: {run.pages_done} pages, "
                f"{run.records_done} records in all."
            )
            if run.window_until is not None:
                sets = ", ".join(run.params.get("sets") or []) or "the whole repository"
                self.stdout.write(
                    f"OAI datestamps {run.window_from or 'from the first record'} to "
                    f"{run.window_until}, sets: {sets}."
                )
        for message in summary["errors"]:
            self.stderr.write(message)
        gaps = summary.get("gaps", [])
        for gap in gaps:
            offset = "" if gap["offset"] is None else f", offset {gap['offset']}"
            self.stderr.write(f"Gap: {gap['query']}{offset}: {gap['message']}")
        if summary["status"] == HarvestRun.Status.INCOMPLETE:
            raise CommandError(
                f"harvest run #{summary['run_id']} is incomplete: arXiv did not deliver "
                f"everything asked for ({len(gaps)} gaps, listed above and on the run)"
            )
        if summary["error_count"]:
            raise CommandError(f"{summary['error_count']} records or pages were rejected")

    def _run(self, options) -> dict | None:
        if options["resume"] is not None:
            run = HarvestRun.objects.filter(pk=options["resume"]).first()
            if run is None:
                raise CommandError(f"there is no harvest run #{options['resume']}")
            if not run.is_resumable:
                self.stdout.write(
                    f"Harvest run #{run.pk} has finished ({run.status}); nothing to resume."
                )
                return None
            if options["sync"]:
                return harvest_run_resume(run=run).as_dict()
            return self._queued(harvest_resume.delay(run.pk), f"resume of run #{run.pk}")
        kind, params = self._kind_and_params(options)
        if options["sync"]:
            return harvest_run(kind=kind, params=params).as_dict()
        return self._queued(harvest.delay(kind, params), kind)

    def _queued(self, result, what: str) -> dict | None:
        if not isinstance(result, EagerResult):
            # A worker runs it; results are not kept (CELERY_TASK_IGNORE_RESULT): the run is
            # listed in the admin.
            self.stdout.write(
                f"Queued harvest task {result.id} ({what}). A worker runs it; its outcome, "
                "rejected records included, is reported there, not here: see Papers › "
                "Harvest runs in the admin, or the worker's log. This command's exit status "
                "does not tell whether records were rejected; harvest with --sync to wait "
                "and exit non-zero when they were."
            )
            return None
        summary = result.get()
        if summary is None:
            raise CommandError(f"{what}: another harvest of the same kind is running; not started")
        return summary

    def _kind_and_params(self, options):
        if options["recorded"]:
            return "recorded", {"directory": str(Path(options["recorded"]).resolve())}
        if options["snapshot"]:
            return "snapshot", {"path": str(Path(options["snapshot"]).resolve())}
        if options["oai"]:
            params = {
                "metadata_prefix": options["metadata_prefix"],
                "sets": options["sets"],
                "from": options["from_date"],
                "until": options["until_date"],
                "resumption_token": options["resumption_token"],
                "identifiers": _ids(
                    "--identifiers", options["identifiers"], lambda text: parse_arxiv_id(text)[0]
                ),
                "incremental": options["incremental"] or None,
            }
            return "oai", {key: value for key, value in params.items() if value}
        if not (options["id_list"] or options["query"]):
            raise CommandError("--atom needs --id-list or --query")
        params = {
            "id_list": _ids("--id-list", options["id_list"], api_identifier),
            "search_query": options["query"],
            "start": options["start"],
            "max_results": options["max_results"],
        }
        return "atom", {key: value for key, value in params.items() if value not in (None, "")}


def _ids(option: str, text: str | None, normalised) -> list[str] | None:
    """The ids of ``option``'s comma-separated ``text`` through ``normalised`` (one of
    ``papers.identifiers``), each once, in order; ``None`` when the option was not given.
    Checked here, before a task is queued, so a worker never receives a harvest that cannot
    start. Raises ``CommandError`` naming the option and the first text that is no arXiv
    identifier, or saying it names none (``--identifiers ""`` or ``,``: dropped, it would
    turn a harvest of a few records into one of the whole repository)."""
    if text is None:
        return None
    try:
        ids = list(dict.fromkeys(normalised(part) for part in identifiers_from(text)))
    except InvalidArxivId as error:
        raise CommandError(f"{option}: {error}") from None
    if not ids:
        raise CommandError(f"{option}: no arXiv identifier given ({text!r})")
    return ids


def _described(error: BaseException) -> str:
    """The error's message with its notes (the failed run and how to resume it)."""
    return "\n".join([str(error), *getattr(error, "__notes__", [])])
