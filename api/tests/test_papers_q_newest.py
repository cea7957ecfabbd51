"""``papers/?q=`` newest first looks for its page among the newest papers first
(``api.views.papers.PaperListView._newest_matches``, ``topics.search.newest_matches_range``):
PostgreSQL estimates words that go together as independent and read every match of ``black
hole`` (30,000 at 1M papers) to keep a page. The page must be the same whichever way it is
read, on every page of a cursor walk; a range holding too few falls back to every match."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from api.views import papers as papers_view
from papers.tests.factories import PaperFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus():
    """60 papers over 60 days, a quarter about black holes (some withdrawn), several a day."""
    start = dt.date(2025, 1, 1)
    for i in range(60):
        PaperFactory(
            title=f"Paper {i}",
            abstract="Evaporation of a black hole." if i % 4 == 0 else "We study memory.",
            submitted=start + dt.timedelta(days=i // 2),
            withdrawn=i == 8,
        )


def walk(api_client, query: str) -> list[list[int]]:
    pages, url = [], f"/api/v1/papers/?{query}"
    while url:
        body = api_client.get(url).json()
        pages.append([paper["id"] for paper in body["results"]])
        url = body["next"]
    return pages


@pytest.mark.parametrize("range_size", [1, 2, 5, 9, 40, 10_000])
@pytest.mark.parametrize(
    "query",
    [
        "q=black hole&page_size=2",
        "q=black hole&page_size=3&withdrawn=false",
        "q=memory&page_size=7",
    ],
)
def test_every_page_is_the_same_read_from_the_newest_papers(
    api_client, corpus, monkeypatch, range_size, query
):
    monkeypatch.setattr(papers_view, "newest_matches_range", lambda *args: None)
    expected = walk(api_client, query)
    monkeypatch.setattr(papers_view, "newest_matches_range", lambda *args: range_size)
    assert walk(api_client, query) == expected
    assert sum(map(len, expected)) > 0


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's estimates")
def test_words_that_go_together_are_read_from_a_date_range_at_scale(api_client, corpus):
    """With a 1M-paper table's statistics the range is taken (a floor on ``submitted``), and
    the page is the newest matches."""
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE papers_paper")
        cursor.execute(
            "UPDATE pg_class SET reltuples = 1000000 WHERE oid = 'papers_paper'::regclass"
        )
    with CaptureQueriesContext(connection) as queries:
        body = api_client.get("/api/v1/papers/?q=black hole&page_size=3").json()
    ranged = [q["sql"] for q in queries if '"papers_paper"."submitted" >=' in q["sql"]]
    assert ranged, [q["sql"][:200] for q in queries]
    newest = sorted(
        (p for p in PaperFactory._meta.model.objects.filter(abstract__contains="black hole")),
        key=lambda p: (p.submitted, p.id),
        reverse=True,
    )
    assert [paper["id"] for paper in body["results"]] == [p.arxiv_id for p in newest[:3]]


def test_a_range_short_of_a_page_is_widened_before_every_match_is_read(
    api_client, corpus, monkeypatch
):
    """The newest 2 papers hold no page of 3 ``black hole`` matches; 16 do (one in four)."""
    url = "/api/v1/papers/?q=black hole&page_size=3"
    monkeypatch.setattr(papers_view, "newest_matches_range", lambda *args: None)
    expected = api_client.get(url).json()["results"]
    monkeypatch.setattr(papers_view, "newest_matches_range", lambda *args: 2)
    with CaptureQueriesContext(connection) as queries:
        body = api_client.get(url).json()
    assert body["results"] == expected
    ranged = [q for q in queries if '"papers_paper"."submitted" >=' in q["sql"]]
    assert len(ranged) == 2
