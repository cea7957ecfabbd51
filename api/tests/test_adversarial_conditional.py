"""Conditional GET must never answer 304 for a representation that changed. ``Last-Modified``
cannot see removals (a rejected assignment, a deleted paper), so only the body's ETag decides a
304, and shared or browser caches are told to revalidate rather than guess a freshness from
``Last-Modified``."""

import pytest

from topics.assignments import assignment_decide
from topics.models import Assignment
from topics.tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "url", ["/api/v1/papers/2609.00001/", "/api/v1/topics/llm-agent-training/papers/"]
)
def test_a_rejected_assignment_is_never_hidden_behind_a_304(api_client, world, url):
    first = api_client.get(url)
    assert first.status_code == 200
    assignment = Assignment.objects.get(paper=world.first, topic=world.agents)
    assignment_decide(assignment=assignment, state="rejected", user=UserFactory())

    by_date = api_client.get(url, HTTP_IF_MODIFIED_SINCE=first["Last-Modified"])
    by_etag = api_client.get(url, HTTP_IF_NONE_MATCH=first["ETag"])

    assert by_date.status_code == 200
    assert by_etag.status_code == 200
    assert by_date.content == by_etag.content != first.content


def test_reads_tell_caches_to_revalidate_and_an_unchanged_etag_still_answers_304(api_client, world):
    first = api_client.get("/api/v1/papers/2609.00001/")

    assert "no-cache" in first["Cache-Control"]
    assert first.has_header("Last-Modified")
    again = api_client.get("/api/v1/papers/2609.00001/", HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304
