"""``papers/?category=`` with submitted dates or alone: the page from the categories'
newest-first index ranges (``papers.category_selectors``: primary papers and cross-lists,
which carry their paper's ``submitted``, papers 0018), ``meta.count`` from the same ranges up
to the exact limit. The same papers, in the same order, page by page, as the general path
(any other filter beside it); a paper in two of the categories once; the cross-lists' dates
kept by the triggers whoever writes them."""

from __future__ import annotations

import datetime as dt
import re
from importlib import import_module
from types import SimpleNamespace

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from api import facets
from api.tests.paging import walk
from papers.category_selectors import category_newest_paper_ids, category_paper_count_capped
from papers.ingest import papers_upsert
from papers.ingest.checks import record_prepare
from papers.ingest.postgres import plans_write_copy
from papers.ingest.write import PaperPlan
from papers.models import Category, Paper
from papers.parsers.snapshot import iter_snapshot
from papers.tests.conftest import SNAPSHOT_HEAD

from .conftest import make_paper

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="the category walk is PostgreSQL's (papers 0018)"
    ),
]

# Another filter sends the list down the general path; this one keeps every paper.
GENERAL = "updated_after=1900-01-01"
MIGRATION = import_module("papers.migrations.0018_cross_list_submitted")
CROSS_LISTS = Paper.cross_lists.through


@pytest.fixture
def crowded(world):
    """The world with 16 more papers on five dates, across cs.AI, cs.LG and hep-th as
    primary categories and cross-lists (some in both cs.AI and cs.LG), one withdrawn and one
    deleted (both still listed)."""
    codes = ["cs.AI", "cs.LG", "hep-th"]
    categories = {c.code: c for c in Category.objects.filter(code__in=codes)}
    for n in range(16):
        primary = categories[codes[n % 3]]
        cross = [categories[codes[(n + k) % 3]] for k in (1, 2)[: n % 3]]
        make_paper(
            arxiv_id=f"2611.{n:05d}",
            submitted=dt.date(2026, 11, 1 + n % 5),
            primary_category=primary,
            cross_lists=[c.code for c in cross],
            withdrawn=n == 4,
            deleted_at=timezone.now() if n == 7 else None,
        )
    return world


def expected(*codes: str, since=None, until=None) -> list[str]:
    """Identifiers of the papers in any of ``codes`` (primary or cross-listed), submitted in
    [since, until], newest first, computed without the API or the index ranges."""
    papers = Paper.objects.order_by("-submitted", "-id").prefetch_related("cross_lists")
    return [
        p.identifier
        for p in papers.select_related("primary_category")
        if ({p.primary_category.code} | {c.code for c in p.cross_lists.all()}) & set(codes)
        and (since is None or p.submitted >= since)
        and (until is None or p.submitted <= until)
    ]


@pytest.mark.parametrize("page_size", [1, 2, 25])
@pytest.mark.parametrize(
    ("query", "codes", "since", "until"),
    [
        ("category=cs.LG", ["cs.LG"], None, None),
        ("category=cs.AI|cs.LG", ["cs.AI", "cs.LG"], None, None),
        ("category=hep-th&submitted_after=2026-11-03", ["hep-th"], dt.date(2026, 11, 3), None),
        ("category=cs.AI&submitted=>2026-11-02", ["cs.AI"], dt.date(2026, 11, 3), None),
        ("category=cs.AI&submitted=<2026-11-03", ["cs.AI"], None, dt.date(2026, 11, 2)),
        (
            "category=cs.LG|hep-th&submitted=2026",
            ["cs.LG", "hep-th"],
            dt.date(2026, 1, 1),
            dt.date(2026, 12, 31),
        ),
        (
            "category=cs.LG&submitted_after=2026-11-02&submitted_before=2026-11-04",
            ["cs.LG"],
            dt.date(2026, 11, 2),
            dt.date(2026, 11, 4),
        ),
        (
            "category=cs.AI|cs.CL&submitted=2026-11-01",
            ["cs.AI", "cs.CL"],
            dt.date(2026, 11, 1),
            dt.date(2026, 11, 1),
        ),
    ],
)
def test_the_category_filter_pages_as_the_general_path_does(
    api_client, crowded, page_size, query, codes, since, until
):
    want = expected(*codes, since=since, until=until)
    base = f"/api/v1/papers/?{query}&page_size={page_size}"
    fast, fast_counts = walk(api_client, base)
    general, general_counts = walk(api_client, f"{base}&{GENERAL}")
    assert fast == general == want
    assert fast_counts == general_counts == {len(want)}


