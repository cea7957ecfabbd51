"""The nearest-neighbour index (papers/embeddings/index.py): kept in step by embedding,
memory-mapped by readers, exact without a file, safe with two writers."""

import threading

import numpy as np
import pytest
from django.db import connection

from papers.embeddings import index as vector_index
from papers.embeddings.encoder import paper_text
from papers.embeddings.index import IndexWriter, index_path, nearest
from papers.embeddings.similar import similar_ranked
from papers.embeddings.store import embed_papers
from papers.embeddings.vectors import load_vectors, vector_to_bytes
from papers.models import Paper, PaperEmbedding

from .factories import PaperFactory

pytestmark = pytest.mark.django_db

ABSTRACTS = [
    "Large language model agents learn to call tools through reinforcement learning.",
    "Superconductivity in strontium titanate thin films grown by molecular beam epitaxy.",
    "A survey of dark matter searches with liquid xenon detectors underground.",
    "Graph neural networks predict the properties of small organic molecules.",
    "Stochastic volatility models for pricing options on commodity futures.",
]


@pytest.fixture
def papers(db):
    return [
        PaperFactory(title=f"Paper {i}", abstract=abstract) for i, abstract in enumerate(ABSTRACTS)
    ]


def reopen_now(monkeypatch):
    monkeypatch.setattr(vector_index, "REOPEN_CHECK_SECONDS", 0.0)


def test_embedding_writes_the_index_file_and_nearest_finds_the_paper(encoder, index_dir, papers):
    embed_papers([p.pk for p in papers])
    assert index_path(encoder.model_id).exists()
    assert index_path(encoder.model_id).parent == index_dir
    # Readable by web processes running as another user than the embed worker.
    assert index_path(encoder.model_id).stat().st_mode & 0o777 == 0o644
    query = encoder.encode(["superconducting oxide films"])[0]
    found = nearest(query, 3)
    assert found[0][0] == papers[1].pk
    assert len(found) == 3
    scores = [score for _, score in found]
    assert scores == sorted(scores, reverse=True)
    assert all(-1.0 <= score <= 1.0001 for score in scores)


def test_index_search_agrees_with_exact_search_over_postgresql(encoder, index_dir, papers):
    embed_papers([p.pk for p in papers])
    query = encoder.encode(["molecules and neural networks"])[0]
    from_index = nearest(query, 5)
    index_path(encoder.model_id).unlink()
    vector_index._forget_reader(index_path(encoder.model_id))
    exact = nearest(query, 5)
    assert from_index[0][0] == exact[0][0]
    assert {pid for pid, _ in from_index} == {pid for pid, _ in exact}
    exact_scores = dict(exact)
    for pid, score in from_index:
        assert score == pytest.approx(exact_scores[pid], abs=2e-3)  # the file is half precision


def test_a_new_paper_becomes_findable_and_a_withdrawn_one_is_not(
    encoder, index_dir, papers, monkeypatch
):
    reopen_now(monkeypatch)
    embed_papers([p.pk for p in papers])
    query = encoder.encode(["option pricing with stochastic volatility"])[0]
    assert nearest(query, 1)[0][0] == papers[4].pk

    newcomer = PaperFactory(
        title="Pricing commodity options", abstract="Option pricing under stochastic volatility."
    )
    embed_papers([newcomer.pk])
    assert nearest(query, 1)[0][0] == newcomer.pk

    Paper.objects.filter(pk=newcomer.pk).update(withdrawn=True)
    found = [pid for pid, _ in nearest(query, 5)]
    assert newcomer.pk not in found
    assert found[0] == papers[4].pk
    assert len(found) == 5

    Paper.objects.filter(pk=papers[4].pk).delete()
    assert papers[4].pk not in [pid for pid, _ in nearest(query, 5)]


def test_exclude_and_k_larger_than_the_corpus(encoder, index_dir, papers):
    embed_papers([p.pk for p in papers])
    vector = load_vectors([papers[0].pk])[papers[0].pk]
    found = nearest(vector, 50, exclude=[papers[0].pk])
    assert sorted(pid for pid, _ in found) == sorted(p.pk for p in papers[1:])
    with pytest.raises(ValueError, match="k must be"):
        nearest(vector, 0)


def test_a_changed_abstract_replaces_the_vector_in_the_index(
    encoder, index_dir, papers, monkeypatch
):
    reopen_now(monkeypatch)
    embed_papers([p.pk for p in papers])
    query = encoder.encode(["dark matter detectors"])[0]
    assert nearest(query, 1)[0][0] == papers[2].pk
    papers[2].abstract = "Option pricing under stochastic volatility for energy futures."
    papers[2].save()
    embed_papers([papers[2].pk])
    assert nearest(query, 1)[0][0] != papers[2].pk
    index = vector_index._open_index(index_path(encoder.model_id))
    assert len(index) == len(papers)


