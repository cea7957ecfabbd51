"""Pagination of API lists.

- Paper lists: :class:`PaperCursorPagination`, an opaque ``cursor`` holding a keyset position
  in the ordering (default submitted descending, then id descending), so pages stay stable
  while new papers arrive, any page costs what the first does and a walk sees every paper
  once; ``page_size`` (default 25, at most 100).
- Other lists (topics, categories, search results ranked by relevance):
  :class:`PageNumberPagination`, ``page`` and ``page_size`` (default 25, at most 100).

Both answer ``{"next": url|null, "previous": url|null, "results": [...]}``; page numbers add
``count`` (for ``search/``: the papers in its ranked window, at most
``topics.search.SEARCH_WINDOW``, not every match; paper lists have no count, so no ``COUNT``
runs over a million papers). A ``page_size`` that is not a positive whole number, or above
the cap, is a 400 naming the parameter (DRF would silently fall back to the default); so is a
``cursor`` the API did not hand out (DRF would answer 404).
"""

import base64
import datetime as dt
from urllib.parse import parse_qs, urlencode

from django.db.models import Q
from django.utils.dateparse import parse_date
from rest_framework import pagination
from rest_framework.exceptions import ValidationError
from rest_framework.utils.urls import remove_query_param, replace_query_param

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
    """Keyset pagination for paper lists, on (-submitted, -id) unless ``ordering`` says
    otherwise (see ``api.filters.PaperOrderingFilter``: one field, then id the same way).

    A cursor is a position: the ordering's values of the last paper of a page (``next``) or
    the first (``previous``), base64 of ``p=<value>&p=<id>`` (``r=1`` added for a page
    before the position). A page is the ``page_size`` papers strictly after (before) the
    position, one query whatever the depth: no offset, so any number of papers per date pages
    through, each exactly once. DRF's own cursor keeps only the first field and breaks ties
    with an offset it caps at 1,000, so a date with more papers than that pages for ever.
    """

    ordering = ("-submitted", "-id")
    page_size = DEFAULT_PAGE_SIZE
    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE

    def get_page_size(self, request):
        return _checked_page_size(request, self.page_size, self.max_page_size)

    def paginate_queryset(self, queryset, request, view=None):
        """The page of ``queryset`` (papers, or paper rows) the request's cursor points at, as
        a list in the ordering; sets what the ``next`` and ``previous`` links need."""
        self.request = request
        self.page_size = self.get_page_size(request)
        self.base_url = request.build_absolute_uri()
        self.ordering = self.get_ordering(request, queryset, view)
        self.cursor = self.decode_cursor(request)
        reverse = self.cursor is not None and self.cursor.reverse
        position = None if self.cursor is None else self.cursor.position
        ordering = _reversed(self.ordering) if reverse else self.ordering
        queryset = queryset.order_by(*ordering)
        if position is not None:
            queryset = queryset.filter(_after(ordering, position))
        # One more than a page tells whether there is a page beyond.
        rows = list(queryset[: self.page_size + 1])
        self.page = rows[: self.page_size]
        beyond = len(rows) > self.page_size
        if reverse:
            self.page.reverse()
            self.has_next, self.has_previous = position is not None, beyond
        else:
            self.has_next, self.has_previous = beyond, position is not None
        if (self.has_previous or self.has_next) and self.template is not None:
            self.display_page_controls = True
        return self.page

    def get_next_link(self):
        if not self.has_next:
            return None
        if not self.page:
            # Nothing before the position (papers removed since): the list starts there.
            return remove_query_param(self.base_url, self.cursor_query_param)
        return self._link(reverse=False, position=self._position(self.page[-1]))

    def get_previous_link(self):
        if not self.has_previous:
            return None
        # Nothing after the position (papers removed since): the last page comes before it.
        position = self._position(self.page[0]) if self.page else None
        return self._link(reverse=True, position=position)

    def _position(self, row) -> tuple[str, ...]:
        fields = [field.lstrip("-") for field in self.ordering]
        if isinstance(row, dict):
            return tuple(str(row[field]) for field in fields)
        return tuple(str(getattr(row, field)) for field in fields)

    def _link(self, *, reverse: bool, position: tuple[str, ...] | None) -> str:
        tokens: dict[str, object] = {"r": "1"} if reverse else {}
        if position is not None:
            tokens["p"] = position
        encoded = base64.b64encode(urlencode(tokens, doseq=True).encode("ascii")).decode("ascii")
        return replace_query_param(self.base_url, self.cursor_query_param, encoded)

    def decode_cursor(self, request):
        """The request's cursor as ``Cursor(offset=0, reverse, position)``, ``position`` a
        tuple of strings, one per ordering field (None: the last page, when ``reverse``); None
        without a cursor (an empty one included: the first page). Raises ``ValidationError``
        (a 400 naming ``cursor``) for anything that is not a cursor the API hands out: forged,
        truncated, made for another ordering, or of the old date-and-offset kind."""
        encoded = request.query_params.get(self.cursor_query_param)
        if not encoded:
            return None
        fields = [field.lstrip("-") for field in self.ordering]
        try:
            # validate=True: DRF's decoding skips characters outside the alphabet, so "%%%"
            # would read as no cursor, the first page.
            text = base64.b64decode(encoded.encode("ascii"), validate=True).decode("ascii")
            tokens = parse_qs(text, keep_blank_values=True, strict_parsing=True)
        except ValueError:  # binascii.Error and UnicodeError are ValueErrors
            tokens = {}
        reverse = tokens.get("r") == ["1"]
        position = tokens.get("p")
        well_formed = set(tokens) <= {"r", "p"} and (reverse or "r" not in tokens)
        if position is None:
            # Only the last page is a cursor without a position; the first page has none.
            if well_formed and reverse:
                return pagination.Cursor(offset=0, reverse=True, position=None)
        elif (
            well_formed
            and len(position) == len(fields)
            and all(map(_valid_position, fields, position))
        ):
            return pagination.Cursor(offset=0, reverse=reverse, position=tuple(position))
        raise ValidationError({"cursor": [INVALID_CURSOR]})

    def newest_before(self, request) -> tuple[dt.date, int] | None:
        """For the newest-first order (``-submitted``, ``-id``): the ``(submitted, paper
        pk)`` the request's cursor stands at, the page being the papers after it; None on the
        first page. Raises ``ValidationError`` as :meth:`decode_cursor` does."""
        cursor = self.decode_cursor(request)
        if cursor is None or cursor.position is None:
            return None
        submitted, paper_id = cursor.position
        # parse_date, as the cursor's check (_valid_position) read it: it also takes 2024-1-1.
        return parse_date(submitted), int(paper_id)

    def newest_after(self, request) -> Q:
        """For the newest-first order: the condition of the papers after the request's cursor
        position (``Q()`` on the first page). Raises ``ValidationError`` as
        :meth:`decode_cursor` does."""
        cursor = self.decode_cursor(request)
        if cursor is None or cursor.position is None:
            return Q()
        return _after(("-submitted", "-id"), cursor.position)

    def get_schema_operation_parameters(self, view):
        return _page_size_parameter(
            super().get_schema_operation_parameters(view), self.page_size, self.max_page_size
        )


