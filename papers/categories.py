"""arXiv's category list in the database: :func:`category_sync` stores the taxonomy's canonical
categories, :func:`category_ids_ensure` finds (and creates when missing) the rows papers need,
:func:`categories_by_code` reads them by code from this process's copy."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from .models import Category
from .taxonomy import all_categories, get_category

__all__ = ["categories_by_code", "categories_forget", "category_ids_ensure", "category_sync"]

# How long a process keeps its copy of the stored categories (seconds): the longest another
# process's edit of a category (in the admin) goes unseen by this one.
CATEGORIES_KEPT_SECONDS = 60.0

_kept: dict[str, Category] = {}
_kept_since = 0.0  # time.monotonic() of the copy's first row
_kept_generation = 0  # moved on by every categories_forget
_kept_lock = threading.Lock()


def categories_by_code(codes: Iterable[str]) -> dict[str, Category]:
    """``{code: Category}`` for the stored categories of ``codes`` (canonical codes, as
    ``papers.taxonomy.canonical_category`` gives them); a code not stored is absent.

    Every API request filtered by category reads its categories: through the ORM that cost
    about 0.3 ms of CPU for a table of 150 rows that changes when the taxonomy is synced or a
    curator edits a category. So each process keeps the rows it has read, for at most
    :data:`CATEGORIES_KEPT_SECONDS`, and reads only codes it lacks (one query, none when it
    has them all; a code asked for and not stored is asked again next time, so a category
    created since is found at once). This process's own saves, deletes and syncs forget the
    copy (:func:`categories_forget`) when they happen and again when they commit, and a read
    that a forgetting overtook is not kept: another thread cannot keep the row as it was
    before the edit. (A read made inside the transaction that changed a category, which then
    rolls back, is kept for the time left.) The instances are shared between requests: read
    them, never change them."""
    global _kept_since
    wanted = set(codes)
    now = time.monotonic()
    with _kept_lock:
        if now - _kept_since > CATEGORIES_KEPT_SECONDS:
            _kept.clear()
        found = {code: _kept[code] for code in wanted if code in _kept}
        generation = _kept_generation
    missing = wanted - found.keys()
    if missing:
        read = Category.objects.in_bulk(missing, field_name="code")
        with _kept_lock:
            if generation == _kept_generation:
                if not _kept:
                    _kept_since = now
                _kept.update(read)
        found.update(read)
    return found


def categories_forget() -> None:
    """Drop this process's copy of the categories (:func:`categories_by_code`), and keep
    none of the reads under way."""
    global _kept_generation
    with _kept_lock:
        _kept.clear()
        _kept_generation += 1


def _categories_changed(using: str | None = None) -> None:
    """Forget the copy now and when the change (on database ``using``) commits: until then
    another thread may read the row as it was before the change."""
    categories_forget()
    transaction.on_commit(categories_forget, using=using)


@receiver(post_save, sender=Category, dispatch_uid="papers.categories_forget_saved")
@receiver(post_delete, sender=Category, dispatch_uid="papers.categories_forget_deleted")
def _category_changed(sender, using, **kwargs) -> None:
    _categories_changed(using)


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
    _categories_changed()  # bulk_create sends no post_save
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
        _categories_changed()
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
