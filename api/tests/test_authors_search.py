"""``authors/?q=`` (authors by name) and ``autocomplete/?q=`` (topics, authors, categories)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from papers.models import Author
from papers.tests.factories import AuthorFactory, AuthorshipFactory, CategoryFactory, PaperFactory
from topics.tests.factories import TopicFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    ada = AuthorFactory(name="Ada Lovelace")
    adam = AuthorFactory(name="Adam Smith")
    ladan = AuthorFactory(name="Ladan Lovelace-Byron")
    merged = AuthorFactory(name="A. Lovelace")
    Author.objects.filter(pk=merged.pk).update(merged_into=ada)
    for _ in range(3):
        AuthorshipFactory(paper=PaperFactory(), author=ada, position=0)
    AuthorshipFactory(paper=PaperFactory(withdrawn=True), author=ada, position=0)
    AuthorshipFactory(paper=PaperFactory(), author=adam, position=0)
    return {"ada": ada, "adam": adam, "ladan": ladan, "merged": merged}


def test_authors_by_name_prefix_first_merged_left_out(client, people):
    body = client.get("/api/v1/authors/", {"q": "lovelace"}).json()
    names = [row["name"] for row in body["results"]]
    assert names == ["Ada Lovelace", "Ladan Lovelace-Byron"]  # "A. Lovelace" was merged
    assert body["count"] == 2
    ada = body["results"][0]
    assert ada["paper_count"] == 3  # the withdrawn paper does not count
    assert ada["html_url"].endswith(people["ada"].get_absolute_url())

    names = [row["name"] for row in client.get("/api/v1/authors/", {"q": "ada"}).json()["results"]]
    assert names[:2] == ["Ada Lovelace", "Adam Smith"] and "Ladan Lovelace-Byron" in names


@pytest.mark.parametrize("query", [{}, {"q": ""}, {"q": " a "}, {"q": "x" * 201}])
def test_authors_without_a_usable_q_is_a_400_naming_it(client, people, query):
    response = client.get("/api/v1/authors/", query)
    assert response.status_code == 400
    assert list(response.json()["error"]["details"]) == ["q"]


def test_a_page_of_authors_is_a_fixed_number_of_queries(client, people):
    for n in range(12):
        AuthorshipFactory(paper=PaperFactory(), author=AuthorFactory(name=f"Lovelace {n}"))
    with CaptureQueriesContext(connection) as few:
        client.get("/api/v1/authors/", {"q": "lovelace", "page_size": 2})
    with CaptureQueriesContext(connection) as many:
        client.get("/api/v1/authors/", {"q": "lovelace", "page_size": 14})
    assert len(few) == len(many)


def test_autocomplete_suggests_topics_authors_and_categories(client, people):
    parent = TopicFactory(name="Machine Learning", slug="ml")
    TopicFactory(name="Lovelace Machines", slug="lovelace-machines", parent=parent)
    CategoryFactory(code="cs.LO", name="Logic in Computer Science")
    body = client.get("/api/v1/autocomplete/", {"q": "lo"}).json()
    kinds = [(row["type"], row["id"]) for row in body["results"]]
    assert kinds[0] == ("topic", "lovelace-machines")
    assert ("author", str(people["ada"].pk)) in kinds
    assert ("author", str(people["merged"].pk)) not in kinds
    assert ("category", "cs.LO") in kinds
    assert [k for k, _ in kinds] == sorted(
        (k for k, _ in kinds), key=["topic", "author", "category"].index
    )
    topic = body["results"][0]
    assert topic["hint"] == "in Machine Learning" and topic["url"] == "/topics/lovelace-machines/"
    category = next(row for row in body["results"] if row["type"] == "category")
    assert category["url"] == "/search/?category=cs.LO"


def test_autocomplete_short_is_empty_long_is_400(client, people):
    assert client.get("/api/v1/autocomplete/", {"q": "l"}).json()["results"] == []
    response = client.get("/api/v1/autocomplete/", {"q": "l" * 101})
    assert response.status_code == 400 and "q" in response.json()["error"]["details"]
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/api/v1/autocomplete/", {"q": "lovelace"}).status_code == 200
    assert len(queries) == 4