def test_rebuild_reads_postgresql(encoder, index_dir, papers):
    embed_papers([p.pk for p in papers], update_index=False)
    path = index_path(encoder.model_id)
    assert not path.exists()
    writer = IndexWriter(encoder.model_id, encoder.dimension)
    assert writer.rebuild() == len(papers)
    vector = encoder.encode([paper_text(papers[3].title, papers[3].abstract)])[0]
    assert nearest(vector, 1)[0][0] == papers[3].pk


@pytest.mark.parametrize("how", ["nan", "short"])
@pytest.mark.parametrize("search", ["rebuilt file", "reconciled file", "exact"])
def test_a_damaged_stored_vector_is_never_found_nor_an_error(
    encoder, index_dir, papers, monkeypatch, how, search
):
    """A stored vector of NaNs or cut short (a damaged row): a file rebuilt or reconciled from
    PostgreSQL leaves it out, and so does the exact search; the other papers are found, with
    finite scores. It used to fail the rebuild, the reconcile and the exact search (rows that
    cannot be stacked), or to come back with a NaN score: similar papers and semantic search
    answered 500 (JSON has no NaN). Its own paper has no similar papers."""
    reopen_now(monkeypatch)
    embed_papers([p.pk for p in papers])
    vector = load_vectors([papers[1].pk])[papers[1].pk]
    damaged = np.full_like(vector, np.nan) if how == "nan" else vector[:100]
    PaperEmbedding.objects.filter(paper=papers[1]).update(vector=vector_to_bytes(damaged))
    writer = IndexWriter(encoder.model_id, encoder.dimension)
    if search == "rebuilt file":
        assert writer.rebuild() == len(papers) - 1
    elif search == "reconciled file":
        assert writer.reconcile().vectors == len(papers) - 1
    else:
        index_path(encoder.model_id).unlink()

    found = nearest(encoder.encode(["superconducting oxide films"])[0], 5)

    assert sorted(pid for pid, _ in found) == sorted(p.pk for p in papers if p != papers[1])
    assert all(np.isfinite(score) for _, score in found)
    assert similar_ranked(papers[1].pk) == []


def test_a_nan_vector_in_the_file_is_never_found(encoder, index_dir, papers, monkeypatch):
    """A vector of NaNs that reached the index file (its row damaged since): never a
    neighbour with a NaN score."""
    reopen_now(monkeypatch)
    embed_papers([p.pk for p in papers])
    writer = IndexWriter(encoder.model_id, encoder.dimension)
    writer.update({papers[1].pk: np.full(encoder.dimension, np.nan, dtype=np.float32)})

    found = nearest(encoder.encode(["superconducting oxide films"])[0], 5)

    assert papers[1].pk not in [pid for pid, _ in found]
    assert all(np.isfinite(score) for _, score in found)


@pytest.mark.django_db(transaction=True)
def test_two_writers_do_not_lose_each_others_vectors(index_dir):
    """Two writers (as two workers would be), each with its own database connection and its
    own copy of the index in memory, add vectors in turns: with the lock, the file ends up
    with all of them."""
    dimension = 8
    rng = np.random.default_rng(7)
    path = index_dir / "shared.usearch"
    errors = []

    def work(offset):
        try:
            writer = IndexWriter("test/model", dimension, path)
            for round_ in range(15):
                ids = [offset + round_ * 10 + i for i in range(10)]
                vectors = rng.normal(size=(10, dimension)).astype(np.float32)
                writer.update(dict(zip(ids, vectors, strict=True)))
        except Exception as error:  # reported to the test below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(offset,)) for offset in (0, 100_000)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    from usearch.index import Index

    index = Index.restore(str(path), view=True)
    assert len(index) == 2 * 15 * 10
    assert all(index.contains(np.array([0, 149, 100_000, 100_149], dtype=np.uint64)))


def test_a_reader_re_opens_the_file_another_process_replaced(encoder, index_dir, papers):
    """A web process knows nothing of the worker's save but the file: it looks at the file's
    identity once REOPEN_CHECK_SECONDS have passed and maps the new one."""
    embed_papers([p.pk for p in papers[:3]])
    path = index_path(encoder.model_id)
    old = vector_index._open_index(path)
    assert len(old) == 3
    embed_papers([p.pk for p in papers[3:]])  # the worker's save
    # This process as another one would be: still holding the old mapping, checked long ago.
    vector_index._readers[path] = vector_index._Reader(old, (0, 0, 0), checked=0.0)
    assert len(vector_index._open_index(path)) == len(papers)
    # Within the interval the mapping in hand is used without looking at the file.
    vector_index._readers[path].checked = float("inf")
    path.unlink()
    assert len(vector_index._open_index(path)) == len(papers)


