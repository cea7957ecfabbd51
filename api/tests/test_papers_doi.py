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


def test_a_journal_doi_is_found_in_one_query_that_its_index_serves(api_client, world):
    """The lookup is the expression papers migration 0012 indexes: with scans of the whole
    table priced out, PostgreSQL answers it from that index (a bitmap scan), at any size."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from api.selectors import DOI_LOOKUP_SQL, paper_by_doi
    from papers.models import Paper

    with CaptureQueriesContext(connection) as queries:
        paper = paper_by_doi("10.1234/AGENTS.2026", Paper.objects.only("id", "dois"))
    assert "10.1234/agents.2026" in paper.dois
    assert len(queries) == 1
    assert DOI_LOOKUP_SQL.split("%s")[0] in queries.captured_queries[0]["sql"]
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_indexscan = off")
        cursor.execute(f"EXPLAIN {DOI_LOOKUP_SQL}", ['["10.1234/agents.2026"]'])
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Bitmap Index Scan on paper_dois_lower_idx" in plan, plan


def test_a_doi_with_quotes_and_letters_beyond_ascii_matches_only_itself(api_client, world):
    from papers.models import Paper

    paper = Paper.objects.get(arxiv_id="2609.00002")
    paper.dois = ['10.5555/Ünï"cödé\\x']
    paper.save(update_fields=["dois"])
    found = api_client.get('/api/v1/papers/doi/10.5555/ünï"cödé\\x/')
    assert found.status_code == 200, found.content
    assert found.json()["id"] == "2609.00002"
    assert api_client.get("/api/v1/papers/doi/10.5555/Ünï/").status_code == 404


@pytest.mark.parametrize(
    "path",
    [
        "papers/2609.00001/",
        "papers/2609.00001v1/",
        "papers/doi/10.48550/arXiv.2609.00001/",
        "papers/doi/10.1234/agents.2026/",
    ],
)
def test_one_paper_is_read_as_its_row_in_one_query(api_client, world, path):
    """A paper by id or DOI is read as a list reads its papers (``api.selectors.paper_rows``,
    one query on PostgreSQL), and answered as the list shows it."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        response = api_client.get(f"/api/v1/{path}")
    assert response.status_code == 200, response.content
    if connection.vendor == "postgresql":
        assert len(queries) == 1, queries.captured_queries
    shown = response.json()
    listed = api_client.get("/api/v1/papers/?page_size=100").json()["results"]
    assert shown == next(paper for paper in listed if paper["id"] == shown["id"])
