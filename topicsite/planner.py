"""PostgreSQL's row estimates: a queryset's, read from its plan without running it, and a
table's, from the catalogue."""

import json

from django.core.exceptions import EmptyResultSet
from django.db import connections
from django.db.models import QuerySet

__all__ = ["analyze_database", "planner_rows", "planner_table_rows"]


def planner_rows(queryset: QuerySet) -> int:
    """The planner's estimate of the rows ``queryset`` returns (``EXPLAIN (FORMAT JSON)``, one
    query, no row read), asked of the queryset's own database (a read replica for a reader's
    GET, as its rows would be); 0 for a queryset filtered to nothing before any query
    (``none()``, ``id__in=[]``). PostgreSQL only."""
    try:
        sql, params = queryset.query.sql_with_params()
    except EmptyResultSet:
        return 0
    with connections[queryset.db].cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        plan = cursor.fetchone()[0]
    if isinstance(plan, str):
        plan = json.loads(plan)
    return int(plan[0]["Plan"]["Plan Rows"])


def planner_table_rows(model, *, using: str = "default") -> int:
    """The planner's estimate of ``model``'s table size in rows (``pg_class.reltuples``, kept
    by autovacuum and ``ANALYZE``; 0 for a table never analysed), read on database
    ``using``. One query. PostgreSQL only."""
    connection = connections[using]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = %s::regclass",
            [connection.ops.quote_name(model._meta.db_table)],
        )
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def analyze_database(*, using: str = "default") -> bool:
    """``ANALYZE`` every table of database ``using`` on PostgreSQL, so that the planner's row
    estimates (the API's list counts above 1,000 papers, :func:`planner_table_rows`) hold
    the rows just loaded rather than what migrations saw (empty tables) until autovacuum
    comes by, if it runs at all. For a database filled in one go (the demo); seconds on a
    small one. True when it ran, False elsewhere (SQLite plans without statistics)."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return True
