"""Whole-corpus facets from stored counts (``api.facet_counts``, PostgreSQL triggers of api
0003): after every kind of write (papers added one by one and in bulk, withdrawn, moved to
another category or date, deleted; assignments accepted, rejected, moved, deleted, bulk
inserted; authorships added, merged onto one paper, deleted; tables truncated) the stored
counts equal a live ``GROUP BY`` of every row, and so does every ``group_by`` the API answers
without filters; those answers cost the same few queries whatever the number of papers."""

from __future__ import annotations

import dataclasses
import datetime as dt
import importlib
from io import StringIO

import pytest
from django.apps import apps as django_apps
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.models import Count
from django.db.models.functions import TruncMonth, TruncWeek, TruncYear
from django.test.utils import CaptureQueriesContext
from django_celery_beat.models import PeriodicTask

from api import facet_counts
from api.facet_counts import STORED_FACETS, facet_counts_check, facet_counts_fold
from api.facets import GROUP_BY_KEYS, group_counts
from api.models import FacetCount, FacetCountDelta
from api.selectors import paper_rows
from api.tasks import fold_facet_counts
from papers.author_services import authors_merge
from papers.categories import category_sync
from papers.ingest import papers_upsert
from papers.models import Author, Authorship, Category, Paper
from papers.parsers.snapshot import iter_snapshot
from papers.tests.conftest import SNAPSHOT_HEAD
from topics.assignments import assignment_decide
from topics.models import Assignment
from topics.tests.factories import AssignmentFactory, TopicFactory, UserFactory

from .conftest import make_paper

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="stored counts are kept by PostgreSQL triggers"
    ),
]

EPOCH = dt.date(1970, 1, 1)
# The period groups, counted live as the API's filtered facets count them (api.facets).
PERIODS = {"submitted_year": TruncYear, "submitted_month": TruncMonth, "submitted_week": TruncWeek}


def live_counts() -> set[tuple[str, int, int]]:
    """Every (facet, key, count) counted now from the rows themselves, with the ORM."""
    papers = Paper.objects.order_by()
    rows = set()
    for category, n in papers.values_list("primary_category").annotate(n=Count("id")):
        rows.add(("primary_category", category, n))
    for day, n in papers.values_list("submitted").annotate(n=Count("id")):
        rows.add(("submitted_day", (day - EPOCH).days, n))
    for facet, trunc in PERIODS.items():
        for start, n in papers.values_list(trunc("submitted")).annotate(n=Count("id")):
            rows.add((facet, (start - EPOCH).days, n))
    for withdrawn, n in papers.values_list("withdrawn").annotate(n=Count("id")):
        rows.add(("withdrawn", int(withdrawn), n))
    accepted = Assignment.objects.accepted().order_by()
    for topic, n in accepted.values_list("topic").annotate(n=Count("paper", distinct=True)):
        rows.add(("topic", topic, n))
    authorships = Authorship.objects.order_by()
    for author, n in authorships.values_list("author").annotate(n=Count("paper", distinct=True)):
        rows.add(("author", author, n))
    return rows


def stored_counts() -> set[tuple[str, int, int]]:
    facet_counts_fold()
    assert not FacetCountDelta.objects.exists()
    return set(FacetCount.objects.values_list("facet", "key", "count"))


def assert_counts_are_live() -> None:
    """The stored counts equal a live count of every row, and each whole-corpus facet of the
    API (from the stored counts) equals the same facet counted live over the matches."""
    assert stored_counts() == live_counts()
    for key in GROUP_BY_KEYS:
        cache.clear()  # the live facet's cache is keyed on the newest ids, not on edits
        live = group_counts(paper_rows().filter(id__gt=0), key)
        assert group_counts(paper_rows(), key) == live, key


@pytest.fixture
def curator(db):
    return UserFactory(username="curator")


