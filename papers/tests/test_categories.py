"""category_sync: arXiv's canonical categories stored once."""

from __future__ import annotations

import pytest

from papers.categories import category_sync
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
