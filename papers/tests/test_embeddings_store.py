"""Writing paper vectors (papers/embeddings/store.py) and reading them back (vectors.py)."""

import numpy as np
import pytest
from django.db import transaction

from papers.embeddings.encoder import paper_text, text_sha256
from papers.embeddings.store import embed_papers
from papers.embeddings.vectors import load_vectors, vector_from_bytes, vector_to_bytes
from papers.models import PaperEmbedding
from papers.signals import papers_embedded

from .factories import PaperFactory

pytestmark = pytest.mark.django_db


def test_vector_bytes_round_trip_is_little_endian_float32():
    vector = np.array([1.0, -0.5, 0.25], dtype=np.float64)
    data = vector_to_bytes(vector)
    assert data == np.array([1.0, -0.5, 0.25], dtype="<f4").tobytes()
    assert vector_from_bytes(data).tolist() == [1.0, -0.5, 0.25]
    with pytest.raises(ValueError, match="multiple of 4"):
        vector_from_bytes(b"\x00" * 5)
    with pytest.raises(ValueError, match="one-dimensional"):
        vector_to_bytes(np.zeros((2, 2)))


def test_embed_papers_writes_one_row_per_paper_with_model_and_hash(encoder, index_dir):
    papers = PaperFactory.create_batch(3)
    assert embed_papers([p.pk for p in papers] + [10**9]) == 3
    rows = {row.paper_id: row for row in PaperEmbedding.objects.all()}
    assert set(rows) == {p.pk for p in papers}
    for paper in papers:
        row = rows[paper.pk]
        assert row.model == encoder.model_id
        assert row.dimension == encoder.dimension == 384
        assert row.text_sha256 == text_sha256(paper_text(paper.title, paper.abstract))
        vector = vector_from_bytes(row.vector)
        assert vector.shape == (384,)
        assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-4
        expected = encoder.encode([paper_text(paper.title, paper.abstract)])[0]
        assert float(vector @ expected) > 0.999
    loaded = load_vectors([p.pk for p in papers])
    assert set(loaded) == {p.pk for p in papers}


def test_embed_papers_skips_unchanged_and_re_embeds_a_changed_abstract(encoder, index_dir):
    first, second = PaperFactory.create_batch(2)
    assert embed_papers([first.pk, second.pk]) == 2
    before = {row.paper_id: row.embedded_at for row in PaperEmbedding.objects.all()}
    assert embed_papers([first.pk, second.pk]) == 0
    assert {row.paper_id: row.embedded_at for row in PaperEmbedding.objects.all()} == before

    old_vector = load_vectors([second.pk])[second.pk]
    second.abstract = "Superconductivity of strontium titanate thin films under strain."
    second.save()
    assert embed_papers([first.pk, second.pk]) == 1
    row = PaperEmbedding.objects.get(paper=second)
    assert row.text_sha256 == text_sha256(paper_text(second.title, second.abstract))
    assert row.embedded_at > before[second.pk]
    assert float(vector_from_bytes(row.vector) @ old_vector) < 0.99
    assert PaperEmbedding.objects.get(paper=first).embedded_at == before[first.pk]


def test_a_vector_of_another_model_is_re_embedded_and_not_loaded(encoder, index_dir):
    paper = PaperFactory()
    text = paper_text(paper.title, paper.abstract)
    PaperEmbedding.objects.create(
        paper=paper,
        model="another/model",
        dimension=3,
        text_sha256=text_sha256(text),
        vector=vector_to_bytes(np.array([1.0, 0.0, 0.0])),
    )
    assert load_vectors([paper.pk]) == {}
    assert set(load_vectors([paper.pk], model="another/model")) == {paper.pk}
    assert embed_papers([paper.pk]) == 1
    row = PaperEmbedding.objects.get(paper=paper)
    assert (row.model, row.dimension) == (encoder.model_id, 384)
    assert len(row.vector) == 384 * 4


def test_batches_commit_one_transaction_each(encoder, index_dir, django_assert_max_num_queries):
    papers = PaperFactory.create_batch(5)
    # Two reads, then per batch of 2 (3 batches): savepoint/insert/release at most 3 queries.
    with django_assert_max_num_queries(2 + 3 * 3):
        assert embed_papers([p.pk for p in papers], batch_size=2, update_index=False) == 5
    assert PaperEmbedding.objects.count() == 5


def test_papers_embedded_is_sent_after_commit_with_the_embedded_ids(
    encoder, index_dir, django_capture_on_commit_callbacks
):
    papers = PaperFactory.create_batch(2)
    received = []

    def listener(sender, paper_ids, **kwargs):
        received.append(sorted(paper_ids))

    papers_embedded.connect(listener)
    try:
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            with transaction.atomic():
                embed_papers([p.pk for p in papers])
        assert received == []
        for callback in callbacks:
            callback()
        assert received == [sorted(p.pk for p in papers)]
        with django_capture_on_commit_callbacks(execute=True):
            assert embed_papers([p.pk for p in papers]) == 0
        assert received == [sorted(p.pk for p in papers)]
    finally:
        papers_embedded.disconnect(listener)


def test_an_index_file_that_cannot_be_written_leaves_the_rows_and_says_how_to_rebuild(
    encoder, settings, tmp_path, caplog
):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the index directory should be")
    settings.EMBEDDING_INDEX_DIR = blocker / "vectors"
    paper = PaperFactory()
    assert embed_papers([paper.pk]) == 1
    assert PaperEmbedding.objects.filter(paper=paper).exists()
    assert "manage.py embed --rebuild-index" in caplog.text
