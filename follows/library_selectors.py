"""Reads of the reader's library: the saved state of the papers on a page (one query for a
whole page of cards), the library page's items and the export."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable

from django.db import DEFAULT_DB_ALIAS
from django.db.models import QuerySet

from papers.citations import Citation, citations_of, paper_pdf_url
from topicsite.readers import any_of, read_statement

from .models import LibraryItem

__all__ = [
    "LIBRARY_CSV_COLUMNS",
    "LIBRARY_STATUSES",
    "library_citations",
    "library_csv",
    "library_items",
    "library_states",
    "library_states_from_rows",
    "library_states_statement",
]

# The library page's filters (``?status=``): every item, unread ones, read ones.
LIBRARY_STATUSES = ("all", "unread", "read")


def library_states(*, user, paper_ids: Iterable[int]) -> dict[int, bool]:
    """``{paper id: read?}`` for the papers of ``paper_ids`` that ``user`` saved (papers not
    saved are absent). One query, whatever the number of papers; none for an anonymous user
    or no ids (:func:`library_states_statement`)."""
    user_id = user.pk if user.is_authenticated else None
    return library_states_from_rows(read_statement(library_states_statement(user_id, paper_ids)))


def library_states_statement(user_id, paper_ids: Iterable) -> tuple[str, str, list] | None:
    """``(alias, sql, params)`` of :func:`library_states` for the reader whose primary key is
    ``user_id``, or ``None`` (not signed in, or no papers). SQL written out and prepared once
    per connection: it runs on every signed-in page of cards, where compiling the ORM's query
    cost more than running it."""
    ids = [int(pk) for pk in paper_ids]
    if not ids or user_id is None:
        return None
    among, among_params = any_of(DEFAULT_DB_ALIAS, "paper_id", ids)
    sql = (
        f"SELECT paper_id, read_at IS NOT NULL AS read FROM {LibraryItem._meta.db_table} "  # noqa: S608
        f"WHERE user_id = %s AND {among}"
    )
    return DEFAULT_DB_ALIAS, sql, [user_id, *among_params]


def library_states_from_rows(rows) -> dict[int, bool]:
    """:func:`library_states` from its statement's ``rows``."""
    return {paper_id: bool(read) for paper_id, read in rows}


def library_items(*, user, status: str = "all") -> QuerySet[LibraryItem]:
    """``user``'s library items, newest saved first; ``status`` ``"unread"`` or ``"read"``
    keeps those only. Raises ``ValueError`` naming the choices for another status."""
    if status not in LIBRARY_STATUSES:
        raise ValueError(f"Unknown status {status!r}: use one of {', '.join(LIBRARY_STATUSES)}.")
    items = LibraryItem.objects.filter(user=user).order_by("-saved_at", "-id")
    if status == "unread":
        items = items.filter(read_at__isnull=True)
    elif status == "read":
        items = items.filter(read_at__isnull=False)
    return items


def library_citations(*, user, status: str = "all") -> list[tuple[LibraryItem, Citation]]:
    """``(item, its paper's Citation)`` for each item of :func:`library_items`, in order,
    each citation naming every stored author. Two queries (items with their papers, authors)."""
    items = list(library_items(user=user, status=status).select_related("paper__primary_category"))
    citations = citations_of(item.paper for item in items)
    return list(zip(items, citations, strict=True))


LIBRARY_CSV_COLUMNS = (
    "id",
    "title",
    "authors",
    "primary_category",
    "submitted",
    "withdrawn",
    "doi",
    "url",
    "pdf_url",
    "saved_at",
    "read_at",
    "note",
)
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _csv_cell(value: object) -> str:
    # As the API's exports: text a spreadsheet would run as a formula gets a leading "'".
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def library_csv(rows: list[tuple[LibraryItem, Citation]]) -> str:
    """The library as CSV (RFC 4180, header row :data:`LIBRARY_CSV_COLUMNS`, one row per
    item; authors joined by ``"; "``; dates ISO 8601; cells that start like a formula
    prefixed with ``'``)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(LIBRARY_CSV_COLUMNS)
    for item, citation in rows:
        paper = citation.paper
        writer.writerow(
            _csv_cell(value)
            for value in (
                paper.identifier,
                paper.title,
                "; ".join(author.name for author in citation.authors),
                paper.primary_category.code,
                paper.submitted.isoformat(),
                "true" if paper.withdrawn else "false",
                citation.doi,
                citation.url,
                paper_pdf_url(paper),
                item.saved_at.isoformat(),
                item.read_at.isoformat() if item.read_at else "",
                item.note,
            )
        )
    return buffer.getvalue()
