"""category_sync: arXiv's canonical categories stored once; categories_by_code: read by code
from the process's copy."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connections, transaction
from django.db.models import QuerySet

from papers import categories as papers_categories
from papers.categories import categories_by_code, category_sync
from papers.models import (
    Category,
)
from papers.taxonomy import all_categories

pytestmark = pytest.mark.django_db


def test_category_sync_stores_canonical_categories_once():
    canonical = {info.code for info in all_categories() if info.canonical == info.code}

    assert category_sync() == len(canonical)
    first = list(Category.objects.order_by("code").values())
    assert category_sync() == len(canonical)

    assert list(Category.objects.order_by("code").values()) == first
    assert set(Category.objects.values_list("code", flat=True)) == canonical
    # Aliases and subsumed archives resolve to their canonical code, never stored themselves.
    assert Category.objects.filter(code__in=["math.MP", "cs.NA", "cmp-lg"]).count() == 0
    math_ph = Category.objects.get(code="math-ph")
    assert (math_ph.name, math_ph.archive, math_ph.group) == (
        "Mathematical Physics",
        "math-ph",
        "grp_physics",
    )
    assert Category.objects.get(code="cs.CL").is_active is True


def test_categories_by_code_reads_each_code_once_per_process(django_assert_num_queries):
    category_sync()
    with django_assert_num_queries(1):
        first = categories_by_code(["cs.CL", "cs.LG", "xx.NOPE"])
    assert set(first) == {"cs.CL", "cs.LG"}
    assert first["cs.CL"] == Category.objects.get(code="cs.CL")
    with django_assert_num_queries(0):
        again = categories_by_code(["cs.LG", "cs.CL"])
    assert again["cs.LG"] is first["cs.LG"]
    # A code the copy lacks is read (alone): a category stored since is found at once.
    Category.objects.filter(code="cs.CL").delete()
    Category.objects.bulk_create([Category(code="zz.NEW", name="New", archive="zz")])
    with django_assert_num_queries(1):
        found = categories_by_code(["zz.NEW", "cs.LG"])
    assert set(found) == {"zz.NEW", "cs.LG"}


def test_categories_by_code_forgets_edits_syncs_and_old_copies(monkeypatch):
    category_sync()
    kept = categories_by_code(["cs.CL"])["cs.CL"]
    # A curator's edit in this process (post_save): the code it had is no longer found.
    kept.code = "cs.XX"
    kept.save()
    assert categories_by_code(["cs.CL"]) == {}
    assert categories_by_code(["cs.XX"])["cs.XX"].pk == kept.pk
    # A sync (bulk_create, no signal) forgets what the copy held, whatever changed.
    Category.objects.filter(pk=kept.pk).update(code="cs.CL")  # no signal: cs.XX still kept
    assert categories_by_code(["cs.XX"])["cs.XX"].pk == kept.pk
    category_sync()
    assert categories_by_code(["cs.XX"]) == {}
    restored = categories_by_code(["cs.CL"])["cs.CL"]
    assert restored.pk == kept.pk
    # A delete in this process (post_delete).
    Category.objects.filter(code="cs.SE").delete()
    assert categories_by_code(["cs.SE"]) == {}
    # Another process's edit (no signal here) is seen once the copy is older than allowed.
    assert categories_by_code(["cs.CL"])["cs.CL"].pk == restored.pk
    Category.objects.filter(pk=restored.pk).update(code="cs.YY")
    assert categories_by_code(["cs.CL"])["cs.CL"].pk == restored.pk
    clock = time.monotonic() + papers_categories.CATEGORIES_KEPT_SECONDS + 1
    monkeypatch.setattr(papers_categories.time, "monotonic", lambda: clock)
    assert categories_by_code(["cs.CL"]) == {}
    assert categories_by_code(["cs.YY"])["cs.YY"].pk == restored.pk


@pytest.mark.django_db(transaction=True)
def test_a_read_by_another_thread_before_an_edit_commits_is_forgotten_at_the_commit():
    """The admin saves in a transaction: the copy is forgotten at the save, and again at the
    commit, since another thread (gunicorn's) may read the row as it was in between (found by
    a breaker helper)."""
    category = Category.objects.create(code="cs.AI", name="AI", archive="cs")
    with transaction.atomic():
        category.code = "cs.CV"
        category.save()
        seen = {}

        def read():
            try:
                seen.update(categories_by_code(["cs.AI"]))
            finally:
                connections.close_all()  # the thread's own connection

        reader = threading.Thread(target=read)
        reader.start()
        reader.join()
        assert set(seen) == {"cs.AI"}  # the committed row, kept by that read
    assert categories_by_code(["cs.AI"]) == {}
    assert categories_by_code(["cs.CV"])["cs.CV"].pk == category.pk


def test_a_read_a_forgetting_overtook_is_not_kept(monkeypatch, django_assert_num_queries):
    """A thread reads, another forgets (a delete, a sync) before the first keeps its rows:
    they are given to the first caller, not kept."""
    category_sync()
    read = QuerySet.in_bulk

    def read_then_forgotten(self, *args, **kwargs):
        found = read(self, *args, **kwargs)
        papers_categories.categories_forget()
        return found

    monkeypatch.setattr(QuerySet, "in_bulk", read_then_forgotten)
    assert set(categories_by_code(["cs.LG"])) == {"cs.LG"}
    monkeypatch.setattr(QuerySet, "in_bulk", read)
    with django_assert_num_queries(1):
        assert set(categories_by_code(["cs.LG"])) == {"cs.LG"}
    with django_assert_num_queries(0):
        categories_by_code(["cs.LG"])