def test_every_write_keeps_the_stored_counts_equal_to_a_live_count(world, curator):
    assert_counts_are_live()
    assert {g["key"]: g["count"] for g in group_counts(paper_rows(), "withdrawn")} == {
        "false": 3,
        "true": 1,
    }

    # New papers, one author on two of them.
    shared = [("Grace Green", []), ("Heidi Hill", [])]
    extra = [
        make_paper(
            arxiv_id=f"2610.{n:05d}",
            submitted=dt.date(2026, 10, 1 + n),
            primary_category=world.first.primary_category,
            authors=shared if n == 0 else [(f"Author {n}", [])],
            topics=[world.robotics, world.llm] if n % 2 else [world.agents],
        )
        for n in range(4)
    ]
    Authorship.objects.create(
        paper=extra[1], author=Author.objects.get(name="Grace Green"), position=1
    )
    assert_counts_are_live()

    # Withdrawn (a bulk update and a save), moved to another category and another date.
    Paper.objects.filter(pk=extra[0].pk).update(withdrawn=True)
    extra[1].withdrawn = True
    extra[1].save()
    Paper.objects.filter(pk=extra[2].pk).update(
        primary_category=Category.objects.get(code="hep-th"), submitted=dt.date(1999, 12, 31)
    )
    assert_counts_are_live()

    # Retagged: rejected by a curator, moved to another topic, deleted, a new topic's.
    decided = Assignment.objects.get(paper=world.first, topic=world.agents)
    assignment_decide(assignment=decided, state=Assignment.State.REJECTED, user=curator)
    Assignment.objects.filter(paper=extra[3], topic=world.llm).update(topic=world.agents)
    Assignment.objects.filter(paper=extra[1], topic=world.robotics).delete()
    AssignmentFactory(paper=world.old, topic=TopicFactory(name="Strings", slug="strings"))
    rejected = Assignment.objects.get(paper=world.second, topic=world.robotics)
    assignment_decide(assignment=rejected, state=Assignment.State.ACCEPTED, user=curator)
    assert_counts_are_live()

    # Two names of one person on one paper merged: the paper counts once for the survivor.
    heidi = Author.objects.get(name="Heidi Hill")
    grace = Author.objects.get(name="Grace Green")
    authors_merge(authors=[heidi], survivor=grace, user=curator)
    assert Authorship.objects.filter(paper=extra[0], author=grace).count() == 2
    assert_counts_are_live()
    # One of the two authorships goes: the paper still counts; then the other: it does not.
    Authorship.objects.filter(paper=extra[0], author=grace, position=1).delete()
    assert_counts_are_live()
    Authorship.objects.filter(paper=extra[0], author=grace).delete()
    assert_counts_are_live()

    # A paper deleted (its authorships and assignments go with it).
    Paper.objects.filter(pk=extra[3].pk).delete()
    Paper.objects.filter(pk=world.second.pk).delete()
    assert_counts_are_live()
    # Groups that emptied are gone, not left at zero.
    assert not FacetCount.objects.filter(count__lte=0).exists()