@pytest.mark.parametrize("content", ["empty", "corrupt"])
def test_an_empty_or_damaged_file_falls_back_to_exact_search(
    encoder, index_dir, papers, monkeypatch, content
):
    """An index rebuilt while no paper had a vector (or by another database before the file
    was per database), or a damaged file, answers by exact search, never with an error."""
    reopen_now(monkeypatch)
    embed_papers([p.pk for p in papers])
    path = index_path(encoder.model_id)
    if content == "empty":
        IndexWriter(encoder.model_id, encoder.dimension, path)._save(
            vector_index._new_index(encoder.dimension)
        )
    else:
        path.write_bytes(b"\x00" * 5000)
    vector_index._forget_reader(path)
    query = encoder.encode(["superconducting oxide films"])[0]
    assert nearest(query, 3)[0][0] == papers[1].pk


def test_a_writer_rebuilds_a_damaged_file_from_the_database(encoder, index_dir, papers):
    embed_papers([p.pk for p in papers])
    path = index_path(encoder.model_id)
    path.write_bytes(b"\x00" * 5000)
    writer = IndexWriter(encoder.model_id, encoder.dimension, path)
    assert writer.update({}) == len(papers), "every stored vector is back in the file"


def test_each_database_has_its_own_index_file(encoder, monkeypatch):
    first = index_path(encoder.model_id)
    monkeypatch.setitem(connection.settings_dict, "NAME", "another_database")
    assert index_path(encoder.model_id) != first
    assert index_path(encoder.model_id).parent == first.parent


def test_an_index_folder_that_cannot_be_read_falls_back_to_exact_search(
    encoder, index_dir, papers, settings, tmp_path
):
    """EMBEDDING_INDEX_DIR naming a file (or a folder without permission) is no index file:
    readers search exactly over PostgreSQL instead of failing every search with a 500."""
    embed_papers([p.pk for p in papers])
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the index folder should be")
    settings.EMBEDDING_INDEX_DIR = blocker
    query = encoder.encode(["superconducting oxide films"])[0]
    assert nearest(query, 3)[0][0] == papers[1].pk


def test_the_index_file_keeps_its_name_under_the_sites_postgresql_backend(monkeypatch):
    """The settings moved from Django's PostgreSQL backend to ``topicsite.postgresql``; the
    index files built before must keep their names (the same database), or every reader
    would fall back to exact search (400 ms at 1M papers) until a rebuild."""
    from django.db import connections

    from papers.embeddings.index import index_path

    connection = connections["default"]
    settings_dict = dict(connection.settings_dict)
    names = set()
    for engine in ("django.db.backends.postgresql", "topicsite.postgresql"):
        monkeypatch.setattr(connection, "settings_dict", {**settings_dict, "ENGINE": engine})
        names.add(index_path("some-model").name)
    assert len(names) == 1
    monkeypatch.setattr(connection, "settings_dict", {**settings_dict, "NAME": "another"})
    assert index_path("some-model").name not in names


def test_stored_matrix_reads_the_file_and_postgresql_for_what_it_lacks(
    encoder, index_dir, papers, monkeypatch, django_assert_num_queries
):
    """``stored_matrix``: PostgreSQL says which papers have a vector (one query of ids); the
    vectors the index file holds come from it, in the order asked, each within half
    precision of the stored one; a paper the file lacks is read from PostgreSQL in one
    query more; a paper without a vector is left out."""
    reopen_now(monkeypatch)
    embed_papers([p.pk for p in papers[:4]])
    stored = load_vectors([p.pk for p in papers[:4]])
    order = [papers[2].pk, papers[0].pk, papers[3].pk, papers[1].pk, papers[2].pk]

    with django_assert_num_queries(1) as queries:
        ids, matrix = vector_index.stored_matrix(
            order, model=encoder.model_id, dimension=encoder.dimension
        )
    assert '"vector"' not in queries.captured_queries[0]["sql"]
    assert ids == order[:4]
    assert matrix.dtype == np.float32 and matrix.shape == (4, encoder.dimension)
    assert matrix.flags["C_CONTIGUOUS"]
    for row, pk in enumerate(ids):
        assert np.abs(matrix[row] - stored[pk]).max() <= vector_index.SAME_VECTOR_TOLERANCE

    # papers[4] gets a vector in PostgreSQL only (its file update lost).
    PaperEmbedding.objects.create(
        paper=papers[4],
        model=encoder.model_id,
        dimension=encoder.dimension,
        vector=vector_to_bytes(stored[papers[3].pk]),
        text_sha256="0" * 64,
    )
    with django_assert_num_queries(2):
        ids, matrix = vector_index.stored_matrix(
            [papers[4].pk, papers[1].pk, 10**9, -3],
            model=encoder.model_id,
            dimension=encoder.dimension,
        )
    assert ids == [papers[4].pk, papers[1].pk]
    assert np.array_equal(matrix[0], stored[papers[3].pk])


