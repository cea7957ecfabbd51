"""Signals of the shared kernel, which every app may send."""

from django.dispatch import Signal

# Rows that public pages show were written in bulk (an ingestion batch, tagging, a curator's
# bulk decision), where no per-row ``post_save`` fires. Sent after the transaction commits;
# no arguments. ``topicsite.pagecache`` listens.
content_changed = Signal()


def content_changed_on_commit() -> None:
    """Send :data:`content_changed` once the current transaction commits (at once outside one)."""
    from django.db import transaction

    transaction.on_commit(lambda: content_changed.send(sender=None))