def test_the_page_reads_the_index_ranges_and_no_other_paper(api_client, crowded):
    with CaptureQueriesContext(connection) as queries:
        body = api_client.get("/api/v1/papers/?category=cs.LG&page_size=2").json()
    sql = [query["sql"] for query in queries.captured_queries]
    walked = [text for text in sql if "LATERAL" in text]
    assert len(walked) == 2, sql  # the page's ids, the capped count
    assert all("papers_paper_cross_lists" in text for text in walked)
    assert not any("count(*) FROM (SELECT" in text.upper() for text in sql)
    rows = [text for text in sql if '"papers_paper"."id" IN (' in text]
    # The page's rows by their ids, not by a subquery of the categories.
    assert len(rows) == 1 and re.search(r'WHERE "papers_paper"\."id" IN \(\d+, \d+, \d+\)', rows[0])
    assert body["meta"] == {"count": len(expected("cs.LG")), "count_exact": True}
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        category = Category.objects.get(code="cs.LG").pk
        cursor.execute(
            "EXPLAIN " + walked[0].replace("%(categories)s", f"ARRAY[{category}]"),
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "cross_list_category_newest_idx" in plan, plan
    assert "paper_category_newest_idx" in plan, plan


def test_above_the_exact_limit_the_count_is_an_estimate(api_client, crowded, monkeypatch):
    monkeypatch.setattr(facets, "EXACT_COUNT_LIMIT", 3)
    meta = api_client.get("/api/v1/papers/?category=cs.AI|cs.LG").json()["meta"]
    assert meta["count_exact"] is False and meta["count"] >= 4


@pytest.mark.parametrize(
    "query",
    [
        "category=!cs.LG",  # negated: the general path
        "category=cs.LG&withdrawn=false",  # another filter: the general path
        "category=cs.LG&ordering=submitted",  # oldest first: the general path's page
    ],
)
def test_other_lists_take_the_general_path_and_agree(api_client, crowded, query):
    base = f"/api/v1/papers/?{query}&page_size=3"
    assert walk(api_client, base) == walk(api_client, f"{base}&{GENERAL}")


@pytest.mark.parametrize("value", [">9999-12-31", "<0001-01-01"])
def test_dates_past_the_calendar_ends_are_answered(api_client, crowded, value):
    response = api_client.get(f"/api/v1/papers/?category=cs.LG&submitted={value}")
    assert response.status_code == 200
    assert response.json()["results"] == []


def test_a_previous_link_walks_back_the_same_papers(api_client, crowded):
    first = api_client.get("/api/v1/papers/?category=cs.AI&page_size=3").json()
    second = api_client.get(first["next"]).json()
    back = api_client.get(second["previous"]).json()
    assert [p["id"] for p in back["results"]] == [p["id"] for p in first["results"]]


def test_the_selectors_count_a_paper_in_two_categories_once(crowded):
    ids = list(Category.objects.filter(code__in=["cs.AI", "cs.LG"]).values_list("pk", flat=True))
    want = expected("cs.AI", "cs.LG")
    found = category_newest_paper_ids(category_ids=ids, limit=100)
    assert [Paper.objects.get(pk=pk).identifier for pk in found] == want
    assert category_paper_count_capped(category_ids=ids, cap=100) == len(want)
    # Capped: a range cut at the cap says "at least the cap".
    assert category_paper_count_capped(category_ids=ids, cap=3) == 3
    assert category_paper_count_capped(category_ids=ids, cap=0) == 0
    assert category_newest_paper_ids(category_ids=[], limit=5) == []
    with pytest.raises(ValueError):
        category_newest_paper_ids(category_ids=ids, limit=-1)


def test_cross_lists_carry_their_papers_date_whoever_writes(crowded):
    paper = Paper.objects.get(arxiv_id="2611.00001")  # cs.LG, cross-listed to hep-th
    hep_th = Category.objects.get(code="hep-th")
    cs_ai = Category.objects.get(code="cs.AI")
    paper.cross_lists.add(cs_ai)  # the ORM's own insert
    dates = set(CROSS_LISTS.objects.filter(paper=paper).values_list("paper__submitted", flat=True))
    assert _cross_list_dates(paper) == dates == {paper.submitted}
    Paper.objects.filter(pk=paper.pk).update(submitted=dt.date(2027, 1, 5))  # a new date
    assert _cross_list_dates(paper) == {dt.date(2027, 1, 5)}
    newest = category_newest_paper_ids(category_ids=[hep_th.pk], limit=1)
    assert newest == [paper.pk]
    other = Paper.objects.get(arxiv_id="2611.00004")  # cs.LG, cross-listed to hep-th only
    CROSS_LISTS.objects.filter(paper=paper, category=cs_ai).update(paper=other)  # moved
    assert _cross_list_dates(other) == {other.submitted}


def _cross_list_dates(paper) -> set:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT submitted FROM papers_paper_cross_lists WHERE paper_id = %s",
            [paper.pk],
        )
        return {row[0] for row in cursor.fetchall()}


