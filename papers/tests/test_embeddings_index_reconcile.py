"""The index file converges to PostgreSQL (papers/embeddings/index.py, store.py): vectors that
committed but missed the file (the run died, or its index update failed, after the commit)
are added by the next run of the same papers and by the reconcile, without encoding them."""

from datetime import timedelta

import numpy as np
import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_celery_beat.models import PeriodicTask
from usearch.index import Index

from papers import tasks
from papers.embeddings import index as vector_index
from papers.embeddings.index import IndexWriter, index_path, index_writer
from papers.embeddings.store import embed_papers
from papers.embeddings.vectors import load_vectors, vector_to_bytes
from papers.models import PaperEmbedding

from .factories import PaperFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def encodings(encoder, monkeypatch):
    """The real encoder, counting the texts it is asked to encode."""
    counted = []
    encode = encoder.encode

    def counting(texts):
        counted.extend(texts)
        return encode(texts)

    monkeypatch.setattr(encoder, "encode", counting)
    return counted


@pytest.fixture
def papers(db):
    return [
        PaperFactory(title=f"Paper {i}", abstract=f"Abstract number {i} about topic {i}.")
        for i in range(6)
    ]


def file_keys(encoder) -> set[int]:
    index = Index.restore(str(index_path(encoder.model_id)), view=True)
    return {int(key) for key in index.keys[0 : len(index)]}


def fail_index_updates(monkeypatch):
    """Index saves raise, as if the worker were killed between the commit and the save."""

    def update(self, vectors, removed=()):
        raise OSError("killed before the index file was saved")

    monkeypatch.setattr(IndexWriter, "update", update)


def filler(count: int, encoder, *, start: int = 0, days_ago: int = 2) -> None:
    """``count`` stored vectors of other papers, embedded ``days_ago`` days ago (a corpus)."""
    rng = np.random.default_rng(start)
    rows = []
    for paper in PaperFactory.create_batch(count):
        vector = rng.normal(size=encoder.dimension).astype(np.float32)
        rows.append(
            PaperEmbedding(
                paper=paper,
                model=encoder.model_id,
                dimension=encoder.dimension,
                text_sha256="0" * 64,
                vector=vector_to_bytes(vector / np.linalg.norm(vector)),
            )
        )
    PaperEmbedding.objects.bulk_create(rows)
    PaperEmbedding.objects.filter(paper__in=[row.paper for row in rows]).update(
        embedded_at=timezone.now() - timedelta(days=days_ago)
    )


def test_a_rerun_adds_the_vectors_whose_index_update_failed_after_the_commit(
    encoder, index_dir, papers, encodings, monkeypatch
):
    ids = [p.pk for p in papers]
    assert embed_papers(ids[:3]) == 3
    with monkeypatch.context() as patch:
        fail_index_updates(patch)
        assert embed_papers(ids[3:]) == 3  # committed; the save was lost
    assert PaperEmbedding.objects.filter(paper_id__in=ids).count() == 6
    assert file_keys(encoder) == set(ids[:3])
    encodings.clear()

    # The redelivered task: nothing to encode, and the file catches up.
    assert tasks.embed_papers(ids[3:]) == 0
    assert encodings == []
    assert file_keys(encoder) == set(ids)


def test_the_check_costs_no_query_when_the_file_holds_the_papers_and_one_when_not(
    encoder, index_dir, papers, encodings, monkeypatch
):
    """The rerun compares only its own ids with the file's keys: its queries do not grow
    with the corpus."""
    ids = [p.pk for p in papers]
    embed_papers(ids)
    encodings.clear()

    def rerun_queries():
        with CaptureQueriesContext(connection) as queries:
            assert embed_papers(ids[:2]) == 0
        return len(queries)

    assert rerun_queries() == 2  # the stored rows and the texts, as before
    filler(40, encoder)
    index_writer(encoder.model_id, encoder.dimension).rebuild()
    assert rerun_queries() == 2

    # Missing from the file: one query for their vectors, then the save (lock, unlock).
    index_writer(encoder.model_id, encoder.dimension).update({}, removed=ids[:2])
    with_gap = rerun_queries()
    assert ids[0] in file_keys(encoder)
    filler(60, encoder, start=1)
    index_writer(encoder.model_id, encoder.dimension).update({}, removed=ids[:2])
    assert rerun_queries() == with_gap <= 2 + 1 + 2
    assert encodings == []


