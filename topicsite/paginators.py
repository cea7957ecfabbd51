"""Paginators shared by every app's admin: list pages over tables of millions of rows."""

from django.core.paginator import Paginator
from django.db import connections
from django.db.models import QuerySet
from django.utils.functional import cached_property

from .planner import planner_table_rows


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
            if connections[queryset.db].vendor == "postgresql":
                rows = planner_table_rows(queryset.model, using=queryset.db)
                if rows >= self.estimate_from:
                    return rows
        return super().count
