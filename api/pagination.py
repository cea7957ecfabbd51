"""Pagination of API lists.

- Paper lists: :class:`PaperCursorPagination`, an opaque ``cursor`` over the ordering (default
  submitted descending, then id descending), so pages stay stable while new papers arrive;
  ``page_size`` (default 25, at most 100).
- Other lists (topics, categories, search results ranked by relevance):
  :class:`PageNumberPagination`, ``page`` and ``page_size`` (default 25, at most 100).

Both answer ``{"next": url|null, "previous": url|null, "results": [...]}``; page numbers add
``count`` (for ``search/``: the papers in its ranked window, at most
``api.filters.SEARCH_WINDOW``, not every match; paper lists have no count, so no ``COUNT``
runs over a million papers). A ``page_size`` that is not a positive whole number, or above
the cap, is a 400 naming the parameter (DRF would silently fall back to the default); so is a
``cursor`` the API did not hand out (DRF would answer 404).
"""

import base64

from django.utils.dateparse import parse_date
from rest_framework import pagination
from rest_framework.exceptions import NotFound, ValidationError

MAX_PAGE_SIZE = 100
DEFAULT_PAGE_SIZE = 25
INVALID_CURSOR = (
    "Not a cursor this API handed out; use the 'next' and 'previous' links of a response, "
    "or leave it out for the first page."
)


def _checked_page_size(request, default: int, cap: int) -> int:
    raw = request.query_params.get("page_size")
    if raw is None or raw == "":
        return default
    # isascii(): str.isdigit() is also true of "²" and other digits int() refuses.
    if not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw) <= cap:
        raise ValidationError(
            {"page_size": [f"Must be a whole number from 1 to {cap}; got {raw!r}."]}
        )
    return int(raw)


def _page_size_parameter(parameters: list[dict], default: int, cap: int) -> list[dict]:
    for parameter in parameters:
        if parameter["name"] == "page_size":
            parameter["description"] = f"Results per page, 1 to {cap} (default {default})."
            parameter["schema"] = {"type": "integer", "minimum": 1, "maximum": cap}
    return parameters


class PaperCursorPagination(pagination.CursorPagination):
    """Cursor pagination for paper lists, on (-submitted, -id) unless ``ordering`` says
    otherwise (see ``api.filters.PaperOrderingFilter``)."""

    ordering = ("-submitted", "-id")
    page_size = DEFAULT_PAGE_SIZE
    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE

    def get_page_size(self, request):
        return _checked_page_size(request, self.page_size, self.max_page_size)

    def decode_cursor(self, request):
        """DRF's cursor, with its position checked against the ordering field (a date for
        ``submitted``/``last_updated``, a whole number for ``id``). Raises ``ValidationError``
        (a 400 naming ``cursor``) for anything that is not a cursor the API handed out, a
        forged position included (never a 500 when the database is asked); DRF's own answer
        would be a 404, as if the list itself were missing."""
        encoded = request.query_params.get(self.cursor_query_param)
        # DRF's base64 decoding skips characters outside the alphabet, so "%%%" would read as
        # an empty cursor: the first page. A cursor the API gave out is strict base64; an
        # empty ?cursor= is no cursor (the first page).
        if encoded and not _strict_base64(encoded):
            raise ValidationError({"cursor": [INVALID_CURSOR]})
        try:
            cursor = super().decode_cursor(request)
        except NotFound:
            raise ValidationError({"cursor": [INVALID_CURSOR]}) from None
        if cursor is not None and cursor.position is not None:
            if not _valid_position(self.ordering[0].lstrip("-"), cursor.position):
                raise ValidationError({"cursor": [INVALID_CURSOR]})
        return cursor

    def get_schema_operation_parameters(self, view):
        return _page_size_parameter(
            super().get_schema_operation_parameters(view), self.page_size, self.max_page_size
        )


def _strict_base64(value: str) -> bool:
    """Whether ``value`` is non-empty, canonical base64 of something non-empty."""
    try:
        return bool(value) and bool(base64.b64decode(value.encode("ascii"), validate=True))
    except (ValueError, UnicodeEncodeError):  # binascii.Error is a ValueError
        return False


def _valid_position(field: str, position: str) -> bool:
    """Whether ``position`` (from a cursor) can be compared with the ordering ``field``."""
    if field == "id":
        return position.isascii() and position.isdigit() and int(position) < 2**63
    if field in ("submitted", "updated", "last_updated"):
        try:
            return parse_date(position) is not None
        except ValueError:  # well formed but not a date (2024-02-30)
            return False
    return "\x00" not in position


class PageNumberPagination(pagination.PageNumberPagination):
    """Page-number pagination (``page``, ``page_size``) with ``count``."""

    page_size = DEFAULT_PAGE_SIZE
    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE

    def get_page_size(self, request):
        return _checked_page_size(request, self.page_size, self.max_page_size)

    def get_schema_operation_parameters(self, view):
        return _page_size_parameter(
            super().get_schema_operation_parameters(view), self.page_size, self.max_page_size
        )


class CategoryPagination(PageNumberPagination):
    """Categories: all ~155 arXiv categories fit in one page by default."""

    page_size = 200
    max_page_size = 500
