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


def test_a_query_trend_matches_each_filter_once_on_the_weeks_papers(api_client, world):
    """Every filter (words, category, author, affiliation, its negation) counts the papers it
    selects in the weeks once each (a paper with two matching authors too), as counting
    ``id IN (selected)`` would, and the words are a condition on the week's rows themselves,
    so PostgreSQL can AND the full-text index with the dates (not a subquery of every
    paper holding the word)."""
    import datetime as dt

    from django.db import connection
    from django.http import QueryDict
    from django.test.utils import CaptureQueriesContext

    from api.filters import PaperFilter
    from papers.models import Paper
    from papers.tests.factories import AuthorFactory, AuthorshipFactory

    # A paper with two authors matching one author= text.
    paper = world.first
    AuthorshipFactory(paper=paper, author=AuthorFactory(name="Zed Twin"), position=5)
    AuthorshipFactory(paper=paper, author=AuthorFactory(name="Zed Twain"), position=6)
    as_of = Paper.objects.order_by("-submitted").values_list("submitted", flat=True)[0]
    queries = [
        "q=agents",
        "q=agents&category=cs.AI",
        "author=zed",
        "author=!zed",
        "q=-agents",
        "affiliation=institute",
        "affiliation=!institute&withdrawn=false",
    ]
    for query in queries:
        url = f"/api/v1/trends/?{query}&weeks=60&as_of={as_of.isoformat()}"
        with CaptureQueriesContext(connection) as captured:
            body = api_client.get(url).json()
        selected = PaperFilter(QueryDict(query), queryset=Paper.objects.all()).qs
        first = dt.date.fromisoformat(body["weeks"][0]["week_start"])
        expected = Paper.objects.live().filter(
            id__in=selected.values("id"), submitted__gte=first, submitted__lte=as_of
        )
        assert sum(w["count"] for w in body["weeks"]) == expected.count(), query
        if query == "author=zed":
            assert expected.count() == 1  # one paper, two matching authors
        if query == "affiliation=institute":
            assert expected.count() >= 1
        if query == "q=agents":
            assert expected.count() >= 1
            (per_day,) = [q["sql"] for q in captured if "GROUP BY" in q["sql"] and "@@" in q["sql"]]
            assert 'IN (SELECT U0."id"' not in per_day, per_day
