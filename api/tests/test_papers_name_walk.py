"""``papers/?author=`` and ``?affiliation=`` alone: the page from the matching authors'
newest-first index walks (``authorship_author_newest_idx``), ``meta.count`` from the
authorships or paper affiliations alone. The same papers, in the same order, page by page, as
the general path (any other filter beside it); alternatives, negation, withdrawn and deleted
papers as before; the authorships' ``submitted`` kept by the triggers of papers 0015."""

from __future__ import annotations

import dataclasses
import datetime as dt
from importlib import import_module
from types import SimpleNamespace

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from api import facets
from api.tests.paging import walk
from api.views import papers as paper_views
from papers.author_selectors import affiliations_newest_paper_ids, authors_newest_paper_ids
from papers.author_services import authors_merge
from papers.models import Affiliation, Author, Authorship, Paper, PaperAffiliation
from papers.tests.factories import AuthorFactory
from topics.tests.factories import UserFactory

from .conftest import make_paper

pytestmark = pytest.mark.django_db

# Any other filter sends the list down the general path; this one keeps every paper.
GENERAL = "submitted_after=1900-01-01"
MIGRATION = import_module("papers.migrations.0015_authorship_submitted_author_newest_idx")


@pytest.fixture
def crowded_authors(world):
    """The world with 15 more papers on four dates: "Grace Smith" and "Hank Smithers" (both
    match ``smith``) on most, both on some (listed once); "Ivy Wang" on one; one withdrawn and
    one deleted (both still listed, as before); one naming Grace Smith twice after a curator
    merged her variant "G. Smith" into her."""
    category = world.first.primary_category
    for n in range(14):
        authors = [
            [("Grace Smith", [])],
            [("Hank Smithers", []), ("Jo Other", [])],
            [("Jo Other", []), ("Grace Smith", []), ("Hank Smithers", [])],
        ][n % 3]
        if n == 9:
            authors = [("Grace Smith", []), ("G. Smith", [])]
        make_paper(
            arxiv_id=f"2611.{n:05d}",
            submitted=dt.date(2026, 11, 1 + n % 4),
            primary_category=category,
            authors=authors,
            withdrawn=n == 4,
            deleted_at=timezone.now() if n == 7 else None,
        )
    make_paper(
        arxiv_id="2611.00099",
        submitted=dt.date(2026, 11, 2),
        primary_category=category,
        authors=[("Ivy Wang", [])],
    )
    authors_merge(
        authors=[Author.objects.get(name="G. Smith")],
        survivor=Author.objects.get(name="Grace Smith"),
        user=UserFactory(username="curator"),
    )
    return world


def expected(*texts: str, negated: bool = False) -> list[str]:
    """Identifiers of the papers with an author whose name holds any of ``texts`` (none of
    them when ``negated``), newest first, computed without the API."""
    matched = {
        a.paper_id
        for a in Authorship.objects.select_related("author")
        if any(text.lower() in a.author.name.lower() for text in texts)
    }
    papers = Paper.objects.order_by("-submitted", "-id")
    return [p.identifier for p in papers if (p.pk in matched) != negated]


@pytest.mark.parametrize("page_size", [1, 2, 25])
@pytest.mark.parametrize(
    ("value", "texts", "negated"),
    [
        ("smith", ["smith"], False),
        ("SMITHERS", ["smithers"], False),
        ("wang|grace", ["wang", "grace"], False),
        ("!smith", ["smith"], True),
        ("!smith|wang", ["smith", "wang"], True),
        ("nobody", ["nobody"], False),
    ],
)
def test_the_author_filter_pages_as_the_general_path_does(
    api_client, crowded_authors, page_size, value, texts, negated
):
    want = expected(*texts, negated=negated)
    base = f"/api/v1/papers/?author={value}&page_size={page_size}"
    fast, fast_counts = walk(api_client, base)
    general, general_counts = walk(api_client, f"{base}&{GENERAL}")
    assert fast == general == want
    assert fast_counts == general_counts == {len(want)}


