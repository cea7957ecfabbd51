"""Counts and facets of paper lists: ``meta.count`` and ``group_by``, as OpenAlex gives them.

- :func:`list_count`: ``{"count": n, "count_exact": bool}`` for a filtered paper queryset.
  Exact up to :data:`EXACT_COUNT_LIMIT` papers, by counting a subquery cut at one more than
  the limit (so no ``COUNT`` ever reads more than that many rows); above it, on PostgreSQL,
  the planner's row estimate for the whole filtered query (``EXPLAIN``, no rows read) and
  ``count_exact`` false. Elsewhere (the embedded SQLite demo) always exact.
  :func:`linked_count`: the same for papers filtered by an author's or affiliation's name,
  counted from the authorships or paper affiliations alone.
- :func:`group_counts`: the top :data:`GROUP_LIMIT` groups of the filtered papers by one of
  :data:`GROUP_BY_KEYS`, ``[{"key", "key_display_name", "count"}, ...]``, count descending
  then key. Over every paper (no filter) on PostgreSQL, from the stored counts of
  :mod:`api.facet_counts` (two to five queries, exact, whatever the number of papers). Over filtered
  papers, one ``GROUP BY`` of the matches, cached for :data:`FACET_CACHE_SECONDS` under its
  SQL and a fingerprint of the newest paper, authorship and assignment ids (one index-backed
  query): a new paper or tag makes a new key at once; an edit of an existing one (a
  withdrawal, a merged author) shows within the period.
"""

from __future__ import annotations

import hashlib

from django.core.cache import cache
from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import Count, F, QuerySet
from django.db.models.functions import TruncMonth, TruncWeek, TruncYear
from rest_framework.exceptions import ValidationError

from papers.models import Authorship, Paper
from topics.models import Assignment
from topicsite.planner import planner_rows

from .facet_counts import STORED_FACETS, stored_group_counts
from .pagination import PaperCursorPagination

# Counts are exact up to this many papers (Elasticsearch's default is 10,000; counting up to
# it cost a mid-sized category or a common word 20-55 ms at 1M papers, up to 1,000 2-17 ms).
EXACT_COUNT_LIMIT = 1_000
# The link rows (authorships, paper affiliations) linked_count reads at most.
LINKED_COUNT_ROWS = 4 * EXACT_COUNT_LIMIT
FACET_CACHE_SECONDS = 300
GROUP_LIMIT = 50
GROUP_BY_PARAM = "group_by"
GROUP_BY_KEYS = {
    "primary_category": "the paper's primary arXiv category (key: its code, e.g. cs.CL)",
    "topic": "topics with an accepted assignment of the paper, the topic itself not its "
    "ancestors (key: the topic's slug)",
    "submitted_year": "year of submission of v1 (key: 2024)",
    "submitted_month": "month of submission of v1 (key: 2024-03)",
    "submitted_week": "week of submission of v1, weeks starting Monday (key: the Monday, "
    "2024-03-04)",
    "author": "each author of the paper (key: the author's id)",
    "withdrawn": "whether the paper is withdrawn (key: true or false)",
}


def list_count(queryset: QuerySet, estimate=None) -> dict:
    """``{"count": int, "count_exact": bool}`` for ``queryset`` (papers or paper rows, filtered):
    exact when at most :data:`EXACT_COUNT_LIMIT`, else the PostgreSQL planner's estimate (at
    least the limit + 1, so an estimate never reads below what was counted). Two queries at
    most (the capped count, then ``EXPLAIN``). ``estimate``: a callable giving the estimate
    (a number of papers; ``api.views.papers.PaperListBase.list_meta`` asks the planner about
    the same papers in the form it estimates best), called only above the limit; the
    planner's estimate of ``queryset`` itself without one.

    The rows are counted before the planner is asked: its estimate takes conditions as
    independent, so a word and its negation, or a word and a category that never meet, can
    be estimated at a quarter of all papers while none match. Trusting a large estimate
    first saved 62 ms on a 1M-paper list and reported 250,000 for an empty one
    (with a 1M-paper table's statistics, ``api/tests/test_list_count_not_an_estimate.py``)."""
    ids = queryset.order_by().values("id")
    if connection.vendor != "postgresql":
        return {"count": ids.count(), "count_exact": True}
    return capped_count(
        lambda cap: ids[:cap].count(),
        (lambda: planner_rows(ids)) if estimate is None else estimate,
    )


