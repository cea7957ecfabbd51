"""arXiv's category list in the database: :func:`category_sync` stores the taxonomy's canonical
categories, :func:`category_ids_ensure` finds (and creates when missing) the rows papers need."""

from __future__ import annotations

from django.db import transaction

from .models import Category
from .taxonomy import all_categories, get_category

__all__ = ["category_ids_ensure", "category_sync"]


def category_sync() -> int:
    """Upsert every canonical arXiv category of ``papers.taxonomy`` into ``Category``.

    Aliases (``math.MP``) and subsumed legacy archives (``cmp-lg``) are not stored: papers
    reference their canonical codes. Idempotent; returns the number of categories in the
    taxonomy that are stored (whether created or already there).
    """
    infos = [info for info in all_categories() if info.canonical == info.code]
    with transaction.atomic():
        Category.objects.bulk_create(
            [_category_row(info) for info in infos],
            update_conflicts=True,
            unique_fields=["code"],
            update_fields=["name", "archive", "archive_name", "group", "group_name", "is_active"],
        )
    return len(infos)


def category_ids_ensure(codes: set[str]) -> dict[str, int]:
    """``Category`` ids by canonical code (``{code: pk}``), creating the rows of ``codes``
    missing from the table from the taxonomy. Raises ``UnknownCategory`` for a code the
    taxonomy does not know (records are checked against it before they get here)."""
    found = dict(Category.objects.filter(code__in=codes).values_list("code", "pk"))
    missing = codes - found.keys()
    if missing:
        Category.objects.bulk_create(
            [_category_row(get_category(code)) for code in sorted(missing)],
            ignore_conflicts=True,
        )
        found = dict(Category.objects.filter(code__in=codes).values_list("code", "pk"))
    return found


def _category_row(info) -> Category:
    return Category(
        code=info.code,
        name=info.name,
        archive=info.archive,
        archive_name=info.archive_name,
        group=info.group,
        group_name=info.group_name,
        is_active=info.is_active,
    )
