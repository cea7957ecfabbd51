"""``field__any=[...]``: membership in a list of integers sent as one array parameter.

Django's ``__in`` writes one placeholder per value, which psycopg's client-side binding then
parses and quotes one by one: for the hundreds to thousands of candidate ids a vector search
or a fusion hands over, that costs more than the query (1,000 ids: 35 ms against 7.5 ms for
``= ANY(%s)`` on the 1M-paper corpus, bench/README.md). On PostgreSQL this lookup is
``column = ANY(%s)`` with the list as one ``bigint[]``; elsewhere (the SQLite demo) it is the
usual ``IN (...)``. Registered on ``IntegerField`` (so on every integer and auto primary key)
and on ``ForeignKey`` (``paper_id__any=``, with ids, not instances) by ``topicsite.apps``.

Give a long list as :class:`Ids` (``paper_id__any=Ids(ids)``): Django resolves a list or
tuple lookup value item by item, and checks each item of a foreign key's against its model
(9,000 calls a request for the 3,000 candidates of "for you"), where it passes one ``Ids``
as it is. The array goes to PostgreSQL as one text literal (``'{1,2,3}'::bigint[]``), built
in one ``join``, not adapted element by element.
"""

import numbers
from collections.abc import Iterable

from django.db.models import ForeignKey, IntegerField, Lookup

__all__ = ["AnyOf", "Ids", "ids_array", "register"]

# PostgreSQL's bigint, the array's element type.
BIGINT_MIN, BIGINT_MAX = -(2**63), 2**63 - 1


def _id(value) -> int:
    """One id as an int: ``TypeError`` for a bool or a number with a fraction's type (a
    float, a Decimal: ``int()`` would cut 1.9 to 1) or a value ``int()`` refuses."""
    if type(value) is int:  # nearly every id: no check to make (a bool's type is bool)
        return value
    if isinstance(value, bool) or (
        isinstance(value, numbers.Number) and not isinstance(value, numbers.Integral)
    ):
        raise TypeError(f"ids are integers, not {type(value).__name__}: {value!r}")
    return int(value)


def _checked(values) -> list[int]:
    """``values`` as ints that fit a bigint: ``TypeError`` for a string (which would be read
    digit by digit), a bool, a float or Decimal or a value ``int()`` refuses, ``ValueError``
    for text that is no integer or an integer out of range, before any SQL is sent."""
    if isinstance(values, str | bytes):
        raise TypeError(f"ids are integers, not a string: {values[:40]!r}")
    ids = [_id(value) for value in values]
    for value in ids:
        if not BIGINT_MIN <= value <= BIGINT_MAX:
            raise ValueError(f"id {value} is out of range for a 64-bit integer")
    return ids


class Ids:
    """Integer ids as one lookup value for ``__any`` (see the module docstring): ``ids`` a
    list of ints, each checked with ``int()`` and against PostgreSQL's bigint range
    (``ValueError`` or ``TypeError`` for another value or a string). Not iterable on
    purpose: Django would walk it item by item."""

    __slots__ = ("ids",)

    def __init__(self, ids: Iterable[int]):
        self.ids = _checked(ids)


def ids_array(ids: list[int]) -> str:
    """Checked ints (as :class:`Ids` holds them) as the text of a PostgreSQL array literal,
    ``'{1,2,3}'``: the parameter ``AnyOf`` sends on PostgreSQL."""
    return "{" + ",".join(map(str, ids)) + "}"


class AnyOf(Lookup):
    """``lhs = ANY(rhs)``; ``rhs`` an iterable of ints or :class:`Ids` (each checked with
    ``int()`` and against the bigint range, so a string, a non-integer value or one out of
    range raises ``TypeError`` or ``ValueError`` before any SQL is sent). An empty list
    matches nothing."""

    lookup_name = "any"
    prepare_rhs = False

    def get_prep_lookup(self):
        if isinstance(self.rhs, Ids):
            return self.rhs.ids
        return _checked(self.rhs)

    def as_sql(self, compiler, connection):
        lhs, lhs_params = self.process_lhs(compiler, connection)
        values = self.rhs
        if connection.vendor == "postgresql":
            return f"{lhs} = ANY(%s::bigint[])", [*lhs_params, ids_array(values)]
        if not values:
            return "1 = 0", list(lhs_params)
        return f"{lhs} IN ({', '.join(['%s'] * len(values))})", [*lhs_params, *values]


def register() -> None:
    IntegerField.register_lookup(AnyOf)
    ForeignKey.register_lookup(AnyOf)