def capped_count(count_capped, estimate) -> dict:
    """``{"count": int, "count_exact": bool}`` from ``count_capped(cap)`` (the papers counted
    no further than ``cap``, :data:`EXACT_COUNT_LIMIT` + 1 here): exact when at most the
    limit; else ``estimate()`` (a number of papers, called only then), at least the limit +
    1, so an estimate never reads below what was counted."""
    capped = count_capped(EXACT_COUNT_LIMIT + 1)
    if capped <= EXACT_COUNT_LIMIT:
        return {"count": capped, "count_exact": True}
    return {"count": max(round(estimate()), EXACT_COUNT_LIMIT + 1), "count_exact": False}


def linked_count(papers: QuerySet, links: QuerySet) -> dict:
    """:func:`list_count` of ``papers`` when they are the distinct ``paper_id`` of ``links``
    (link rows: authorships, paper affiliations; ``papers`` may be filtered by nothing else).
    On PostgreSQL counted from the links alone while they are at most
    :data:`LINKED_COUNT_ROWS` rows (one query, no paper row read: a common name's thousands
    of papers were each fetched to be counted, and a dense name's count joined every paper);
    above the limit the planner's estimate of ``papers``, at least the distinct papers seen
    (two queries). When the rows run past :data:`LINKED_COUNT_ROWS` without
    :data:`EXACT_COUNT_LIMIT` distinct papers (a paper named by many matching links),
    :func:`list_count` of ``papers`` (two to three queries)."""
    if connection.vendor != "postgresql":
        return list_count(papers)
    rows = links.order_by().values("paper_id")[: LINKED_COUNT_ROWS + 1]
    try:
        sql, params = rows.query.sql_with_params()
    except EmptyResultSet:
        return {"count": 0, "count_exact": True}
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(DISTINCT paper_id), count(*) FROM ({sql}) links", params)
        distinct, read = cursor.fetchone()
    if distinct > EXACT_COUNT_LIMIT:
        estimate = planner_rows(papers.order_by().values("id"))
        return {"count": max(estimate, distinct), "count_exact": False}
    if read <= LINKED_COUNT_ROWS:
        return {"count": distinct, "count_exact": True}
    return list_count(papers)


def checked_group_by(request) -> str | None:
    """The request's ``group_by`` (None without one). Raises ``ValidationError`` (a 400 naming
    ``group_by`` and the allowed values) for any other value."""
    value = request.query_params.get(GROUP_BY_PARAM)
    if not value:
        return None
    if value not in GROUP_BY_KEYS:
        allowed = ", ".join(GROUP_BY_KEYS)
        raise ValidationError({GROUP_BY_PARAM: [f"Unknown {value!r}; one of: {allowed}."]})
    return value


def group_counts(queryset: QuerySet, key: str) -> list[dict]:
    """The top :data:`GROUP_LIMIT` groups by ``key`` (one of :data:`GROUP_BY_KEYS`) of the
    papers in ``queryset``, as ``[{"key": str, "key_display_name": str, "count": int}, ...]``,
    count descending then key ascending. ``count`` is a number of distinct papers. For every
    paper on PostgreSQL, from the stored counts: two queries while nothing changed (is a
    change pending, the read), four after a change (its fold under a lock), five when a group
    emptied; else two (the fingerprint, then the ``GROUP BY`` unless cached; see the module
    docstring)."""
    if _whole_corpus(queryset) and key in STORED_FACETS:
        return [
            _group(key, {"k": value, "name": name, "count": count})
            for value, name, count in stored_group_counts(key, limit=GROUP_LIMIT)
        ]
    ids = queryset.order_by().values("id")
    papers = Paper.objects.filter(id__in=ids).order_by()
    if key == "primary_category":
        rows = papers.values(k=F("primary_category__code"), name=F("primary_category__name"))
    elif key == "topic":
        rows = (
            Assignment.objects.accepted()
            .filter(paper_id__in=ids)
            .values(k=F("topic__slug"), name=F("topic__name"))
        )
    elif key == "author":
        rows = Authorship.objects.filter(paper_id__in=ids).values(
            k=F("author_id"), name=F("author__name")
        )
    elif key == "withdrawn":
        rows = papers.values(k=F("withdrawn"))
    else:
        trunc = {
            "submitted_year": TruncYear,
            "submitted_month": TruncMonth,
            "submitted_week": TruncWeek,
        }[key]
        rows = papers.annotate(k=trunc("submitted")).values("k")
    paper = "id" if rows.model is Paper else "paper_id"
    rows = rows.order_by().annotate(count=Count(paper, distinct=rows.model is not Paper))
    rows = rows.order_by("-count", "k")[:GROUP_LIMIT]
    try:
        sql, params = rows.query.sql_with_params()
    except EmptyResultSet:  # filtered to nothing before any query (id__in=[])
        return []
    digest = hashlib.sha256(repr((sql, params, _data_fingerprint())).encode()).hexdigest()
    cache_key = f"api:facet:{digest}"
    groups = cache.get(cache_key)
    if groups is None:
        groups = [_group(key, row) for row in rows]
        cache.set(cache_key, groups, timeout=FACET_CACHE_SECONDS)
    return groups