def test_bulk_imports_and_bulk_sql_keep_the_stored_counts(db):
    category_sync()
    with SNAPSHOT_HEAD.open("rb") as stream:
        records = list(iter_snapshot(stream, source="snapshot"))
    papers_upsert(records=records[:120], batch_size=50)
    assert_counts_are_live()
    # The same papers reported again, newer: in another category, half of them withdrawn, a
    # third with other authors (the upsert's UPDATE path), beside new papers.
    changed = [
        dataclasses.replace(
            record,
            categories=["hep-th", *record.categories],
            updated=(record.updated or record.submitted) + dt.timedelta(days=400),
            withdrawn=n % 2 == 0,
            authors=[record.authors[0], *record.authors] if n % 3 == 0 else record.authors,
        )
        for n, record in enumerate(records[:20])
    ]
    papers_upsert(records=[*changed, *records[120:]], batch_size=40)
    assert Paper.objects.filter(primary_category__code="hep-th", withdrawn=True).count() >= 10
    assert_counts_are_live()
    # Tagging's and the bench's way: one INSERT … SELECT of many assignments.
    topics = [TopicFactory(name=f"Bulk {n}", slug=f"bulk-{n}").pk for n in range(3)]
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO topics_assignment
                (paper_id, topic_id, source, state, score, created_at, updated_at)
            SELECT p.id, (%s::bigint[])[1 + p.id %% 3], 'rule',
                CASE WHEN p.id %% 5 = 0 THEN 'pending' ELSE 'accepted' END, 1.0, now(), now()
            FROM papers_paper p
            """,
            [topics],
        )
        cursor.execute("UPDATE topics_assignment SET state = 'rejected' WHERE paper_id % 7 = 0")
    assert_counts_are_live()


def test_truncating_the_tables_empties_their_facets(world):
    assert FacetCount.objects.filter(facet="author").exists() or FacetCountDelta.objects.exists()
    with connection.cursor() as cursor:
        # The test's transaction holds deferred foreign-key checks, which TRUNCATE refuses.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("TRUNCATE papers_paper CASCADE")
    assert stored_counts() == live_counts() == set()


def test_a_whole_corpus_facet_reads_no_paper_and_costs_the_same_queries_always(world):
    def captured(key: str) -> list[str]:
        with CaptureQueriesContext(connection) as queries:
            group_counts(paper_rows(), key)
        # The test's transaction turns the fold's into a savepoint: not a query of its own.
        return [
            query["sql"]
            for query in queries.captured_queries
            if not query["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT"))
        ]

    facet_counts_fold()
    for key in GROUP_BY_KEYS:
        assert key in STORED_FACETS
        sql = captured(key)
        assert len(sql) == 2, sql  # is a change pending, the read
        assert not any(
            table in text for text in sql for table in ("papers_paper", "papers_authorship")
        ), sql
    for n in range(5):
        make_paper(
            arxiv_id=f"2610.{n:05d}",
            submitted=dt.date(2026, 10, 1),
            primary_category=world.first.primary_category,
            authors=[(f"Author {n}", [])],
        )
    sql = captured("author")
    assert len(sql) == 4, sql  # is a change pending, the fold's lock, the fold, the read
    assert len(captured("author")) == 2


def test_a_filtered_facet_still_counts_the_matches(world):
    with CaptureQueriesContext(connection) as captured:
        groups = group_counts(paper_rows().filter(withdrawn=False), "withdrawn")
    assert groups == [{"key": "false", "key_display_name": "false", "count": 3}]
    assert any("papers_paper" in query["sql"] for query in captured.captured_queries)


def test_folding_twice_folds_nothing_the_second_time(world):
    facet_counts_fold()
    make_paper(
        arxiv_id="2610.00001",
        submitted=dt.date(2026, 10, 1),
        primary_category=world.first.primary_category,
    )
    assert facet_counts_fold() == 3  # one delta per paper facet: category, day, withdrawn
    assert facet_counts_fold() == 0


def test_the_command_finds_counts_written_around_the_triggers_and_rebuilds_them(world):
    call_command("facet_counts", stdout=StringIO())
    with connection.cursor() as cursor:
        # A data-only restore or a hand-made bulk write with the triggers switched off (the
        # test's deferred foreign-key checks run first: ALTER TABLE refuses pending ones).
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("ALTER TABLE papers_paper DISABLE TRIGGER api_facet_paper_deltas_update")
        cursor.execute("UPDATE papers_paper SET withdrawn = NOT withdrawn")
        cursor.execute("ALTER TABLE papers_paper ENABLE TRIGGER api_facet_paper_deltas_update")
    assert facet_counts_check() == {("withdrawn", 0): (3, 1), ("withdrawn", 1): (1, 3)}
    out = StringIO()
    with pytest.raises(CommandError, match="2 facet groups differ"):
        call_command("facet_counts", stdout=out)
    assert "withdrawn 0: stored 3, live 1" in out.getvalue()
    call_command("facet_counts", "--rebuild", stdout=StringIO())
    assert facet_counts_check() == {}
    assert stored_counts() == live_counts()


def test_the_beat_task_folds_and_its_schedule_points_at_it(world):
    assert FacetCountDelta.objects.exists()  # the world's papers, not folded yet
    assert fold_facet_counts() > 0
    assert not FacetCountDelta.objects.exists() and fold_facet_counts() == 0
    assert stored_counts() == live_counts()
    migration = importlib.import_module("api.migrations.0004_fold_facet_counts_schedule")
    schema_editor = type("SchemaEditor", (), {"connection": connection})()
    PeriodicTask.objects.filter(name=migration.TASK_NAME).delete()
    migration.schedule_create(django_apps, schema_editor)
    migration.schedule_create(django_apps, schema_editor)  # a second run adds nothing
    task = PeriodicTask.objects.get(name=migration.TASK_NAME)
    assert task.task == fold_facet_counts.name and task.enabled
    assert (task.interval.every, task.interval.period) == (5, "minutes")


def test_periods_are_stored_groups_kept_from_each_day(world):
    """A paper moved across a year's, a month's and a week's boundary moves in all three
    stored periods; the period facets read their own rows, not the days'."""
    facet_counts_fold()
    paper = make_paper(
        arxiv_id="2612.00001",
        submitted=dt.date(2026, 12, 31),  # a Thursday: week of Monday 2026-12-28
        primary_category=world.first.primary_category,
    )
    assert stored_counts() == live_counts()
    Paper.objects.filter(pk=paper.pk).update(submitted=dt.date(2027, 1, 4))  # next Monday
    assert stored_counts() == live_counts()
    stored = set(FacetCount.objects.values_list("facet", "key"))
    for facet, start in [
        ("submitted_year", dt.date(2027, 1, 1)),
        ("submitted_month", dt.date(2027, 1, 1)),
        ("submitted_week", dt.date(2027, 1, 4)),
    ]:
        assert (facet, (start - EPOCH).days) in stored
    Paper.objects.filter(pk=paper.pk).delete()
    assert stored_counts() == live_counts()
    assert not FacetCount.objects.filter(facet="submitted_year", key__gte=(2027 - 1970) * 365)
    with CaptureQueriesContext(connection) as queries:
        group_counts(paper_rows(), "submitted_month")
    read = queries.captured_queries[-1]["sql"]
    assert "submitted_month" in read and "submitted_day" not in read