def test_what_the_author_filter_finds(api_client, crowded_authors):
    found = walk(api_client, "/api/v1/papers/?author=smith")[0]
    # Withdrawn (2611.00004) and deleted (2611.00007) papers are listed, as before; the paper
    # naming Grace Smith twice (2611.00009) once; Ivy Wang's and Jo Other's alone not at all.
    assert len(found) == len(set(found)) == 14
    assert {"2611.00004", "2611.00007", "2611.00009"} <= set(found)
    assert "2611.00099" not in found
    assert walk(api_client, "/api/v1/papers/?author=smith&withdrawn=true")[0] == ["2611.00004"]
    assert walk(api_client, "/api/v1/papers/?author=frank")[0] == ["hep-th/0601001"]


def test_a_previous_link_walks_back_the_same_papers(api_client, crowded_authors):
    first = api_client.get("/api/v1/papers/?author=smith&page_size=4").json()
    second = api_client.get(first["next"]).json()
    back = api_client.get(second["previous"]).json()
    assert [p["id"] for p in back["results"]] == [p["id"] for p in first["results"]]


@pytest.mark.parametrize("ordering", ["submitted", "-id", "-updated"])
def test_other_orderings_take_the_general_path(api_client, crowded_authors, ordering):
    base = f"/api/v1/papers/?author=smith&ordering={ordering}&page_size=3"
    assert walk(api_client, base) == walk(api_client, f"{base}&{GENERAL}")


def test_many_matching_authors_take_the_general_path(api_client, crowded_authors, monkeypatch):
    monkeypatch.setattr(paper_views, "AUTHOR_WALK_MAX", 1)
    with CaptureQueriesContext(connection) as queries:
        found = walk(api_client, "/api/v1/papers/?author=smith&page_size=5")
    assert found == (expected("smith"), {14})
    assert not any("LATERAL" in query["sql"] for query in queries.captured_queries)


def test_the_page_walks_the_authors_index_and_reads_no_other_paper(api_client, crowded_authors):
    with CaptureQueriesContext(connection) as queries:
        body = api_client.get("/api/v1/papers/?author=smith&page_size=2").json()
    sql = [query["sql"] for query in queries.captured_queries]
    # The matching authors, their walk, the page's rows by id, the count from authorships.
    assert len(sql) == 4, sql
    assert '"papers_author"' in sql[0] and "LIMIT 201" in sql[0]
    assert "LATERAL" in sql[1] and "papers_authorship" in sql[1]
    assert '"papers_paper"."id" IN (' in sql[2] and 'papers_author" U1' not in sql[2]
    assert sql[3].startswith("SELECT count(DISTINCT paper_id)") and "papers_paper" not in sql[3]
    assert body["meta"] == {"count": 14, "count_exact": True}
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute("EXPLAIN " + sql[1])
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Index Only Scan using authorship_author_newest_idx" in plan, plan


def test_the_selector_gives_the_same_papers_without_lateral(crowded_authors, monkeypatch):
    """SQLite has no LATERAL: one UNION ALL branch per author, the same papers."""
    author_ids = list(Author.objects.filter(name__icontains="smith").values_list("pk", flat=True))
    newest = Paper.objects.filter(authorships__author_id__in=author_ids).distinct()
    after = newest.order_by("-submitted", "-id")[3]
    want = list(
        newest.filter(submitted__lte=after.submitted)
        .exclude(submitted=after.submitted, id__gte=after.pk)
        .order_by("-submitted", "-id")
        .values_list("pk", flat=True)[:4]
    )
    before = (after.submitted, after.pk)
    lateral = authors_newest_paper_ids(author_ids=author_ids, limit=4, before=before)
    monkeypatch.setattr(connection, "vendor", "sqlite")
    branches = authors_newest_paper_ids(author_ids=author_ids, limit=4, before=before)
    monkeypatch.undo()
    assert lateral == branches == want
    assert authors_newest_paper_ids(author_ids=[], limit=4) == []
    with pytest.raises(ValueError):
        authors_newest_paper_ids(author_ids=author_ids, limit=-1)


