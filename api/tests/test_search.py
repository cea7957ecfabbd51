"""``search/?q=``: ranked full text over title and abstract, with the paper filters."""

import pytest
from django.db import connection

from api.filters import full_text_match
from papers.models import Paper

from .conftest import ids, make_paper

pytestmark = pytest.mark.django_db


def test_results_are_ranked_best_match_first(api_client, world):
    make_paper(
        arxiv_id="2609.00030",
        title="Memory, memory and more memory",
        abstract="Memory for agents: a memory survey.",
    )
    body = api_client.get("/api/v1/search/?q=memory").json()
    assert [p["id"] for p in body["results"]] == ["2609.00030", "2609.00002"]
    ranks = [p["rank"] for p in body["results"]]
    assert ranks[0] > ranks[1] > 0
    assert body["count"] == 2


def test_search_takes_the_paper_filters(api_client, world):
    assert ids(api_client.get("/api/v1/search/?q=agents&topic=llm-agent-training")) == [
        "2609.00001",
        "2609.00002",
    ]
    assert ids(api_client.get("/api/v1/search/?q=agents&primary_category=cs.LG")) == ["2608.00003"]


def test_web_search_syntax_phrases_and_exclusions(api_client, world):
    assert ids(api_client.get('/api/v1/search/?q="language model agents"')) == ["2609.00001"]
    assert ids(api_client.get("/api/v1/search/?q=agents -memory -scaling")) == ["2609.00001"]


def test_the_match_uses_the_gin_index(world):
    """The query's tsvector is the indexed expression (papers migration 0004)."""
    queryset = full_text_match(Paper.objects.all(), "agents").values("id")
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "paper_search_idx" in plan