def test_stored_matrix_follows_postgresql_where_the_file_is_out_of_step(
    encoder, index_dir, papers, monkeypatch
):
    """The file still holding a paper whose row went, or whose row now holds another model's
    vector: left out, as PostgreSQL says; a file vector that is not of unit length (zeroed
    in place, say) is read from PostgreSQL instead of used."""
    reopen_now(monkeypatch)
    embed_papers([p.pk for p in papers])
    stored = load_vectors([p.pk for p in papers])
    PaperEmbedding.objects.filter(paper=papers[0]).delete()
    PaperEmbedding.objects.filter(paper=papers[1]).update(model="another-model")
    IndexWriter(encoder.model_id, encoder.dimension).update(
        {papers[2].pk: np.zeros(encoder.dimension, dtype=np.float32)}
    )

    ids, matrix = vector_index.stored_matrix(
        [p.pk for p in papers], model=encoder.model_id, dimension=encoder.dimension
    )

    assert ids == [papers[2].pk, papers[3].pk, papers[4].pk]
    assert np.array_equal(matrix[0], stored[papers[2].pk])


@pytest.mark.parametrize("where", ["file", "no file"])
def test_stored_matrix_leaves_out_damaged_vectors(encoder, index_dir, papers, monkeypatch, where):
    """A vector of NaNs in the file is read from PostgreSQL instead; a stored row cut short
    or of NaNs is left out; the others stay, in order."""
    reopen_now(monkeypatch)
    embed_papers([p.pk for p in papers])
    vector = load_vectors([papers[1].pk])[papers[1].pk]
    if where == "file":
        IndexWriter(encoder.model_id, encoder.dimension).update(
            {papers[1].pk: np.full(encoder.dimension, np.nan, dtype=np.float32)}
        )
    PaperEmbedding.objects.filter(paper=papers[3]).update(
        vector=vector_to_bytes(np.full_like(vector, np.nan))
    )
    if where == "no file":
        index_path(encoder.model_id).unlink()
        vector_index._forget_reader(index_path(encoder.model_id))
        PaperEmbedding.objects.filter(paper=papers[1]).update(vector=vector_to_bytes(vector[:50]))

    ids, matrix = vector_index.stored_matrix(
        [p.pk for p in papers], model=encoder.model_id, dimension=encoder.dimension
    )

    kept = [p for p in papers if p != papers[1] or where == "file"]
    # papers[3]'s file copy is sound (the row was damaged after the file was written).
    expected = [p.pk for p in kept if where == "file" or p != papers[3]]
    assert ids == expected
    assert matrix.shape == (len(expected), encoder.dimension)
    assert np.isfinite(matrix).all()
    if where == "file":
        assert np.array_equal(matrix[1], vector)


def test_stored_matrix_of_another_dimension_reads_postgresql(encoder, index_dir, papers):
    """A file whose vectors have another length than asked is not read; nothing of that
    length is stored either, so nothing comes back."""
    embed_papers([p.pk for p in papers])
    ids, matrix = vector_index.stored_matrix(
        [p.pk for p in papers], model=encoder.model_id, dimension=encoder.dimension + 1
    )
    assert ids == [] and matrix.shape == (0, encoder.dimension + 1)


@pytest.mark.parametrize("with_file", [True, False])
def test_stored_matrix_refuses_ids_that_are_no_64_bit_integers(
    encoder, index_dir, papers, with_file
):
    """An id beyond 64 bits or not an integer is refused before any query, file or not; a
    negative id is no paper's."""
    if with_file:
        embed_papers([p.pk for p in papers])
    for bad, error in (([2**63], ValueError), ([2**64], ValueError), (["x"], ValueError)):
        with pytest.raises(error):
            vector_index.stored_matrix(bad, model=encoder.model_id, dimension=encoder.dimension)
    ids, _ = vector_index.stored_matrix(
        [-1, papers[0].pk], model=encoder.model_id, dimension=encoder.dimension
    )
    assert ids == ([papers[0].pk] if with_file else [])
