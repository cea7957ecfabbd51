"""The category filter's two forms (api/filters.py ``PaperFilter.filter_category``): ``primary
IN (...) OR id IN (cross-listed)`` and ``id IN (primary UNION ALL cross-listed)``, chosen per
purpose (a page, a count) from the planner's estimates. Both must give the same papers and
counts everywhere the filter is used; the choice must follow the estimates; the count of a
list is asked with the count's purpose, the page with the page's."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from api import filters
from papers.tests.factories import CategoryFactory, PaperFactory
from topics.tests.factories import AssignmentFactory, TopicFactory

pytestmark = pytest.mark.django_db

QUERIES = [
    "category=cs.CL",
    "category=cs.CL|cs.AI",
    "category=!cs.CL",
    "category=cs.CL&submitted_after=2024-01-01",
    "category=hep-th&withdrawn=false",
    "category=cs.CL&primary_category=hep-th",
    "category=cs.CL&ordering=submitted",
    "category=cs.CL&group_by=primary_category",
]


@pytest.fixture
def papers():
    """Papers in cs.CL, cs.AI and hep-th, some cross-listed (one to two categories of the
    same filter), one withdrawn, over three years; two in a topic."""
    cl, ai, th = (CategoryFactory(code=code) for code in ("cs.CL", "cs.AI", "hep-th"))
    made = []
    for n in range(18):
        primary = (cl, ai, th)[n % 3]
        paper = PaperFactory(
            primary_category=primary,
            submitted=dt.date(2023 + n % 3, 1 + n % 12, 1 + n),
            withdrawn=n == 7,
        )
        if n % 4 == 0:
            paper.cross_lists.add(cl)
        if n % 5 == 0:
            paper.cross_lists.add(ai if primary != ai else th)
        made.append(paper)
    topic = TopicFactory(slug="mixed")
    for paper in made[::2]:
        AssignmentFactory(paper=paper, topic=topic)
    return made


def answer(client, url):
    response = client.get(url)
    assert response.status_code == 200, response.content
    body = response.json()
    return (
        [paper["id"] for paper in body["results"]],
        body["meta"]["count"],
        body["meta"].get("count_exact"),
        body["group_by"],
    )


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("base", ["/api/v1/papers/", "/api/v1/topics/mixed/papers/"])
def test_both_forms_give_the_same_papers_and_counts(client, papers, monkeypatch, base, query):
    url = f"{base}?{query}&page_size=5"
    monkeypatch.setattr(
        filters,
        "CATEGORY_UNION_FACTOR",
        {"page": 0.0, "count": 0.0, "estimate": 0.0, "unread": 0.0},
    )
    walked = answer(client, url)
    monkeypatch.setattr(
        filters,
        "CATEGORY_UNION_FACTOR",
        {"page": 1e12, "count": 1e12, "estimate": 1e12, "unread": 0.0},
    )
    unioned = answer(client, url)
    assert walked == unioned
    assert walked[1] > 0


def test_the_choice_follows_the_estimates_and_the_purpose(monkeypatch, db):
    estimates = iter([])
    monkeypatch.setattr(filters, "planner_rows", lambda queryset: next(estimates))
    monkeypatch.setattr(filters, "planner_table_rows", lambda model, using: 1_000_000)
    from papers.models import Paper

    primary = Paper.objects.values("id")
    cross = Paper.cross_lists.through.objects.values("paper_id")

    def wanted(primary_rows, cross_rows, purpose):
        nonlocal estimates
        estimates = iter([primary_rows, cross_rows])
        return filters.category_union_wanted(primary, cross, purpose=purpose)

    # At 1M papers: a page reads a union below about 570 matches, a count below 31,600; an
    # estimate always.
    assert wanted(300, 200, "page") and not wanted(500, 100, "page")
    assert wanted(20_000, 8_000, "count") and wanted(25_000, 6_000, "count")
    assert not wanted(25_000, 7_000, "count") and not wanted(200_000, 0, "count")
    assert wanted(200_000, 50_000, "estimate") and wanted(1, 0, "estimate")
    # Read for neither page nor count (a category walk): never, and nothing estimated.
    estimates = iter([])
    assert not filters.category_union_wanted(primary, cross, purpose="unread")
    with pytest.raises(KeyError):
        wanted(1, 1, "export")


# A category list that also filters by withdrawn is read through the ORM's two forms; one
# filtered by the category alone (or with dates) on PostgreSQL walks the categories' index
# ranges (api/tests/test_papers_category_walk.py).
GENERAL = "category=cs.CL&withdrawn=false"


@pytest.mark.parametrize("query", [GENERAL, "category=cs.CL"])
def test_a_count_above_the_cap_is_estimated_from_the_union(client, papers, monkeypatch, query):
    """PostgreSQL estimates ``primary IN (…) OR id IN (cross-listed)`` at half of all papers
    whatever the category (math.PR's 28,262 papers at 1M: 510,262), the union from its
    per-category statistics (28,143): above the exact cap the estimate is the union's even
    when the count walked."""
    from api import facets

    monkeypatch.setattr(facets, "EXACT_COUNT_LIMIT", 2)
    monkeypatch.setattr(
        filters,
        "CATEGORY_UNION_FACTOR",
        {"page": 0.0, "count": 0.0, "estimate": float("inf"), "unread": 0.0},
    )
    with CaptureQueriesContext(connection) as queries:
        _ids, count, exact, _groups = answer(client, f"/api/v1/papers/?{query}")
    assert exact is False and count >= 3
    explains = [q["sql"] for q in queries if q["sql"].startswith("EXPLAIN")]
    # The last EXPLAIN is the estimate: of the whole filtered list, in the union form.
    assert "UNION ALL" in explains[-1] and " OR " not in explains[-1]
    if query == GENERAL or connection.vendor != "postgresql":
        counted = [q["sql"] for q in queries if q["sql"].startswith("SELECT COUNT(*)")]
        assert len(counted) == 1 and "UNION ALL" not in counted[0]
        # The rows' category code is a subquery: the count joins no category per paper.
        assert "papers_category" not in counted[0]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="a PostgreSQL plan")
def test_the_cross_listed_half_reads_the_index_alone(papers):
    """papers 0017, then 0018: cross-lists indexed by (category, submitted, paper), so the
    union's cross-listed half never fetches a row to learn its paper."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute(
            "EXPLAIN SELECT paper_id FROM papers_paper_cross_lists WHERE category_id = %s",
            [papers[0].primary_category_id],
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Index Only Scan using cross_list_category_newest_idx" in plan, plan


def test_a_list_asks_for_its_page_and_its_count_separately(client, papers, monkeypatch):
    asked = []
    real = filters.category_union_wanted

    def spy(primary, cross_listed, *, purpose, known=None):
        asked.append(purpose)
        return real(primary, cross_listed, purpose=purpose, known=known)

    monkeypatch.setattr(filters, "category_union_wanted", spy)
    with CaptureQueriesContext(connection) as queries:
        answer(client, f"/api/v1/papers/?{GENERAL}")
    assert asked == ["page", "count"]
    # The estimates are asked once for both (two EXPLAINs; the list's count adds its own).
    explains = [q["sql"] for q in queries if q["sql"].startswith("EXPLAIN")]
    assert (
        len([sql for sql in explains if "papers_paper_cross_lists" in sql.split("WHERE")[0]]) == 1
    )
    asked.clear()
    answer(client, "/api/v1/papers/?primary_category=cs.CL")
    assert asked == []
