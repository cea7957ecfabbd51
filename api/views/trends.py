"""``trends/``: the weekly trend of the papers a query and the /papers/ filters select (as a
topic's ``topics/{slug}/trend/``). A thin view over ``api.selectors.papers_trend``."""

from __future__ import annotations

from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.response import Response

from papers.models import Paper

from ..filters import PaperFilter
from ..selectors import papers_trend
from ..serializers.topics import TrendQuerySerializer, TrendWeekSerializer
from .base import ReadView


@extend_schema(
    summary="Weekly trend of a query",
    description="Weekly counts of the papers that q (the query language of /search/ and "
    "saved searches; a malformed q is the same 400) and the other /papers/ filters select, "
    "and their share of all papers submitted that week, oldest first; weeks start on Monday "
    "and the last one holds as_of. Counted in SQL per day, whatever the number of papers.",
    parameters=[TrendQuerySerializer],
    responses={
        200: inline_serializer(
            "QueryTrend",
            fields={
                "as_of": serializers.DateField(),
                "weeks": TrendWeekSerializer(many=True),
            },
        )
    },
)
class TrendsView(ReadView):
    filter_backends = [DjangoFilterBackend]
    # One answer, not a page: no page parameters to accept and ignore.
    pagination_class = None
    filterset_class = PaperFilter
    extra_query_params = ("weeks", "as_of")

    def get_queryset(self):
        return Paper.objects.all()

    def get(self, request):
        query = TrendQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        as_of, weeks = papers_trend(
            papers=self.filter_queryset(self.get_queryset()),
            weeks=query.validated_data["weeks"],
            as_of=query.validated_data.get("as_of"),
        )
        return Response(
            {"as_of": as_of.isoformat(), "weeks": TrendWeekSerializer(weeks, many=True).data}
        )