def _whole_corpus(queryset: QuerySet) -> bool:
    """Whether ``queryset`` is every paper (no condition, no slice) on PostgreSQL, where the
    stored counts are kept."""
    query = queryset.query
    return (
        connection.vendor == "postgresql"
        and queryset.model is Paper
        and not query.where
        and not query.is_sliced
        and not query.combinator
    )


def _data_fingerprint() -> tuple:
    """The newest paper, authorship and assignment ids: index-backed maxima, one query."""
    tables = [
        connection.ops.quote_name(model._meta.db_table) for model in (Paper, Authorship, Assignment)
    ]
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(f"(SELECT MAX(id) FROM {t})" for t in tables))
        return tuple(cursor.fetchone())


def _group(key: str, row: dict) -> dict:
    value = row["k"]
    if key == "withdrawn":
        text = "true" if value else "false"
    elif key == "submitted_year":
        text = f"{value:%Y}"
    elif key == "submitted_month":
        text = f"{value:%Y-%m}"
    elif key == "submitted_week":
        text = f"{value:%Y-%m-%d}"
    else:
        text = str(value)
    return {"key": text, "key_display_name": row.get("name") or text, "count": row["count"]}


GROUP_BY_DESCRIPTION = (
    "Facet: count the filtered papers (every filter and q applied) by one key and answer the "
    f"top {GROUP_LIMIT} groups, count descending, in `group_by` as "
    "`[{key, key_display_name, count}]`. One of: "
    + "; ".join(f"`{name}`: {text}" for name, text in GROUP_BY_KEYS.items())
    + ". Any other value is a 400."
)

META_SCHEMA = {
    "type": "object",
    "required": ["count", "count_exact"],
    "properties": {
        "count": {
            "type": "integer",
            "description": f"Papers matching the filters: exact up to {EXACT_COUNT_LIMIT:,}, "
            "above that the database planner's estimate (never below "
            f"{EXACT_COUNT_LIMIT + 1:,}, since that many were counted).",
        },
        "count_exact": {
            "type": "boolean",
            "description": "Whether count is exact (false: an estimate).",
        },
    },
}

GROUP_BY_SCHEMA = {
    "type": "array",
    "nullable": True,
    "description": "The groups asked for with the group_by parameter; null without it.",
    "items": {
        "type": "object",
        "required": ["key", "key_display_name", "count"],
        "properties": {
            "key": {"type": "string"},
            "key_display_name": {"type": "string"},
            "count": {"type": "integer", "minimum": 0},
        },
    },
}


class FacetedCursorPagination(PaperCursorPagination):
    """Paper lists' cursor pagination whose answer also carries ``meta`` (the count of the
    filtered papers) and ``group_by`` (the facet asked for, or null), both set by the view
    before :meth:`get_paginated_response`."""

    meta: dict | None = None
    group_by: list[dict] | None = None

    def get_paginated_response(self, data):
        response = super().get_paginated_response(data)
        response.data["meta"] = self.meta
        response.data["group_by"] = self.group_by
        return response

    def get_paginated_response_schema(self, schema):
        schema = super().get_paginated_response_schema(schema)
        schema["properties"]["meta"] = META_SCHEMA
        schema["properties"]["group_by"] = GROUP_BY_SCHEMA
        schema.setdefault("required", [])
        schema["required"] = [*schema["required"], "meta", "group_by"]
        return schema
