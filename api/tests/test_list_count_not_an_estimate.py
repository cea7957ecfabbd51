"""``api.facets.list_count`` counts before it estimates: the planner takes conditions as
independent and estimates contradictory or disjoint filters at a large share of the papers
(found by a breaker trying an estimate-first count)."""

import pytest
from django.db import connection

from papers.tests.factories import PaperFactory

pytestmark = pytest.mark.django_db


def _scale_stats_to(rows):
    """The papers table's statistics as a table of ``rows`` papers with the same
    distribution would have them (ANALYZE, then reltuples scaled)."""
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE papers_paper")
        cursor.execute(
            "UPDATE pg_class SET reltuples = %s WHERE oid = 'papers_paper'::regclass", [rows]
        )


@pytest.mark.parametrize(
    "q", ["agents -agents", "agents AND NOT agent", "memory -memory", "NOT agents AND agents"]
)
def test_list_count_of_a_contradictory_query_is_not_an_estimate(api_client, db, q):
    for i in range(40):
        PaperFactory(
            title=f"Paper {i}",
            abstract="We study agents." if i % 2 else "We study memory.",
        )
    _scale_stats_to(1_000_000)
    body = api_client.get("/api/v1/papers/", {"q": q}).json()
    assert body["results"] == []
    assert body["meta"] == {"count": 0, "count_exact": True}


def test_list_count_of_a_word_and_a_category_that_never_meet(api_client, db):
    """At 1M papers, half cs.AI about agents and half hep-th about holes: the planner takes the
    word and the category as independent (250,000) where no paper has both."""
    from api.tests.conftest import make_category

    ai, th = make_category("cs.AI"), make_category("hep-th")
    for i in range(40):
        PaperFactory(
            title=f"Paper {i}",
            abstract="We study agents." if i % 2 else "We study black holes.",
            primary_category=ai if i % 2 else th,
        )
    _scale_stats_to(1_000_000)
    body = api_client.get("/api/v1/papers/", {"q": "agents", "primary_category": "hep-th"}).json()
    assert body["results"] == []
    assert body["meta"] == {"count": 0, "count_exact": True}
