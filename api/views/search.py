"""``search/``: papers ranked for a query by words and by meaning (hybrid search)."""

from __future__ import annotations

from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import generics

from papers.models import Paper
from topics.search import DEFAULT_MODE, SEARCH_WINDOW, SEMANTIC_WINDOW, papers_search

from ..facets import (
    GROUP_BY_PARAM,
    GROUP_BY_SCHEMA,
    checked_group_by,
    group_counts,
)
from ..filters import SearchFilter
from ..pagination import PageNumberPagination
from ..selectors import papers_in_order, rows_last_modified
from ..serializers.search import SearchResultSerializer
from .base import FIELDS_PARAMETER, ReadView
from .papers import GROUP_BY_PARAMETER


class SearchPagination(PageNumberPagination):
    """Page numbers with ``count``, plus ``meta``: how the results were ranked
    (``mode``, ``requested_mode``, ``fallback``; see ``topics.search.SearchResults``) and the
    count as paper lists give it (``count``, ``count_exact``), and ``group_by``: the facet of
    the ranked papers asked for, or null."""

    meta: dict | None = None
    group_by: list[dict] | None = None

    def get_paginated_response(self, data):
        response = super().get_paginated_response(data)
        response.data["meta"] = self.meta
        response.data["group_by"] = self.group_by
        return response

    def get_paginated_response_schema(self, schema):
        schema = super().get_paginated_response_schema(schema)
        schema["properties"]["meta"] = {
            "type": "object",
            "required": ["count", "count_exact", "mode", "requested_mode", "fallback"],
            "properties": {
                "count": {
                    "type": "integer",
                    "description": "Papers in the ranking (as `count`; at most "
                    f"{SEARCH_WINDOW:,}), the figure paper lists give in meta.count.",
                },
                "count_exact": {
                    "type": "boolean",
                    "description": "Always true here: the ranking is counted, not estimated.",
                },
                "mode": {
                    "type": "string",
                    "enum": ["hybrid", "keyword", "semantic"],
                    "description": "The ranking that ran.",
                },
                "requested_mode": {
                    "type": "string",
                    "enum": ["hybrid", "keyword", "semantic"],
                    "description": "The mode asked for.",
                },
                "fallback": {
                    "type": "string",
                    "nullable": True,
                    "description": "Why mode differs from requested_mode (the embedding "
                    "model or the paper vectors are missing); null when it does not.",
                },
            },
        }
        schema["properties"]["group_by"] = GROUP_BY_SCHEMA
        schema["required"] = [*schema.get("required", []), "meta", "group_by"]
        return schema


@extend_schema_view(
    get=extend_schema(
        summary="Search by words and meaning",
        description="Papers ranked for q, with the filters of /papers/ (topic with its "
        "descendants, category, dates...). `mode` (default hybrid):\n\n"
        "- `keyword`: PostgreSQL full text over title and abstract (English stemming; q in "
        'the query language of saved searches: words, "a phrase", prefix*, AND, OR, NOT or '
        "-word, parentheses; on the embedded SQLite default every term as a substring, "
        "unranked). Of "
        f"the matching papers the {SEARCH_WINDOW:,} newest submitted are ranked by relevance "
        "(a word in the title weighs more than one in the abstract), best first, then newest; "
        "`rank` is PostgreSQL's ts_rank.\n"
        "- `semantic`: the papers nearest in meaning to q (sentence embeddings of title and "
        f"abstract), the {SEMANTIC_WINDOW} nearest that pass the filters, withdrawn and "
        "deleted papers left out; `rank` is the cosine similarity.\n"
        "- `hybrid`: both rankings fused by reciprocal rank fusion; `rank` is the fused "
        "score. A paper need not contain q's words to be found.\n\n"
        "When the embedding model or the paper vectors are missing, hybrid and semantic "
        "answer with the keyword ranking and `meta.mode` says `keyword` (`meta.fallback` "
        "why). `count` is the number of ranked papers (at most "
        f"{SEARCH_WINDOW:,}), not of all matches. A q of only stopwords finds nothing. "
        "Page-number pagination. To list every keyword match, newest first, use /papers/?q=. "
        "`group_by` counts the ranked papers (all pages) by one key, as on /papers/.",
        parameters=[FIELDS_PARAMETER, GROUP_BY_PARAMETER],
    )
)
class SearchView(ReadView, generics.ListAPIView):
    serializer_class = SearchResultSerializer
    filter_backends = [DjangoFilterBackend]
    filterset_class = SearchFilter
    pagination_class = SearchPagination
    extra_query_params = (GROUP_BY_PARAM,)

    def get_queryset(self):
        return Paper.objects.all()

    def list(self, request, *args, **kwargs):
        # The filter backend validates q, mode and the filters and applies the filters; the
        # ranking matches and ranks q among them, giving (id, score) pairs, paginated as a
        # list (its count costs no query); then one page of papers is loaded with everything
        # the serializer shows.
        group_by = checked_group_by(request)
        filtered = self.filter_queryset(self.get_queryset())
        results = papers_search(
            q=request.query_params["q"],
            queryset=filtered,
            mode=request.query_params.get("mode") or DEFAULT_MODE,
        )
        page = papers_in_order(self.paginate_queryset(results.ranked))
        self.last_modified = rows_last_modified(page)
        self.paginator.meta = {
            "count": len(results.ranked),
            "count_exact": True,
            "mode": results.mode,
            "requested_mode": results.requested_mode,
            "fallback": results.fallback,
        }
        if group_by is not None:
            ranked = Paper.objects.filter(id__in=[paper_id for paper_id, _ in results.ranked])
            self.paginator.group_by = group_counts(ranked, group_by)
        return self.get_paginated_response(self.get_serializer(page, many=True).data)
