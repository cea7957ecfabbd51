"""A queryset's SQL compiled once per database and run again with other values.

Building a queryset and compiling it costs a few hundred µs of Python a query (at 1M papers,
an author's API page spent more of its time there than in PostgreSQL). A read that runs on
many requests, always of the same shape with other values, can be compiled once:
:class:`CompiledQuery` builds the queryset with *marker* values (an int or a date no caller
passes), compiles it, and keeps the SQL with the positions of the markers among its
parameters; each run puts the values in those positions. The queryset stays the one
definition of the read (its conditions come from the models' own, such as
``papers.querysets.LIVE``), and the SQL is what Django would run.

Only for values Django passes to the database as they are: ints and dates, on PostgreSQL
(its backend adapts neither), and lists of ids given to the ``__any`` lookup as
:class:`~topicsite.lookups.Ids` (one array parameter whatever their number, so the SQL keeps
its shape). An int marker is a negative number within PostgreSQL's
``integer``: it suits ``integer`` and ``bigint`` columns (keys, counts), not a small-integer
or positive-only field, whose lookups Django folds at compile time for a value outside their
range (dropping the condition, or raising ``EmptyResultSet``): the first run then fails
loudly (``ValueError`` below, or Django's error), never silently. A value that changes the
SQL's shape (a slice's ``LIMIT``, a list of any length) cannot be a marker: append such
clauses to :meth:`CompiledQuery.sql` yourself, as parameters.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable

from django.db import connections
from django.db.models import QuerySet

from topicsite.lookups import Ids, ids_array

__all__ = ["CompiledQuery"]

# Markers: ints and dates no caller passes (PostgreSQL integer's most negative values, far
# below any key; the first days of year 1).
_INT_MARKER_BASE = -(2**31)
_DATE_MARKER_BASE = dt.date(1, 1, 1)


class CompiledQuery:
    """``build(**markers) -> QuerySet`` compiled once per database alias.

    ``kinds`` names each value and its kind: ``{"author": int, "day": dt.date, "papers":
    Ids}``. ``build`` is called with a marker for each (a distinct int or date, or an
    :class:`~topicsite.lookups.Ids` of one such int for ``field__any=``), and must use every
    marker as a query parameter (a filter value), each at least once. An ``Ids`` value is
    given to :meth:`sql` as any iterable of ints, checked as ``Ids`` checks them
    (``TypeError``, ``ValueError``). Raises ``ValueError`` when a marker does not appear
    among the compiled parameters (it was folded into the SQL text, or not used)."""

    def __init__(self, build: Callable[..., QuerySet], **kinds: type) -> None:
        self._build = build
        self._markers: dict[str, object] = {}
        for index, (name, kind) in enumerate(kinds.items()):
            if kind is int:
                self._markers[name] = _INT_MARKER_BASE + index
            elif kind is dt.date:
                self._markers[name] = _DATE_MARKER_BASE + dt.timedelta(days=index)
            elif kind is Ids:
                self._markers[name] = Ids([_INT_MARKER_BASE + index])
            else:
                raise TypeError(f"{name}: markers are int, datetime.date or Ids, not {kind!r}")
        self._compiled: dict[str, tuple[str, tuple, dict[int, str]]] = {}
        self._lock = threading.Lock()

    def sql(self, using: str, **values) -> tuple[str, list]:
        """``(sql, params)`` of the read with ``values`` (one per name given to the
        constructor), for database ``using``: the SQL compiled on the first call for that
        database, the markers' positions filled. ``KeyError`` for a value not given."""
        compiled = self._compiled.get(using)
        if compiled is None:
            compiled = self._compile(using)
        sql, params, positions = compiled
        filled = list(params)
        for position, name in positions.items():
            value = values[name]
            if isinstance(self._markers[name], Ids):
                value = ids_array(value.ids if isinstance(value, Ids) else Ids(value).ids)
            filled[position] = value
        return sql, filled

    def _compile(self, using: str) -> tuple[str, tuple, dict[int, str]]:
        queryset = self._build(**self._markers).using(using)
        sql, params = queryset.query.get_compiler(connection=connections[using]).as_sql()
        positions: dict[int, str] = {}
        for position, value in enumerate(params):
            for name, marker in self._markers.items():
                if isinstance(marker, Ids):
                    marker = ids_array(marker.ids)
                if type(value) is type(marker) and value == marker:
                    positions[position] = name
        missing = set(self._markers) - set(positions.values())
        if missing:
            raise ValueError(f"markers not among the query's parameters: {sorted(missing)}")
        compiled = (sql, tuple(params), positions)
        with self._lock:
            self._compiled[using] = compiled
        return compiled
