"""Paginators shared by every app's admin: list pages over tables of millions of rows."""

from django.core.paginator import Paginator
from django.db import connections
from django.db.models import QuerySet
from django.utils.functional import cached_property


class EstimatedCountPaginator(Paginator):
    """A paginator that does not count every row of a big table.

    For an unfiltered queryset on PostgreSQL, ``count`` is the planner's row estimate
    (``pg_class.reltuples``, kept by autovacuum) when that is at least ``estimate_from``;
    otherwise (a filter or search applied, a small table, another database) it is the exact
    ``COUNT(*)``. The last page of an estimate may be short or empty.
    """

    estimate_from = 100_000

    @cached_property
    def count(self) -> int:
        queryset = self.object_list
        if isinstance(queryset, QuerySet) and not queryset.query.where:
            connection = connections[queryset.db]
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute(
                        "SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass",
                        [connection.ops.quote_name(queryset.model._meta.db_table)],
                    )
                    row = cursor.fetchone()
                if row is not None and row[0] >= self.estimate_from:
                    return int(row[0])
        return super().count
