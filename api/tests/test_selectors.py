"""Paper rows (``api.selectors.paper_rows``): the one-query PostgreSQL path gives what the
prefetching path gives (the path other databases take), paper by paper and response by
response, in a fixed number of queries."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from api import selectors
from api.selectors import ROW_KEYS, paper_row, paper_rows, papers_for_api, rows_of
from papers.models import Paper
from papers.tests.factories import CategoryFactory
from topics.models import Assignment, Topic
from topics.tests.factories import AssignmentFactory, TopicFactory

from .conftest import make_paper

pytestmark = pytest.mark.django_db


@pytest.fixture
def tangle(world):
    """Papers whose lists are stored out of the order responses show them in: affiliations
    of an author not by name, cross-lists not by code (``math-ph`` before ``math.AG`` by code
    point), topics not by name, chips of an inactive topic and a rejected one, a topic changed
    after the paper, and a paper from outside arXiv with nothing attached."""
    zeta = TopicFactory(name="Zeta methods", slug="zeta")
    alpha = TopicFactory(name="Alpha methods", slug="alpha")
    retired = TopicFactory(name="Beta methods", slug="beta", active=False)
    tangled = make_paper(
        arxiv_id="2610.00001",
        submitted=dt.date(2026, 10, 1),
        authors=[
            ("Zoe Zed", ["Zurich Institute", "Aachen Lab", "Munich Centre"]),
            ("Adam Ant", []),
            ("Mia Moe", ["Aachen Lab"]),
        ],
        affiliations=["Zurich Institute", "Aachen Lab", "Munich Centre"],
        topics=[zeta, alpha, retired],
    )
    for code in ("math.AG", "math-ph", "cs.AI", "astro-ph.CO"):
        tangled.cross_lists.add(CategoryFactory(code=code))
    AssignmentFactory(paper=tangled, topic=world.robotics, state=Assignment.State.REJECTED)
    # A chip's topic changed after the paper: Last-Modified follows the topic.
    Topic.objects.filter(pk=alpha.pk).update(updated_at=tangled.updated_at + dt.timedelta(days=3))
    local = make_paper(arxiv_id=None, import_key="ref:tangle", submitted=dt.date(2026, 10, 2))
    return SimpleNamespace(tangled=tangled, local=local, alpha=alpha)


def _prefetched_rows(ids):
    return [paper_row(paper) for paper in papers_for_api().filter(id__in=ids).order_by("id")]


def test_rows_equal_the_prefetched_papers_rows(tangle):
    ids = list(Paper.objects.values_list("id", flat=True))
    rows = rows_of(paper_rows().filter(id__in=ids).order_by("id"))
    assert rows == _prefetched_rows(ids)
    assert all(set(row) == set(ROW_KEYS) for row in rows)


def test_both_row_paths_agree_on_what_counts(tangle):
    Paper.objects.filter(pk=tangle.tangled.pk).update(
        deleted_at=dt.datetime(2026, 10, 3, tzinfo=dt.UTC)
    )
    ids = list(Paper.objects.values_list("id", flat=True))
    rows = rows_of(paper_rows().filter(id__in=ids).order_by("id"))
    assert rows == _prefetched_rows(ids)
    marks = {row["arxiv_id"]: (row["withdrawn"], row["deleted"], row["live"]) for row in rows}
    assert marks[tangle.tangled.arxiv_id] == (False, True, False)
    assert marks["hep-th/0601001"] == (True, False, False)  # the world's withdrawn paper
    assert marks["2609.00001"] == (False, False, True)


def test_rows_order_and_select_like_the_pages_show_them(tangle):
    (row,) = rows_of(paper_rows().filter(id=tangle.tangled.id))
    assert row["authors"] == [
        {"name": "Zoe Zed", "affiliations": ["Aachen Lab", "Munich Centre", "Zurich Institute"]},
        {"name": "Adam Ant", "affiliations": []},
        {"name": "Mia Moe", "affiliations": ["Aachen Lab"]},
    ]
    assert row["affiliations"] == ["Zurich Institute", "Aachen Lab", "Munich Centre"]
    assert row["categories"] == ["astro-ph.CO", "cs.AI", "math-ph", "math.AG"]
    # Accepted chips of active topics only, by name.
    assert row["topics"] == [
        {"slug": "alpha", "name": "Alpha methods"},
        {"slug": "zeta", "name": "Zeta methods"},
    ]
    assert row["last_modified"] == Topic.objects.get(pk=tangle.alpha.pk).updated_at
    (local,) = rows_of(paper_rows().filter(id=tangle.local.id))
    assert (local["arxiv_id"], local["authors"], local["categories"], local["topics"]) == (
        None,
        [],
        [],
        [],
    )
    assert local["last_modified"] == tangle.local.updated_at


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/papers/?page_size=100",
        "/api/v1/papers/?page_size=2&ordering=updated",
        "/api/v1/papers/?fields=id,topics,urls",
        "/api/v1/topics/llm/papers/",
        "/api/v1/search/?q=agents",
        "/api/v1/search/?q=agents&fields=rank,id",
    ],
)
def test_responses_are_the_same_bytes_on_the_prefetching_path(api_client, tangle, monkeypatch, url):
    rows_response = api_client.get(url)
    assert rows_response.status_code == 200
    assert rows_response.json()["results"]
    # What a database other than PostgreSQL gets: papers_for_api and paper_row.
    monkeypatch.setattr(selectors, "connection", SimpleNamespace(vendor="sqlite"))
    assert not isinstance(paper_rows().first(), dict)
    prefetched_response = api_client.get(url)
    assert prefetched_response.content == rows_response.content
    assert prefetched_response["ETag"] == rows_response["ETag"]
    assert prefetched_response["Last-Modified"] == rows_response["Last-Modified"]


def test_a_local_paper_is_shown_the_same_in_lists_and_alone(api_client, tangle):
    listed = api_client.get("/api/v1/papers/?ordering=-id&page_size=1").json()["results"][0]
    alone = api_client.get(f"/api/v1/papers/local:{tangle.local.pk}/").json()
    assert listed == alone
    assert listed["id"] == f"local:{tangle.local.pk}"
    assert listed["urls"]["html"].endswith(f"/papers/local/{tangle.local.pk}/")
    assert listed["urls"]["abs"] is None


@pytest.mark.parametrize(
    ("url", "queries"),
    [
        # The page: one query with everything it shows, and meta.count's (api.facets: the
        # filtered ids counted up to EXACT_COUNT_LIMIT + 1).
        ("/api/v1/papers/?page_size=100", 2),
        # The category looked up, then the page and its count.
        ("/api/v1/papers/?primary_category=cs.AI&page_size=100", 3),
        # Whether the query has a searchable word, the keyword plan's two estimates (the
        # matches, the table: topics.search._keyword_plan), the ranked window, whether any
        # paper has a vector of the current model (none here: hybrid answers with keywords),
        # the page.
        ("/api/v1/search/?q=agents&page_size=100", 6),
    ],
)
def test_a_page_of_papers_is_a_fixed_number_of_queries(
    api_client, tangle, django_assert_num_queries, url, queries
):
    with django_assert_num_queries(queries):
        assert api_client.get(url).status_code == 200


def test_a_topic_page_of_papers_adds_only_the_topic_lookups(api_client, tangle):
    with CaptureQueriesContext(connection) as listed:
        assert api_client.get("/api/v1/papers/?page_size=100").status_code == 200
    with CaptureQueriesContext(connection) as topic_page:
        assert api_client.get("/api/v1/topics/llm/papers/?page_size=100").status_code == 200

    def pages(captured):
        return [q for q in captured.captured_queries if "json_build_array" in q["sql"]]

    # One query builds each page; the rest of the topic page's are its topic's lookups and
    # the count both lists make.
    assert len(pages(topic_page)) == len(pages(listed)) == 1
    assert len(listed.captured_queries) == 2
