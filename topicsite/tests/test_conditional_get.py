"""Feeds and pages carry an ETag and answer 304 to a client that already has them (pages with
a POST form differ on every request: their CSRF token is masked anew each time)."""

import pytest

from topics.tests.factories import AssignmentFactory, TopicFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("url", ["/topics/agents/feed/", "/topics/"])
def test_atom_feed_and_index_answer_304_when_unchanged(client, url):
    topic = TopicFactory(slug="agents")
    AssignmentFactory(topic=topic)

    first = client.get(url)
    assert first.status_code == 200 and first.has_header("ETag")

    again = client.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert again.status_code == 304 and again.content == b""

    AssignmentFactory(topic=topic)  # a new paper changes the page
    changed = client.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert changed.status_code == 200 and changed["ETag"] != first["ETag"]
