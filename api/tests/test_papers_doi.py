"""``papers/doi/{doi}/``: a paper by its journal DOI or its arXiv DOI, in any spelling and
case; a malformed DOI is a 400 naming ``doi``, an unknown one a 404."""

import pytest

from .conftest import assert_error

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "spelling",
    [
        "10.1234/agents.2026",
        "10.1234/AGENTS.2026",
        "doi:10.1234/agents.2026",
        "https://doi.org/10.1234/agents.2026",
        "https:/doi.org/10.1234/agents.2026",
    ],
)
def test_a_journal_doi_in_any_spelling_finds_the_paper(api_client, world, spelling):
    response = api_client.get(f"/api/v1/papers/doi/{spelling}/")
    assert response.status_code == 200, response.content
    assert response.json()["doi"] == "10.1234/agents.2026"


@pytest.mark.parametrize(
    ("doi", "paper_id"),
    [
        ("10.48550/arXiv.2609.00001", "2609.00001"),
        ("10.48550/ARXIV.2609.00001", "2609.00001"),
        ("https://doi.org/10.48550/arxiv.hep-th/0601001", "hep-th/0601001"),
    ],
)
def test_an_arxiv_doi_finds_the_arxiv_paper(api_client, world, doi, paper_id):
    response = api_client.get(f"/api/v1/papers/doi/{doi}/")
    assert response.status_code == 200, response.content
    assert response.json()["id"] == paper_id


def test_unknown_and_malformed_dois(api_client, world):
    assert_error(api_client.get("/api/v1/papers/doi/10.9999/nothing/"), 404)
    assert_error(api_client.get("/api/v1/papers/doi/10.48550/arXiv.2001.99999/"), 404)
    assert_error(api_client.get("/api/v1/papers/doi/not-a-doi/"), 400, param="doi")
    assert_error(api_client.get("/api/v1/papers/doi/10.12/x/"), 400, param="doi")
