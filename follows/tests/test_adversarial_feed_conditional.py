"""A feed reader polling the topic Atom feed with ``If-Modified-Since`` must see a paper tagged
into the topic after its last poll, even when that paper was submitted before the newest entry
(the feed's ``Last-Modified`` is the newest entry's date, so it does not move)."""

import datetime as dt

import pytest

from follows.tests.conftest import assign, make_paper

pytestmark = pytest.mark.django_db


def test_a_paper_tagged_later_with_an_older_date_is_not_hidden_behind_a_304(client, taxonomy):
    assign(make_paper("Newest agents paper", submitted=dt.date(2026, 9, 29)), taxonomy["agents"])
    first = client.get("/topics/agents/feed/")
    assert first.status_code == 200
    older = make_paper("Older agents paper tagged later", submitted=dt.date(2026, 9, 1))
    assign(older, taxonomy["agents"])

    polled = client.get("/topics/agents/feed/", HTTP_IF_MODIFIED_SINCE=first["Last-Modified"])

    assert polled.status_code == 200
    assert b"Older agents paper tagged later" in polled.content


def test_an_unchanged_feed_still_answers_304_to_its_etag(client, taxonomy):
    assign(make_paper("Newest agents paper"), taxonomy["agents"])
    first = client.get("/topics/agents/feed/")

    again = client.get("/topics/agents/feed/", HTTP_IF_NONE_MATCH=first["ETag"])

    assert again.status_code == 304
