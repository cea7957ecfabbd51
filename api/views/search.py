"""``search/``: full-text search over titles and abstracts, ranked within a window."""

from __future__ import annotations

from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import generics

from papers.models import Paper

from ..filters import SEARCH_WINDOW, SearchFilter, full_text_ranked
from ..pagination import PageNumberPagination
from ..selectors import papers_in_order, rows_last_modified
from ..serializers.search import SearchResultSerializer
from .base import FIELDS_PARAMETER, ReadView


@extend_schema_view(
    get=extend_schema(
        summary="Full-text search",
        description="Papers whose title or abstract match q (PostgreSQL full text, English; "
        "on the embedded SQLite default every word as a substring, unranked; filters as "
        "/papers/). Ranked within a window: of the matching papers, the "
        f"{SEARCH_WINDOW:,} newest submitted are ranked by relevance (a word in the title "
        "weighs more than one in the abstract), best first, then newest; `count` is the "
        f"number of papers in that window (at most {SEARCH_WINDOW:,}), not of all matches. "
        "Page-number pagination. To list every match, newest first, use /papers/?q=.",
        parameters=[FIELDS_PARAMETER],
    )
)
class SearchView(ReadView, generics.ListAPIView):
    serializer_class = SearchResultSerializer
    filter_backends = [DjangoFilterBackend]
    filterset_class = SearchFilter
    pagination_class = PageNumberPagination

    def get_queryset(self):
        return Paper.objects.all()

    def list(self, request, *args, **kwargs):
        # The filter backend validates q and the filters and matches; ranking the window gives
        # (id, rank) pairs, paginated as a list (its count costs no query), then one page of
        # papers is loaded with everything the serializer shows.
        matches = self.filter_queryset(self.get_queryset())
        ranked = full_text_ranked(matches, request.query_params["q"].strip())
        page = papers_in_order(self.paginate_queryset(ranked))
        self.last_modified = rows_last_modified(page)
        return self.get_paginated_response(self.get_serializer(page, many=True).data)