@pytest.mark.parametrize("value", ["university", "institute|lab", "!university", "nowhere"])
def test_the_affiliation_filter_counts_as_before(api_client, world, value):
    texts = value.lstrip("!").split("|")
    base = f"/api/v1/papers/?affiliation={value}"
    fast, fast_counts = walk(api_client, base)
    general, general_counts = walk(api_client, f"{base}&{GENERAL}")
    matched = {
        pa.paper_id
        for pa in PaperAffiliation.objects.select_related("affiliation")
        if any(text in pa.affiliation.name.lower() for text in texts)
    }
    want = [
        p.identifier
        for p in Paper.objects.order_by("-submitted", "-id")
        if (p.pk in matched) != value.startswith("!")
    ]
    assert fast == general == want
    assert fast_counts == general_counts == {len(want)}


def test_a_count_above_the_limit_is_the_estimate(api_client, crowded_authors, monkeypatch):
    monkeypatch.setattr(facets, "EXACT_COUNT_LIMIT", 5)
    meta = api_client.get("/api/v1/papers/?author=smith").json()["meta"]
    assert meta["count_exact"] is False and meta["count"] >= 14
    # More link rows than it reads, too few distinct papers among them: counted as before.
    monkeypatch.setattr(facets, "EXACT_COUNT_LIMIT", 10_000)
    monkeypatch.setattr(facets, "LINKED_COUNT_ROWS", 3)
    with CaptureQueriesContext(connection) as queries:
        meta = api_client.get("/api/v1/papers/?author=smith").json()["meta"]
    assert meta == {"count": 14, "count_exact": True}
    assert any("LIMIT 10001" in query["sql"] for query in queries.captured_queries)


def paper_dates() -> dict[int, tuple[dt.date | None, dt.date]]:
    """``{authorship id: (its submitted, its paper's)}`` of every authorship."""
    return {
        a.pk: (a.submitted, a.paper.submitted) for a in Authorship.objects.select_related("paper")
    }


def assert_dates_follow_papers():
    dates = paper_dates()
    assert dates and all(mine == papers for mine, papers in dates.values()), dates


def test_the_triggers_keep_each_authorship_dated_as_its_paper(api_client, crowded_authors):
    world = crowded_authors
    assert_dates_follow_papers()  # inserts (ORM create) and the merge above
    # bulk_create, as ingestion writes them
    extra = AuthorFactory(name="Kim Bulk")
    Authorship.objects.bulk_create([Authorship(paper=world.second, author=extra, position=5)])
    # the paper's date changes: by save() and by update()
    world.second.submitted = dt.date(2020, 2, 2)
    world.second.save()
    Paper.objects.filter(pk=world.third.pk).update(submitted=dt.date(2019, 3, 3))
    # an authorship moved to another paper
    moved = Authorship.objects.filter(paper=world.first).order_by("position").first()
    Authorship.objects.filter(pk=moved.pk).update(paper=world.old, position=9)
    # a stale instance saved whole (its submitted from before the paper moved) comes right
    stale = Authorship.objects.get(paper=world.third, position=0)
    Paper.objects.filter(pk=world.third.pk).update(submitted=dt.date(2018, 4, 4))
    stale.name_raw = "D. Drake"
    stale.save()
    # an author merge moves authorships between authors, not papers
    authors_merge(
        authors=[Author.objects.get(name="Hank Smithers")],
        survivor=Author.objects.get(name="Grace Smith"),
        user=UserFactory(username="curator2"),
    )
    assert_dates_follow_papers()
    assert Authorship.objects.get(pk=stale.pk).submitted == dt.date(2018, 4, 4)
    assert walk(api_client, "/api/v1/papers/?author=grace&page_size=3") == (
        expected("grace"),
        {len(expected("grace"))},
    )