def test_the_migration_counts_the_periods_of_the_stored_days(world):
    facet_counts_fold()
    expected = set(FacetCount.objects.values_list("facet", "key", "count"))
    FacetCount.objects.filter(facet__in=list(PERIODS)).delete()
    migration = importlib.import_module("api.migrations.0006_facet_count_periods")
    schema_editor = type(
        "SchemaEditor",
        (),
        {"connection": connection, "execute": lambda self, sql, params=(): _execute(sql, params)},
    )()
    migration.periods_count(django_apps, schema_editor)
    assert set(FacetCount.objects.values_list("facet", "key", "count")) == expected
    migration.periods_delete(django_apps, schema_editor)
    assert not FacetCount.objects.filter(facet__in=list(PERIODS)).exists()


def _execute(sql, params):
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def test_a_large_fold_inside_a_transaction_does_not_vacuum(world, monkeypatch):
    # VACUUM cannot run inside a transaction block: the fold leaves it to the next one.
    monkeypatch.setattr(facet_counts, "VACUUM_AFTER_FOLDED", 1)
    assert facet_counts_fold() > 1


def _vacuum_count() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT vacuum_count FROM pg_stat_user_tables WHERE relname = %s",
            [FacetCountDelta._meta.db_table],
        )
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_a_large_fold_vacuums_the_dead_deltas_it_left(monkeypatch):
    """Outside a transaction a fold of VACUUM_AFTER_FOLDED deltas or more vacuums their
    table (what a bulk import's fold leaves for every later probe to read through); a
    smaller one does not."""
    monkeypatch.setattr(facet_counts, "VACUUM_AFTER_FOLDED", 5)

    def deltas(n: int) -> None:
        FacetCountDelta.objects.bulk_create(
            FacetCountDelta(facet="withdrawn", key=0, delta=1 - 2 * (i % 2)) for i in range(n)
        )

    before = _vacuum_count()
    deltas(4)
    assert facet_counts_fold() == 4
    assert _vacuum_count() == before
    deltas(6)
    assert facet_counts_fold() == 6
    assert _vacuum_count() == before + 1
    assert not FacetCount.objects.exists()  # +1 -1 three times: the group emptied