def test_reconcile_adds_what_a_killed_run_left_out_without_encoding(
    encoder, index_dir, papers, encodings
):
    ids = [p.pk for p in papers]
    embed_papers(ids[:2])
    embed_papers(ids[2:], update_index=False)  # as a run killed before its save
    encodings.clear()
    writer = IndexWriter(encoder.model_id, encoder.dimension)

    summary = writer.reconcile()
    assert (summary.added, summary.removed, summary.vectors) == (4, 0, 6)
    assert encodings == []
    assert file_keys(encoder) == set(ids)

    # In step: rows of the last RECONCILE_SLACK are read again, nothing is written.
    before = index_path(encoder.model_id).stat()
    assert writer.reconcile().added == 0
    after = index_path(encoder.model_id).stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_reconcile_reads_only_rows_embedded_since_its_watermark(encoder, index_dir, papers):
    """After the first reconcile, one reads the rows embedded since the last (less the
    slack), in a number of queries that does not grow with the corpus."""
    filler(30, encoder)
    writer = IndexWriter(encoder.model_id, encoder.dimension)
    assert writer.reconcile().checked == 30  # the first reads every row
    embed_papers([p.pk for p in papers], update_index=False)

    with CaptureQueriesContext(connection) as queries:
        summary = writer.reconcile()
    assert (summary.checked, summary.added) == (len(papers), len(papers))
    small = len(queries)

    filler(70, encoder, start=1, days_ago=3)  # older than the watermark: taken as indexed
    PaperEmbedding.objects.filter(paper_id__in=[p.pk for p in papers]).update(
        embedded_at=timezone.now() - timedelta(days=1)
    )
    # Rows embedded since the file's watermark; rebuilding resets it to now.
    writer.rebuild()
    embed_papers([PaperFactory().pk], update_index=False)
    with CaptureQueriesContext(connection) as queries:
        summary = writer.reconcile()
    assert (summary.checked, summary.added) == (1, 1)
    assert len(queries) == small


def test_reconcile_replaces_a_vector_whose_replacement_missed_the_file(
    encoder, index_dir, papers, encodings, monkeypatch
):
    """A changed abstract re-embedded, its save lost: the file holds the old vector under the
    right key, which a rerun cannot tell; the reconcile compares the vectors."""
    embed_papers([p.pk for p in papers])
    paper = papers[2]
    paper.abstract = "Option pricing under stochastic volatility for energy futures."
    paper.save()
    with monkeypatch.context() as patch:
        fail_index_updates(patch)
        assert embed_papers([paper.pk]) == 1
    encodings.clear()
    summary = IndexWriter(encoder.model_id, encoder.dimension).reconcile()
    assert (summary.added, summary.removed) == (1, 0)
    assert encodings == []
    index = Index.restore(str(index_path(encoder.model_id)), view=True)
    stored = load_vectors([paper.pk], model=encoder.model_id)[paper.pk]
    [held] = index.get(np.array([paper.pk], dtype=np.uint64), dtype=np.float32)
    assert np.abs(held - stored).max() <= vector_index.SAME_VECTOR_TOLERANCE


def test_reconcile_removes_deleted_papers_and_vectors_of_another_model(encoder, index_dir, papers):
    embed_papers([p.pk for p in papers])
    papers[0].delete()  # its row goes with it
    PaperEmbedding.objects.filter(paper=papers[1]).update(model="another/model")
    summary = IndexWriter(encoder.model_id, encoder.dimension).reconcile()
    assert summary.removed == 2
    assert file_keys(encoder) == {p.pk for p in papers[2:]}


def test_a_writer_without_a_file_starts_from_the_table(encoder, index_dir, papers):
    """The file deleted (or never written while rows were stored): the next save holds every
    stored vector, not only the next batch, which would hide the others from readers."""
    embed_papers([p.pk for p in papers[:4]], update_index=False)
    embed_papers([p.pk for p in papers[4:]])
    assert file_keys(encoder) == {p.pk for p in papers}


def test_the_command_and_the_periodic_task_reconcile(encoder, index_dir, papers, capsys):
    ids = [p.pk for p in papers]
    embed_papers(ids[:2])
    embed_papers(ids[2:4], update_index=False)
    call_command("embed", "--reconcile-index", verbosity=0)
    assert "2 vectors added" in capsys.readouterr().out
    assert file_keys(encoder) == set(ids[:4])

    embed_papers(ids[4:], update_index=False)
    tasks.embed_index_reconcile()
    assert file_keys(encoder) == set(ids)
    schedule = PeriodicTask.objects.get(task="papers.tasks.embed_index_reconcile")
    assert schedule.enabled and schedule.interval.every == 10
    router = tasks.embed_index_reconcile.app.amqp.router
    assert router.route({}, tasks.embed_index_reconcile.name)["queue"].name == "embed"


def test_a_plain_embed_run_ends_with_a_reconcile(encoder, index_dir, papers, capsys):
    embed_papers([p.pk for p in papers[:3]])
    embed_papers([p.pk for p in papers[3:]], update_index=False)
    call_command("embed", verbosity=0)
    assert "Reconciled" in capsys.readouterr().out
    assert file_keys(encoder) == {p.pk for p in papers}
