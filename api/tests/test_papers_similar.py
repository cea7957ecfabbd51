"""``papers/{id}/similar/``: the papers nearest in meaning, 404 for an unknown paper, an empty
list before the paper has a vector, a fixed number of queries."""

import numpy as np
import pytest

from papers.embeddings.index import index_path
from papers.embeddings.store import embed_papers
from papers.embeddings.vectors import current_model_id, load_vectors, vector_to_bytes
from papers.models import Paper, PaperEmbedding
from papers.tests.factories import PaperFactory

from .conftest import assert_error

pytestmark = pytest.mark.django_db

ABSTRACTS = [
    "Large language model agents learn to call tools with reinforcement learning.",
    "Reinforcement learning teaches language model agents to use external tools.",
    "Superconductivity in strontium titanate thin films.",
    "Dark matter searches with liquid xenon detectors.",
]


@pytest.fixture
def embedded(settings, tmp_path):
    settings.EMBEDDING_INDEX_DIR = tmp_path / "vectors"
    papers = [PaperFactory(abstract=abstract) for abstract in ABSTRACTS]
    embed_papers([p.pk for p in papers])
    return papers


def test_similar_papers_in_the_list_shape_with_a_score(api_client, embedded):
    response = api_client.get(f"/api/v1/papers/{embedded[0].arxiv_id}/similar/")
    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["id"] for r in results][0] == embedded[1].arxiv_id
    assert {r["id"] for r in results} == {p.arxiv_id for p in embedded[1:]}
    listed = api_client.get(f"/api/v1/papers/{embedded[1].arxiv_id}/").json()
    assert {k: v for k, v in results[0].items() if k != "score"} == listed
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True) and -1 <= scores[-1] <= scores[0] <= 1


def test_fields_selects_and_withdrawn_papers_are_left_out(api_client, embedded):
    Paper.objects.filter(pk=embedded[1].pk).update(withdrawn=True)
    response = api_client.get(f"/api/v1/papers/{embedded[0].arxiv_id}/similar/?fields=id,score")
    results = response.json()["results"]
    assert set(results[0]) == {"id", "score"}
    assert embedded[1].arxiv_id not in [r["id"] for r in results]


def test_unknown_paper_is_404_and_no_vector_is_an_empty_list(api_client, embedded):
    assert_error(api_client.get("/api/v1/papers/2001.99999/similar/"), 404)
    assert_error(api_client.get("/api/v1/papers/not-an-id/similar/"), 404)
    newcomer = PaperFactory()
    response = api_client.get(f"/api/v1/papers/{newcomer.arxiv_id}/similar/")
    assert response.status_code == 200
    assert response.json() == {"results": []}


def test_a_fixed_number_of_queries(api_client, embedded, django_assert_max_num_queries):
    more = PaperFactory.create_batch(15, abstract="Tool-using agents and reinforcement learning.")
    embed_papers([p.pk for p in more])
    # The paper, its vector, liveness of the candidates, one query for the rows.
    with django_assert_max_num_queries(4):
        response = api_client.get(f"/api/v1/papers/{embedded[0].arxiv_id}/similar/")
    assert len(response.json()["results"]) == 10


def test_an_unknown_field_is_a_400_naming_it(api_client, embedded):
    response = api_client.get(f"/api/v1/papers/{embedded[0].arxiv_id}/similar/?fields=id,nope")
    error = assert_error(response, 400)
    assert "nope" in str(error)


@pytest.mark.parametrize("how", ["nan", "short"])
def test_a_damaged_stored_vector_is_no_500(api_client, embedded, how):
    """A stored vector of NaNs or cut short (a damaged row), searched exactly (no index file):
    the other papers are similar, semantic search answers, the damaged paper has no similar
    papers. It used to be a 500 (rows that cannot be stacked; a NaN score JSON cannot carry)."""
    index_path(current_model_id()).unlink()
    vector = load_vectors([embedded[3].pk])[embedded[3].pk]
    damaged = np.full_like(vector, np.nan) if how == "nan" else vector[:100]
    PaperEmbedding.objects.filter(paper=embedded[3]).update(vector=vector_to_bytes(damaged))

    response = api_client.get(f"/api/v1/papers/{embedded[0].arxiv_id}/similar/")
    assert response.status_code == 200
    assert [r["id"] for r in response.json()["results"]] == [
        embedded[1].arxiv_id,
        embedded[2].arxiv_id,
    ]
    response = api_client.get("/api/v1/search/", {"q": "tool agents", "mode": "semantic"})
    assert response.status_code == 200 and response.json()["meta"]["mode"] == "semantic"
    response = api_client.get(f"/api/v1/papers/{embedded[3].arxiv_id}/similar/")
    assert response.status_code == 200 and response.json() == {"results": []}