def test_the_backfill_dates_every_authorship_in_batches(crowded_authors, monkeypatch):
    with connection.cursor() as cursor:
        # No trigger fires on an update of submitted alone: the state before the migration.
        cursor.execute("UPDATE papers_authorship SET submitted = NULL")
    assert all(mine is None for mine, _ in paper_dates().values())
    monkeypatch.setattr(MIGRATION, "BATCH", 3)
    schema_editor = SimpleNamespace(connection=connection, execute=None)
    MIGRATION.backfill(None, schema_editor)
    assert_dates_follow_papers()


AFFILIATION_MIGRATION = import_module("papers.migrations.0019_paper_affiliation_submitted")


@pytest.fixture
def crowded_affiliations(world):
    """The world with 12 more papers on four dates listing affiliations: "University of
    Leeds" and "Leeds Institute" (both match ``leeds``) on most, both on some (listed once),
    "Lab of Nowhere" on others; one withdrawn and one deleted (both still listed)."""
    category = world.first.primary_category
    for n in range(12):
        affiliations = [
            ["University of Leeds"],
            ["Leeds Institute", "Lab of Nowhere"],
            ["Lab of Nowhere", "University of Leeds", "Leeds Institute"],
            ["Lab of Nowhere"],
        ][n % 4]
        make_paper(
            arxiv_id=f"2611.{n:05d}",
            submitted=dt.date(2026, 11, 1 + n % 4),
            primary_category=category,
            affiliations=affiliations,
            withdrawn=n == 5,
            deleted_at=timezone.now() if n == 6 else None,
        )
    return world


def affiliated(*texts: str, negated: bool = False) -> list[str]:
    """Identifiers of the papers listing an affiliation whose name holds any of ``texts``
    (none of them when ``negated``), newest first, computed without the API."""
    matched = {
        pa.paper_id
        for pa in PaperAffiliation.objects.select_related("affiliation")
        if any(text.lower() in pa.affiliation.name.lower() for text in texts)
    }
    papers = Paper.objects.order_by("-submitted", "-id")
    return [p.identifier for p in papers if (p.pk in matched) != negated]


@pytest.mark.parametrize("page_size", [1, 3, 25])
@pytest.mark.parametrize(
    ("value", "texts", "negated"),
    [
        ("leeds", ["leeds"], False),
        ("INSTITUTE", ["institute"], False),
        ("nowhere|leeds", ["nowhere", "leeds"], False),
        ("!leeds", ["leeds"], True),
        ("nothing", ["nothing"], False),
    ],
)
def test_the_affiliation_filter_pages_as_the_general_path_does(
    api_client, crowded_affiliations, page_size, value, texts, negated
):
    want = affiliated(*texts, negated=negated)
    base = f"/api/v1/papers/?affiliation={value}&page_size={page_size}"
    fast, fast_counts = walk(api_client, base)
    general, general_counts = walk(api_client, f"{base}&{GENERAL}")
    assert fast == general == want
    assert fast_counts == general_counts == {len(want)}


def test_the_affiliation_page_walks_its_index_and_reads_no_other_paper(
    api_client, crowded_affiliations
):
    with CaptureQueriesContext(connection) as queries:
        body = api_client.get("/api/v1/papers/?affiliation=leeds&page_size=2").json()
    sql = [query["sql"] for query in queries.captured_queries]
    # The matching affiliations, their walk, the page's rows by id, the count from the links.
    assert len(sql) == 4, sql
    assert '"papers_affiliation"' in sql[0] and "LIMIT 201" in sql[0]
    assert "papers_paperaffiliation" in sql[1] and "paper_id" in sql[1]
    assert '"papers_paper"."id" IN (' in sql[2]
    assert sql[3].startswith("SELECT count(DISTINCT paper_id)") and '"papers_paper"' not in sql[3]
    assert body["meta"] == {"count": len(affiliated("leeds")), "count_exact": True}
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute("SET LOCAL enable_bitmapscan = off")
            cursor.execute("EXPLAIN " + sql[1])
            plan = "\n".join(row[0] for row in cursor.fetchall())
        assert "Index Only Scan using paper_affil_affil_newest_idx" in plan, plan