def test_the_migration_backfills_the_dates_and_swaps_the_index(crowded):
    with connection.cursor() as cursor:
        cursor.execute("UPDATE papers_paper_cross_lists SET submitted = NULL")
    schema_editor = SimpleNamespace(connection=connection, execute=_execute)
    MIGRATION.backfill(None, schema_editor)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM papers_paper_cross_lists x JOIN papers_paper p"
            " ON p.id = x.paper_id WHERE x.submitted IS DISTINCT FROM p.submitted"
        )
        assert cursor.fetchone()[0] == 0
        cursor.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'papers_paper_cross_lists'"
        )
        indexes = {row[0] for row in cursor.fetchall()}
    assert MIGRATION.INDEX in indexes and MIGRATION.OLD_INDEX not in indexes


def _execute(sql, params=()):
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def test_the_bulk_copy_and_the_orm_import_both_date_their_cross_lists(db):
    """Both import paths (the snapshot backfill's COPY, ``papers_upsert``'s ORM writes) leave
    every cross-list dated as its paper."""
    with SNAPSHOT_HEAD.open("rb") as stream:
        records = list(iter_snapshot(stream, source="snapshot"))
    author_parts: dict = {}
    plans = [
        PaperPlan(state=record_prepare(record, source="s", author_parts=author_parts), old=None)
        for record in records[:60]
    ]
    plans_write_copy(plans, author_parts)
    papers_upsert(records=records[60:120], batch_size=25)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), count(*) FILTER (WHERE x.submitted IS DISTINCT FROM p.submitted)"
            " FROM papers_paper_cross_lists x JOIN papers_paper p ON p.id = x.paper_id"
        )
        rows, wrong = cursor.fetchone()
    assert rows > 0 and wrong == 0


@pytest.mark.parametrize("blank", ["%20", "+", "%09", "%C2%A0"])
@pytest.mark.parametrize("rest", ["", "&submitted=2026", "&ordering=id"])
def test_a_blank_category_filters_nothing(api_client, crowded, blank, rest):
    """A category of spaces cleans to nothing, as the filter backend reads it: every paper,
    not a 500 (found by a breaker helper)."""
    response = api_client.get(f"/api/v1/papers/?category={blank}{rest}&page_size=100")
    assert response.status_code == 200, response.content
    general = api_client.get(f"/api/v1/papers/?{rest.lstrip('&')}&page_size=100&{GENERAL}")
    assert response.json()["results"] == general.json()["results"]


def test_a_request_looks_each_category_up_once(api_client, crowded):
    """The page's, the count's and the walk's filtersets share one cleaned form, whose
    categories are read in one query, and the next request finds them in the process's copy
    (``papers.categories.categories_by_code``)."""
    with CaptureQueriesContext(connection) as queries:
        for query in ("category=cs.AI|cs.LG", "category=cs.AI|cs.LG&withdrawn=false"):
            assert api_client.get(f"/api/v1/papers/?{query}").status_code == 200
    lookups = [
        q["sql"] for q in queries.captured_queries if 'FROM "papers_category" WHERE' in q["sql"]
    ]
    assert len(lookups) == 1, lookups  # both categories at once, by the first request
    assert "'cs.AI'" in lookups[0] and "'cs.LG'" in lookups[0]


def test_a_walked_list_estimates_no_form_of_the_category_filter(api_client, crowded):
    """The walk reads the page and the count from the categories' index ranges, so the
    filtered queryset is never read: its category filter costs no EXPLAIN (three queries of
    the page's form choice before); a facet still reads it, so a request with ``group_by``
    still chooses."""
    with CaptureQueriesContext(connection) as queries:
        body = api_client.get("/api/v1/papers/?category=cs.AI|cs.LG").json()
    assert body["meta"]["count_exact"] is True
    assert not [q["sql"] for q in queries.captured_queries if q["sql"].startswith("EXPLAIN")]
    with CaptureQueriesContext(connection) as queries:
        url = "/api/v1/papers/?category=cs.AI|cs.LG&group_by=primary_category"
        assert api_client.get(url).status_code == 200
    assert [q["sql"] for q in queries.captured_queries if q["sql"].startswith("EXPLAIN")]
