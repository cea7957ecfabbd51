"""Writing paper vectors: :func:`embed_papers`, what the ``embed`` task and ``manage.py embed``
call."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from django.conf import settings
from django.db import transaction

from papers.models import Paper, PaperEmbedding
from papers.signals import papers_embedded
from topicsite.signals import content_changed_on_commit

from .encoder import Encoder, get_encoder, paper_text, text_sha256
from .index import index_writer
from .vectors import load_vectors, vector_to_bytes

logger = logging.getLogger(__name__)


def embed_papers(
    paper_ids: Iterable[int],
    *,
    encoder: Encoder | None = None,
    batch_size: int | None = None,
    update_index: bool = True,
    replace_other_models: bool = True,
    limit: int | None = None,
    progress: Callable[[int], object] | None = None,
) -> int:
    """Embed the papers among ``paper_ids`` whose vector is missing or stale, and return how
    many were embedded (0 when all are up to date; ids of papers that do not exist are ignored).

    A paper's vector is stale when it was made by another model than ``encoder.model_id`` or
    from another text (``text_sha256(paper_text(title, abstract))`` differs), so only a changed
    title or abstract, or a model change, costs an encoding. Papers are encoded
    ``batch_size`` at a time (default ``settings.EMBEDDING_BATCH_SIZE``); each batch's rows
    (vector, model, dimension, hash) are upserted in one transaction, and once it has committed
    the vectors of the committed batches go into the model's index file
    (``papers.embeddings.index``) in one save, unless ``update_index`` is False (a backfill
    that rebuilds the file at its end). After the last
    batch commits, ``papers.signals.papers_embedded`` is sent with the embedded ids.

    The same save adds the stored vectors of the current model, among ``paper_ids``, that
    were up to date but missing from the index file (``IndexWriter.lacking``: a run that
    stored them was killed, or its index update failed, before the file was saved), so
    running the same papers again repairs the file without encoding them. That check looks
    only at these ids: no query when the file holds them all, one for the vectors otherwise.
    A vector stored but replaced in the file by nothing newer (a changed text whose update
    was lost) is found by ``IndexWriter.reconcile`` instead.

    ``replace_other_models=False`` leaves papers whose vector is of another model as they are
    (``manage.py embed`` without ``--all``: a model change is re-embedded when asked for).

    Papers are taken in the order of ``paper_ids``; with ``limit``, only the first ``limit``
    that need it are embedded. ``progress`` is called with the number of papers of each batch
    once it has committed (a progress bar's ``update``).

    A failure to write the index file is logged (with the command that rebuilds it), not
    raised: the vectors are stored.

    ``encoder`` defaults to ``get_encoder()``, which raises ``EncoderUnavailable`` when the
    model files are missing. Raises ValueError when the encoder returns vectors of the wrong
    shape (nothing of that batch is written).
    """
    encoder = encoder or get_encoder()
    batch_size = batch_size or settings.EMBEDDING_BATCH_SIZE
    ids = list(dict.fromkeys(paper_ids))
    if not ids:
        return 0
    current = {
        paper_id: (model, digest)
        for paper_id, model, digest in PaperEmbedding.objects.filter(paper_id__in=ids).values_list(
            "paper_id", "model", "text_sha256"
        )
    }
    texts = {
        paper_id: (title, abstract)
        for paper_id, title, abstract in Paper.objects.filter(pk__in=ids).values_list(
            "pk", "title", "abstract"
        )
    }
    pending: list[tuple[int, str, str]] = []
    stored_ids: list[int] = []  # up to date: their vectors should be in the file already
    for paper_id in ids:
        if paper_id not in texts:
            continue
        text = paper_text(*texts[paper_id])
        digest = text_sha256(text)
        stored = current.get(paper_id)
        if stored is not None and stored[0] != encoder.model_id and not replace_other_models:
            continue
        if stored != (encoder.model_id, digest):
            pending.append((paper_id, text, digest))
        else:
            stored_ids.append(paper_id)
    pending = pending[:limit] if limit is not None else pending
    embedded: dict[int, object] = {}
    try:
        _encode_and_store(encoder, pending, batch_size, embedded, progress)
    finally:
        # The batches that committed, whatever happened to a later one, go into the index
        # file in one save (a save rewrites the whole file), with the stored vectors it lacks.
        if update_index:
            _index_update(encoder, embedded, stored_ids)
    if embedded:
        ids_embedded = list(embedded)
        transaction.on_commit(lambda: papers_embedded.send(sender=Paper, paper_ids=ids_embedded))
        # Paper pages list similar papers: cached pages go out of date.
        content_changed_on_commit()
    return len(embedded)


def _index_update(encoder: Encoder, embedded: dict, stored_ids: list[int]) -> None:
    """Add the ``embedded`` vectors to the index file, with the stored vectors of
    ``stored_ids`` that it lacks; no save when there is nothing to add. The file is derived
    from PostgreSQL, where they are stored already: a failure to write it (a full disk, a
    broken transaction of the caller) is logged, and neither undoes the rows nor hides the
    error that may be on its way. The next run of these papers, or the periodic reconcile,
    adds them."""
    vectors = dict(embedded)
    try:
        writer = index_writer(encoder.model_id, encoder.dimension)
        lacking = writer.lacking(stored_ids)
        if lacking:
            restored = load_vectors(lacking, model=encoder.model_id)
            logger.warning(
                "%d stored vectors were missing from the index file; adding them", len(restored)
            )
            vectors.update(restored)
        if vectors:
            writer.update(vectors)
    except Exception:
        logger.exception(
            "%d vectors stored but not added to the index file; the next embedding of these "
            "papers or the periodic reconcile adds them (now: `manage.py embed "
            "--reconcile-index`; from scratch: `manage.py embed --rebuild-index`)",
            len(vectors),
        )


def _encode_and_store(encoder, pending, batch_size, embedded, progress) -> None:
    for start in range(0, len(pending), batch_size):
        batch = pending[start : start + batch_size]
        matrix = encoder.encode([text for _, text, _ in batch])
        if matrix.shape != (len(batch), encoder.dimension):
            raise ValueError(
                f"the encoder returned shape {matrix.shape} for {len(batch)} texts "
                f"of {encoder.dimension} dimensions"
            )
        rows = [
            PaperEmbedding(
                paper_id=paper_id,
                model=encoder.model_id,
                dimension=encoder.dimension,
                text_sha256=digest,
                vector=vector_to_bytes(vector),
            )
            for (paper_id, _, digest), vector in zip(batch, matrix, strict=True)
        ]
        with transaction.atomic():
            PaperEmbedding.objects.bulk_create(
                rows,
                update_conflicts=True,
                unique_fields=["paper"],
                update_fields=["model", "dimension", "text_sha256", "vector", "embedded_at"],
            )
        for (paper_id, _, _), vector in zip(batch, matrix, strict=True):
            embedded[paper_id] = vector
        if progress is not None:
            progress(len(batch))
