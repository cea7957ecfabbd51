"""``trends/``: a query's weekly counts and share, with the /papers/ filters; a bad q is a
400."""

import pytest

from .conftest import assert_error

pytestmark = pytest.mark.django_db


def test_a_query_trend_counts_weekly_papers_and_their_share(api_client, world):
    body = api_client.get("/api/v1/trends/?q=agents&weeks=2&as_of=2026-09-30").json()
    assert body["as_of"] == "2026-09-30"
    assert [(w["week_start"], w["count"], w["total"]) for w in body["weeks"]] == [
        ("2026-09-21", 1, 1),
        ("2026-09-28", 1, 1),
    ]
    assert body["weeks"][-1]["share"] == 1.0
    by_category = api_client.get("/api/v1/trends/?q=agents&category=hep-th&weeks=2").json()
    assert [w["count"] for w in by_category["weeks"]] == [0, 0]


def test_bad_trend_parameters_are_400s(api_client, world):
    assert_error(api_client.get("/api/v1/trends/?weeks=0"), 400, param="weeks")
    assert_error(api_client.get('/api/v1/trends/?q="unclosed'), 400, param="q")