def _reversed(ordering: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(field[1:] if field.startswith("-") else f"-{field}" for field in ordering)


def _after(ordering: tuple[str, ...], position: tuple[str, ...]) -> Q:
    """Rows strictly after ``position`` in ``ordering`` (the fields all one way, as
    ``PaperOrderingFilter`` gives them): ``(submitted, id) < (d, i)`` for ``-submitted, -id``,
    written as ``submitted <= d AND (submitted < d OR id < i)`` so the first field bounds an
    index scan on any database."""
    first = ordering[0]
    beyond = "lt" if first.startswith("-") else "gt"
    condition = Q()
    ties = Q()
    for field, value in zip(ordering, position, strict=True):
        name = field.lstrip("-")
        condition |= ties & Q(**{f"{name}__{beyond}": value})
        ties &= Q(**{name: value})
    if len(ordering) == 1:
        return condition
    return Q(**{f"{first.lstrip('-')}__{beyond}e": position[0]}) & condition


def _valid_position(field: str, value: str) -> bool:
    """Whether ``value`` (from a cursor) can be compared with the ordering ``field``."""
    if field == "id":
        return value.isascii() and value.isdigit() and int(value) < 2**63
    if field in ("submitted", "updated", "last_updated"):
        try:
            return parse_date(value) is not None
        except ValueError:  # well formed but not a date (2024-02-30)
            return False
    return "\x00" not in value


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
