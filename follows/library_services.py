"""Writes of the reader's library (:class:`~follows.models.LibraryItem`): save and remove a
paper, mark it read or unread, keep a note. Each write is one statement or one transaction
and idempotent: saving a saved paper or marking a read paper read changes nothing."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from papers.models import Paper

from .models import LibraryItem

__all__ = [
    "library_item_mark_read",
    "library_item_note",
    "library_item_remove",
    "library_item_save",
]


def library_item_save(*, user, paper: Paper) -> LibraryItem:
    """Save ``paper`` to ``user``'s library (now); a paper already saved keeps its saved
    date, read state and note. Safe against a concurrent save of the same paper (the unique
    (user, paper) constraint). Returns the item."""
    with transaction.atomic():
        item, _created = LibraryItem.objects.get_or_create(user=user, paper=paper)
    return item


def library_item_remove(*, user, paper: Paper) -> bool:
    """Remove ``paper`` from ``user``'s library, with its read state and note. Returns
    whether it was there."""
    deleted, _ = LibraryItem.objects.filter(user=user, paper=paper).delete()
    return bool(deleted)


def library_item_mark_read(*, item: LibraryItem, read: bool) -> LibraryItem:
    """Mark ``item`` read (``read_at`` now, kept when it was read already) or unread
    (``read_at`` cleared). Returns it."""
    if read and item.read_at is None:
        item.read_at = timezone.now()
    elif not read:
        item.read_at = None
    else:
        return item
    item.save(update_fields=["read_at"])
    return item


def library_item_note(*, item: LibraryItem, note: str) -> LibraryItem:
    """Set ``item``'s note to ``note`` (surrounding whitespace dropped; empty removes it).
    Raises ``ValidationError`` naming the limit for a note longer than
    ``LibraryItem.NOTE_MAX_LENGTH`` characters, or one with a NUL character (PostgreSQL
    cannot store it: was a 500); nothing is written then."""
    note = note.strip()
    if "\x00" in note:
        raise ValidationError("A note cannot contain NUL characters.")
    if len(note) > LibraryItem.NOTE_MAX_LENGTH:
        raise ValidationError(
            f"A note holds at most {LibraryItem.NOTE_MAX_LENGTH} characters; this one has "
            f"{len(note)}."
        )
    item.note = note
    item.save(update_fields=["note"])
    return item
