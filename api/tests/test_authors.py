"""``authors/{id}/``: an author's summary from the author page's selectors, a merged name's id
answering its survivor, a bad id a 404 in the API's error shape, and queries that do not grow
with the author's papers."""

import pytest

from papers.models import Author
from papers.tests.factories import (
    AffiliationFactory,
    AuthorFactory,
    AuthorshipFactory,
    PaperFactory,
)
from topics.tests.factories import AssignmentFactory, TopicFactory

from .conftest import assert_error

pytestmark = pytest.mark.django_db


def _author_with_papers(n: int):
    author = AuthorFactory(name="Ada Lovelace")
    coauthor = AuthorFactory(name="Charles Babbage")
    topic = TopicFactory(name="Engines")
    place = AffiliationFactory(name="Analytical Society")
    for _ in range(n):
        paper = PaperFactory()
        AuthorshipFactory(paper=paper, author=author, position=0).affiliations.add(place)
        AuthorshipFactory(paper=paper, author=coauthor, position=1)
        AssignmentFactory(paper=paper, topic=topic)
    return author, coauthor


@pytest.mark.parametrize("n", [1, 6])
def test_an_author_summary_in_bounded_queries(api_client, n, django_assert_max_num_queries):
    author, coauthor = _author_with_papers(n)
    with django_assert_max_num_queries(8):
        response = api_client.get(f"/api/v1/authors/{author.pk}/")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["id"] == author.pk
    assert body["name"] == "Ada Lovelace"
    assert body["paper_count"] == n
    assert body["html_url"].endswith(author.get_absolute_url())
    assert body["affiliations"] == [
        {"id": None, "name": "Analytical Society", "papers": n, "url": ""}
    ]
    assert [(c["id"], c["papers"]) for c in body["coauthors"]] == [(coauthor.pk, n)]
    assert [(t["name"], t["papers"]) for t in body["topics"]] == [("Engines", n)]


def test_a_merged_name_answers_its_survivor_and_a_bad_id_is_a_404(api_client):
    survivor, _ = _author_with_papers(1)
    variant = AuthorFactory(name="A. Lovelace")
    Author.objects.filter(pk=variant.pk).update(merged_into=survivor)
    body = api_client.get(f"/api/v1/authors/{variant.pk}/").json()
    assert (body["id"], body["name"]) == (survivor.pk, "Ada Lovelace")
    assert_error(api_client.get("/api/v1/authors/999999999/"), 404)
    assert_error(api_client.get("/api/v1/authors/99999999999999999999/"), 404)


def test_an_authors_papers_list_filters_and_a_bad_id_is_a_404(api_client):
    author, _ = _author_with_papers(2)
    PaperFactory()  # not theirs
    body = api_client.get(f"/api/v1/authors/{author.pk}/papers/").json()
    assert len(body["results"]) == 2
    body = api_client.get(f"/api/v1/authors/{author.pk}/papers/?submitted_after=2100-01-01")
    assert body.status_code == 200 and body.json()["results"] == []
    assert_error(api_client.get("/api/v1/authors/999999999/papers/"), 404)


def test_an_authors_coauthors_and_topics_lists(api_client):
    author, coauthor = _author_with_papers(2)
    coauthors = api_client.get(f"/api/v1/authors/{author.pk}/coauthors/").json()
    assert [(c["id"], c["name"], c["papers"]) for c in coauthors] == [
        (coauthor.pk, "Charles Babbage", 2)
    ]
    topics = api_client.get(f"/api/v1/authors/{author.pk}/topics/").json()
    assert [(t["name"], t["papers"]) for t in topics] == [("Engines", 2)]
    assert_error(api_client.get("/api/v1/authors/999999999/topics/"), 404)
