"""``manage.py import_snapshot FILE``: backfill from a Kaggle arXiv snapshot, with a progress bar.

Runs :func:`papers.ingest.backfill.snapshot_import` in this process (a backfill is an
operator's job, not a queued task). The bar (tqdm) counts bytes of the file, so it shows the
rate and the time left whatever the number of lines; its label counts papers. Each rejected
line is printed with its line number as soon as it is found; the import goes on, and the
command exits non-zero at the end when any line was rejected. An import that stops part-way
keeps every committed batch: run it again to finish (it is idempotent).
"""

import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from papers.ingest.backfill import (
    DEFAULT_BATCH_SIZE,
    SnapshotImportError,
    SnapshotImportSummary,
    default_workers,
    snapshot_import,
)


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


def non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(text)
    return value


class Command(BaseCommand):
    help = (
        "Import a Kaggle arXiv snapshot (JSON lines, plain or gzip) in bulk, with a progress bar. "
        "Example: import_snapshot arxiv-metadata-oai-snapshot.json.gz --batch-size 10000"
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="the snapshot file (.json, .jsonl or gzip-compressed)")
        parser.add_argument(
            "--batch-size",
            type=positive_int,
            default=DEFAULT_BATCH_SIZE,
            help=f"records per transaction (default {DEFAULT_BATCH_SIZE})",
        )
        parser.add_argument(
            "--workers",
            type=non_negative_int,
            default=None,
            help=(
                "processes parsing the lines while batches are written (default: one per CPU, "
                f"{default_workers()} here; 0: a thread of this process)"
            ),
        )
        parser.add_argument(
            "--no-tag",
            action="store_true",
            help="do not announce the stored papers (no tagging is queued)",
        )

    def handle(self, *args, **options):
        path = Path(options["file"])
        if not path.is_file():
            raise CommandError(f"no such file: {path}")
        # tqdm redraws the line in place: it needs the raw stream, not Django's line wrapper.
        stream = self.stderr._out
        bar = tqdm(
            total=path.stat().st_size,
            unit="B",
            unit_scale=True,
            unit_divisor=1024,
            desc="0 papers",
            file=stream,
            dynamic_ncols=True,
        )
        started = time.monotonic()

        def on_batch(summary: SnapshotImportSummary) -> None:
            rate = summary.papers / max(time.monotonic() - started, 1e-9)
            bar.set_description_str(f"{summary.papers:,} papers ({rate:,.0f}/s)", refresh=False)
            bar.update(summary.bytes_read - bar.n)

        def on_error(error) -> None:
            bar.write(f"rejected: {error}", file=stream)

        try:
            summary = snapshot_import(
                path=path,
                batch_size=options["batch_size"],
                tag=not options["no_tag"],
                workers=options["workers"],
                on_error=on_error,
                on_batch=on_batch,
            )
        except SnapshotImportError as error:
            bar.close()
            self._report(error.summary, time.monotonic() - started)
            raise CommandError(f"{error} -- run the command again to finish") from error
        except OSError as error:
            bar.close()
            raise CommandError(f"cannot read {path}: {error}") from error
        on_batch(summary)
        bar.close()
        self._report(summary, time.monotonic() - started)
        if summary.rejected:
            raise CommandError(f"{summary.rejected} lines were rejected")

    def _report(self, summary: SnapshotImportSummary, seconds: float) -> None:
        self.stdout.write(
            f"{summary.lines} lines: {summary.created} created, {summary.updated} updated, "
            f"{summary.unchanged} unchanged, {summary.rejected} rejected, "
            f"{summary.duplicates} duplicates in {seconds:.1f} s "
            f"({summary.papers / max(seconds, 1e-9):,.0f} papers/s)"
        )
