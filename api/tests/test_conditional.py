"""ETag and Last-Modified on reads: an unchanged resource answers 304."""

import pytest

from papers.models import Paper

pytestmark = pytest.mark.django_db

READS = [
    "/api/v1/papers/?page_size=2",
    "/api/v1/papers/2609.00001/",
    "/api/v1/topics/",
    "/api/v1/topics/llm/",
    "/api/v1/topics/llm/papers/",
    "/api/v1/topics/llm/trend/",
    "/api/v1/categories/",
    "/api/v1/search/?q=agents",
]


@pytest.mark.parametrize("url", READS)
def test_a_matching_etag_answers_304_without_a_body(api_client, world, url):
    first = api_client.get(url)
    assert first.status_code == 200
    etag = first["ETag"]
    assert etag.startswith('"') and etag.endswith('"')
    again = api_client.get(url, HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304
    assert again.content == b""
    assert again["ETag"] == etag


def test_a_change_gives_a_new_etag_and_a_full_answer(api_client, world):
    url = "/api/v1/papers/2609.00001/"
    etag = api_client.get(url)["ETag"]
    paper = Paper.objects.get(arxiv_id="2609.00001")
    paper.title = "A new title"
    paper.save()
    response = api_client.get(url, HTTP_IF_NONE_MATCH=etag)
    assert response.status_code == 200
    assert response["ETag"] != etag
    assert response.json()["title"] == "A new title"


def test_last_modified_is_sent_but_only_the_etag_answers_304(api_client, world):
    # Last-Modified misses removals (api/tests/test_adversarial_conditional.py), so
    # If-Modified-Since alone never gets a 304; with a matching If-None-Match it does.
    url = "/api/v1/papers/2609.00001/"
    first = api_client.get(url)
    last_modified = first["Last-Modified"]
    assert last_modified.endswith(" GMT")
    assert api_client.get(url, HTTP_IF_MODIFIED_SINCE=last_modified).status_code == 200
    both = api_client.get(
        url, HTTP_IF_MODIFIED_SINCE=last_modified, HTTP_IF_NONE_MATCH=first["ETag"]
    )
    assert both.status_code == 304


def test_errors_carry_no_etag(api_client, world):
    response = api_client.get("/api/v1/papers/?withdrawn=perhaps")
    assert response.status_code == 400
    assert not response.has_header("ETag")
