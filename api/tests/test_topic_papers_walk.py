"""``topics/{slug}/papers/`` newest first and unfiltered: the page from the topics' newest-first
index walks and ``meta.count`` from the stored topic count. The same papers, in the same
order, page by page, as the filtered path (every paper of the topic read); queries that do
not grow with the topic; a count that follows curation."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from api.tests.paging import walk
from papers.models import Paper
from topics.assignments import assignment_decide
from topics.models import Assignment
from topics.selectors import topic_papers
from topics.tests.factories import AssignmentFactory, UserFactory

from .conftest import make_paper

pytestmark = pytest.mark.django_db

# Any filter sends the list down the general path; this one keeps every paper.
GENERAL = "submitted_after=1900-01-01"


@pytest.fixture
def crowded_subtree(world):
    """``llm`` with 17 more papers: several on one date, some in both the parent and the
    child (counted once), two withdrawn (left out), one only rejected (left out)."""
    for n in range(17):
        paper = make_paper(
            arxiv_id=f"2611.{n:05d}",
            submitted=dt.date(2026, 11, 1 + n % 4),
            primary_category=world.first.primary_category,
            withdrawn=n in (3, 11),
            topics=[world.agents] if n % 3 else [world.agents, world.llm],
        )
        if n == 5:
            Assignment.objects.filter(paper=paper).update(state=Assignment.State.REJECTED)
    return world


@pytest.mark.parametrize("page_size", [1, 3, 25])
def test_the_index_walk_pages_as_the_general_path_does(api_client, crowded_subtree, page_size):
    expected = [
        paper.identifier for paper in topic_papers(topic=crowded_subtree.llm).only("arxiv_id")
    ]
    assert len(expected) == 3 + 17 - 2 - 1
    base = f"/api/v1/topics/llm/papers/?page_size={page_size}"
    fast, fast_counts = walk(api_client, base)
    general, general_counts = walk(api_client, f"{base}&{GENERAL}")
    assert fast == general == expected
    assert fast_counts == general_counts == {len(expected)}


def test_a_previous_link_walks_back_the_same_papers(api_client, crowded_subtree):
    first = api_client.get("/api/v1/topics/llm/papers/?page_size=4").json()
    second = api_client.get(first["next"]).json()
    back = api_client.get(second["previous"]).json()
    assert [p["id"] for p in back["results"]] == [p["id"] for p in first["results"]]


def test_the_unfiltered_page_costs_the_same_queries_however_large_the_topic(
    api_client, crowded_subtree
):
    def captured(url: str) -> list[str]:
        with CaptureQueriesContext(connection) as queries:
            assert api_client.get(url).status_code == 200
        return [query["sql"] for query in queries.captured_queries]

    url = "/api/v1/topics/llm/papers/?page_size=2"
    api_client.get(url)  # the stored count taken once
    before = captured(url)
    for n in range(30):
        make_paper(
            arxiv_id=f"2612.{n:05d}",
            submitted=dt.date(2026, 12, 1),
            primary_category=crowded_subtree.first.primary_category,
            topics=[crowded_subtree.agents],
        )
    Paper.objects.filter(arxiv_id="2612.00000").update(withdrawn=True)
    api_client.get(url)
    after = captured(url)
    assert len(after) == len(before) == 3, after  # the topic, the walk, the page's rows
    # No capped count of the topic's papers, no planner estimate; the rows read by id.
    assert not any("LIMIT 10001" in sql or sql.startswith("EXPLAIN") for sql in after), after
    assert '"papers_paper"."id" IN (' in after[2] and "topics_assignment U0" not in after[2]


def test_the_count_follows_curation(
    api_client, crowded_subtree, django_capture_on_commit_callbacks
):
    url = "/api/v1/topics/llm/papers/"
    count = api_client.get(url).json()["meta"]["count"]
    curator = UserFactory(username="curator")
    with django_capture_on_commit_callbacks(execute=True):
        assignment_decide(
            assignment=Assignment.objects.get(
                paper=crowded_subtree.second, topic=crowded_subtree.agents
            ),
            state=Assignment.State.REJECTED,
            user=curator,
        )
    assert api_client.get(url).json()["meta"]["count"] == count - 1
    with django_capture_on_commit_callbacks(execute=True):
        new = make_paper(
            arxiv_id="2612.09999",
            submitted=dt.date(2026, 12, 9),
            primary_category=crowded_subtree.first.primary_category,
        )
        assignment = AssignmentFactory(
            paper=new, topic=crowded_subtree.llm, state=Assignment.State.PENDING
        )
        assignment_decide(assignment=assignment, state=Assignment.State.ACCEPTED, user=curator)
    body = api_client.get(url).json()
    assert body["meta"]["count"] == count
    assert body["results"][0]["id"] == "2612.09999"


@pytest.mark.parametrize("query", ["", "ordering=submitted", "ordering=-id", "previous"])
def test_the_unfiltered_count_is_the_stored_one_in_any_order_or_direction(
    api_client, crowded_subtree, monkeypatch, query
):
    """Above the exact count, a topic's list in another order (or a ``previous`` page) got
    the planner's estimate, which takes every topic near the average size: found by a breaker,
    a 10-paper topic's list ordered by date said 15."""
    from api import facets

    monkeypatch.setattr(facets, "EXACT_COUNT_LIMIT", 3)
    base = "/api/v1/topics/llm/papers/?page_size=4"
    if query == "previous":
        first = api_client.get(base).json()
        url = api_client.get(first["next"]).json()["previous"]
    else:
        url = f"{base}&{query}" if query else base
    meta = api_client.get(url).json()["meta"]
    assert meta == {"count": 3 + 17 - 2 - 1, "count_exact": True}
