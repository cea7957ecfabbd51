"""Strict query parameters (api.strict): an unknown parameter, or one repeated that may not
be, is a 400 in the API's error shape naming it, on every kind of endpoint; known parameters
still work."""

import pytest

from topics.tests.factories import TopicFactory

from .conftest import assert_error

pytestmark = pytest.mark.django_db

URLS = [
    "/api/v1/papers/",
    "/api/v1/search/?q=agents",
    "/api/v1/topics/",
    "/api/v1/topics/strict-topic/",
    "/api/v1/topics/strict-topic/papers/",
    "/api/v1/topics/strict-topic/trend/",
    "/api/v1/topics/strict-topic/papers.csv",
    "/api/v1/categories/",
]


@pytest.fixture
def topic():
    return TopicFactory(slug="strict-topic")


def _with(url, query):
    return url + ("&" if "?" in url else "?") + query


# The paper lists and search take group_by (api.facets); the other endpoints do not.
PAPER_LISTS = {
    "/api/v1/papers/",
    "/api/v1/topics/strict-topic/papers/",
    "/api/v1/search/?q=agents",
}


@pytest.mark.parametrize(
    ("url", "query"),
    [(url, query) for url in URLS for query in ("doi=10.1/x", "categroy=cs.CL")]
    + [(url, "group_by=topic") for url in URLS if url not in PAPER_LISTS],
)
def test_unknown_parameter_is_400_naming_it(client, topic, url, query):
    response = client.get(_with(url, query))
    assert response.status_code == 400, response.content
    name = query.split("=")[0]
    error = response.json()["error"]
    assert error["code"] == "invalid_parameter"
    assert list(error["details"]) == [name]
    assert "this endpoint takes: " in error["details"][name][0]


@pytest.mark.parametrize(
    "url", ["/api/v1/papers/", "/api/v1/topics/strict-topic/papers/", "/api/v1/search/?q=a"]
)
def test_repeated_category_is_400_naming_it(client, topic, url):
    response = client.get(_with(url, "category=cs.CL&category=cs.AI"))
    assert response.status_code == 400
    details = response.json()["error"]["details"]
    assert list(details) == ["category"] and "only once" in details["category"][0]


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/papers/?withdrawn=false&ordering=-submitted&fields=id&page_size=5",
        "/api/v1/topics/?page=1&page_size=5",
        "/api/v1/topics/strict-topic/trend/?weeks=4&as_of=2024-06-03",
        "/api/v1/search/?q=agents&mode=keyword",
        "/api/v1/categories/?page_size=5",
    ],
)
def test_known_parameters_are_fine(client, topic, url):
    assert client.get(url).status_code == 200


def test_ask_and_private_resources_are_strict_too(client, topic, django_user_model):
    response = client.post(
        "/api/v1/topics/strict-topic/ask/?question=x", {"q": "x"}, content_type="application/json"
    )
    assert response.status_code == 400 and "question" in response.json()["error"]["details"]
    user = django_user_model.objects.create_user("strict", password="x")
    client.force_login(user)
    assert client.get("/api/v1/me/follows/?topic=x").status_code == 400
    assert client.get("/api/v1/me/follows/").status_code == 200


@pytest.mark.parametrize(
    ("url", "param"),
    [
        # An empty page or one object checks fields= as a full page does.
        ("/api/v1/topics/?q=zzzz&fields=bogus", "fields"),
        ("/api/v1/papers/?q=zzzzqqqxx&fields=bogus", "fields"),
        ("/api/v1/topics/llm/?fields=bogus", "fields"),
        # fields= naming no field.
        ("/api/v1/topics/?fields=,", "fields"),
        ("/api/v1/papers/?fields=%20,%20", "fields"),
        # Parameters a resource would ignore: no page, no field selection, no ordering.
        ("/api/v1/trends/?fields=weeks", "fields"),
        ("/api/v1/trends/?ordering=-submitted", "ordering"),
        ("/api/v1/trends/?page_size=3", "page_size"),
        ("/api/v1/topics/?ordering=name", "ordering"),
        ("/api/v1/papers.jsonl?ordering=submitted", "ordering"),
    ],
)
def test_a_parameter_the_resource_would_ignore_is_a_400_naming_it(api_client, world, url, param):
    assert_error(api_client.get(url), 400, param=param)


def test_fields_still_select_on_every_resource_that_documents_them(api_client, world):
    assert api_client.get("/api/v1/topics/?fields=slug").json()["results"][0].keys() == {"slug"}
    assert api_client.get("/api/v1/papers/?fields=id,title").json()["results"][0].keys() == {
        "id",
        "title",
    }
    assert api_client.get("/api/v1/papers/?q=zzzzqqqxx&fields=id").status_code == 200