def test_the_affiliation_selector_gives_the_same_papers_without_lateral(
    crowded_affiliations, monkeypatch
):
    ids = list(Affiliation.objects.filter(name__icontains="leeds").values_list("pk", flat=True))
    newest = Paper.objects.filter(paper_affiliations__affiliation_id__in=ids).distinct()
    after = newest.order_by("-submitted", "-id")[2]
    want = list(
        newest.filter(submitted__lte=after.submitted)
        .exclude(submitted=after.submitted, id__gte=after.pk)
        .order_by("-submitted", "-id")
        .values_list("pk", flat=True)[:4]
    )
    before = (after.submitted, after.pk)
    lateral = affiliations_newest_paper_ids(affiliation_ids=ids, limit=4, before=before)
    monkeypatch.setattr(connection, "vendor", "sqlite")
    branches = affiliations_newest_paper_ids(affiliation_ids=ids, limit=4, before=before)
    monkeypatch.undo()
    assert lateral == branches == want
    with pytest.raises(ValueError):
        affiliations_newest_paper_ids(affiliation_ids=ids, limit=-1)


def affiliation_dates() -> dict[int, tuple[dt.date | None, dt.date]]:
    """``{paper affiliation id: (its submitted, its paper's)}`` of every paper affiliation."""
    return {
        pa.pk: (pa.submitted, pa.paper.submitted)
        for pa in PaperAffiliation.objects.select_related("paper")
    }


def test_the_triggers_keep_each_paper_affiliation_dated_as_its_paper(
    api_client, crowded_affiliations
):
    world = crowded_affiliations
    dates = affiliation_dates()
    assert dates and all(mine == papers for mine, papers in dates.values())
    # bulk_create, as ingestion writes them; a paper's date changed by save() and update()
    leeds = Affiliation.objects.get(name="University of Leeds")
    PaperAffiliation.objects.bulk_create(
        [PaperAffiliation(paper=world.second, affiliation=leeds, position=7)]
    )
    world.second.submitted = dt.date(2020, 2, 2)
    world.second.save()
    Paper.objects.filter(pk=world.third.pk).update(submitted=dt.date(2019, 3, 3))
    # moved to another paper; a stale instance saved whole
    moved = PaperAffiliation.objects.filter(affiliation=leeds).order_by("pk").first()
    PaperAffiliation.objects.filter(pk=moved.pk).update(paper=world.old, position=9)
    stale = PaperAffiliation.objects.get(paper=world.second, position=7)
    Paper.objects.filter(pk=world.second.pk).update(submitted=dt.date(2018, 4, 4))
    stale.position = 8
    stale.save()
    dates = affiliation_dates()
    assert all(mine == papers for mine, papers in dates.values()), dates
    assert PaperAffiliation.objects.get(pk=stale.pk).submitted == dt.date(2018, 4, 4)
    assert walk(api_client, "/api/v1/papers/?affiliation=leeds&page_size=3") == (
        affiliated("leeds"),
        {len(affiliated("leeds"))},
    )


def test_the_backfill_dates_every_paper_affiliation_in_batches(crowded_affiliations):
    with connection.cursor() as cursor:
        cursor.execute("UPDATE papers_paperaffiliation SET submitted = NULL")

    def execute(sql, params=()):
        with connection.cursor() as cursor:
            cursor.execute(sql, params)

    copy = dataclasses.replace(AFFILIATION_MIGRATION.COPY, batch=3)
    copy.backfill(None, SimpleNamespace(connection=connection, execute=execute))
    dates = affiliation_dates()
    assert dates and all(mine == papers for mine, papers in dates.values())
