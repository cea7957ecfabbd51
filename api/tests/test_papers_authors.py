"""A paper of a big collaboration (5,000 authors) in the API: its first authors and
``author_count`` in every paper response (both ways rows are built agree), every author
through ``papers/<id>/authors/`` page by page, bounded sizes and queries; a paper of a few
authors is answered as before (no ``author_count``)."""

import pytest

from api.selectors import AUTHORS_SHOWN, paper_row, paper_rows, papers_for_api, rows_of
from papers.tests.factories import big_collaboration_paper

from .conftest import assert_error

pytestmark = pytest.mark.django_db

N = 5000


@pytest.fixture
def big(db):
    return big_collaboration_paper(authors=N, title="Observation of a new particle")


def test_a_paper_response_lists_the_first_authors_and_counts_them(
    api_client, big, django_assert_max_num_queries
):
    with django_assert_max_num_queries(10):
        response = api_client.get(f"/api/v1/papers/{big.arxiv_id}/")
    assert response.status_code == 200
    assert len(response.content) < 40_000
    body = response.json()
    assert len(body["authors"]) == AUTHORS_SHOWN
    assert body["author_count"] == N
    assert list(body).index("author_count") == list(body).index("authors") + 1
    assert body["authors"][0] == {
        "name": f"Collaborator {big.pk}-00000",
        "affiliations": [f"Institute {big.pk}-0"],
    }
    assert body["authors"][-1]["name"] == f"Collaborator {big.pk}-{AUTHORS_SHOWN - 1:05d}"


def test_lists_show_the_same_authors_as_the_paper(api_client, big):
    detail = api_client.get(f"/api/v1/papers/{big.arxiv_id}/").json()
    listed = api_client.get("/api/v1/papers/").json()["results"]
    assert len(api_client.get("/api/v1/papers/").content) < 40_000
    (row,) = [r for r in listed if r["id"] == big.arxiv_id]
    assert row["authors"] == detail["authors"]
    assert row["author_count"] == N


def test_both_ways_of_building_rows_agree_on_the_authors(big):
    # PostgreSQL's one-query rows and the prefetching path (the embedded SQLite default).
    (sql,) = rows_of(paper_rows().filter(pk=big.pk))
    prefetched = paper_row(papers_for_api().get(pk=big.pk))
    assert sql["authors"] == prefetched["authors"]
    assert len(sql["authors"]) == AUTHORS_SHOWN
    assert sql["author_total"] == prefetched["author_total"] == N


def test_fields_authors_keeps_the_count_and_other_fields_leave_it_out(api_client, big):
    url = f"/api/v1/papers/{big.arxiv_id}/"
    assert set(api_client.get(url, {"fields": "id,authors"}).json()) == {
        "id",
        "authors",
        "author_count",
    }
    assert set(api_client.get(url, {"fields": "id,title"}).json()) == {"id", "title"}


def test_a_paper_of_few_authors_has_no_author_count(api_client, world):
    body = api_client.get(f"/api/v1/papers/{world.first.arxiv_id}/").json()
    assert "author_count" not in body
    assert [a["name"] for a in body["authors"]] == ["Alice Able", "Bob Baker"]


def test_the_authors_resource_pages_through_every_author_once(
    api_client, big, django_assert_max_num_queries
):
    url = f"/api/v1/papers/{big.arxiv_id}/authors/?page_size=100"
    positions = []
    pages = 0
    while url:
        with django_assert_max_num_queries(6):
            response = api_client.get(url)
        assert response.status_code == 200
        assert len(response.content) < 20_000
        body = response.json()
        assert body["count"] == N
        positions += [author["position"] for author in body["results"]]
        url = body["next"]
        pages += 1
    assert pages == N // 100
    assert positions == list(range(N))


def test_the_authors_resource_of_a_small_paper_and_of_no_paper(api_client, world):
    body = api_client.get(f"/api/v1/papers/{world.first.arxiv_id}/authors/").json()
    assert body["results"] == [
        {"position": 0, "name": "Alice Able", "affiliations": ["University of Somewhere"]},
        {
            "position": 1,
            "name": "Bob Baker",
            "affiliations": ["Lab of Elsewhere", "University of Somewhere"],
        },
    ]
    assert_error(api_client.get("/api/v1/papers/2609.99999/authors/"), 404, code="not_found")
    assert_error(
        api_client.get(f"/api/v1/papers/{world.first.arxiv_id}/authors/?page_size=0"),
        400,
        param="page_size",
    )


def test_bibtex_of_a_big_collaboration_ends_with_others(api_client, big):
    response = api_client.get(f"/api/v1/papers/{big.arxiv_id}/bibtex/")
    text = b"".join(response.streaming_content).decode()
    assert " and others}" in text or " and others," in text
    assert len(text) < 20_000
