"""``topics/``: the topic list, a topic (with momentum), its papers, its weekly trend and
its papers exported (BibTeX, CSV, JSON lines). Thin views over ``api.selectors``,
``topics.selectors`` and ``topics.momentum``; an old slug of a renamed topic answers 301."""

from __future__ import annotations

from django.db.models.functions import Lower
from django.http import HttpResponsePermanentRedirect
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import generics
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from papers.models import Paper
from topics import index as topics_index
from topics import selectors as topic_selectors
from topics.lookups import active_topic_or_redirect
from topics.models import Assignment, Topic
from topics.momentum import topic_momentum_stored

from .. import exports
from ..filters import PaperFilter, PaperOrderingFilter, TopicFilter
from ..pagination import PageNumberPagination
from ..selectors import paper_rows, papers_for_api, topic_trend
from ..serializers.base import TopicRefSerializer
from ..serializers.papers import PaperSerializer
from ..serializers.topics import (
    TopicDetailSerializer,
    TopicListItemSerializer,
    TrendQuerySerializer,
    TrendSerializer,
    TrendWeekSerializer,
)
from ..strict import StrictQueryParamsMixin
from .base import (
    FIELDS_PARAMETER,
    ReadView,
    StreamAnyAccept,
    export_filename,
    streamed_response,
)
from .papers import GROUP_BY_PARAMETER, PaperListBase

SLUG_PARAMETER = OpenApiParameter(
    "slug",
    OpenApiTypes.STR,
    OpenApiParameter.PATH,
    description="Topic slug. An old slug of a renamed topic answers 301 to the new address.",
)
MOVED = OpenApiResponse(description="Old slug of a renamed topic: Location has the new URL.")


SORT_PARAMETER = OpenApiParameter(
    "sort",
    OpenApiTypes.STR,
    enum=list(topics_index.INDEX_SORTS),
    description="Order, as the topics index page: `name` (display name, case-insensitive; "
    "the default), `size` (paper count, largest first, then name) or `rising` (largest gain "
    f"of share first, topics with at least {topics_index.RISING_MIN_PAPERS} papers in one of "
    "the two four-week windows before the others; ties by papers in the last four weeks, then "
    "name). Any other value is a 400. Topics take `sort`, not `ordering`.",
)


@extend_schema_view(
    get=extend_schema(
        summary="List topics",
        description="Active topics with their paper count (descendants included), momentum "
        "and `rising` figure: the topics index's figures (DESIGN.md: last four weeks against "
        "the four before), ordered by `sort`. A fixed number of queries whatever the number "
        "of topics.",
        parameters=[SORT_PARAMETER, FIELDS_PARAMETER],
    )
)
class TopicListView(ReadView, generics.ListAPIView):
    serializer_class = TopicListItemSerializer
    filter_backends = [DjangoFilterBackend]
    filterset_class = TopicFilter
    pagination_class = PageNumberPagination
    extra_query_params = ("sort",)

    def get_queryset(self):
        # Case-insensitive, whatever the database collation does with case.
        return Topic.objects.active().select_related("parent").order_by(Lower("name"), "id")

    def list(self, request, *args, **kwargs):
        sort = request.query_params.get("sort", "name")
        if sort not in topics_index.INDEX_SORTS:
            raise ValidationError(
                {"sort": [f"Unknown sort {sort!r}: one of {', '.join(topics_index.INDEX_SORTS)}."]}
            )
        index = topics_index.topic_index()
        self.index_topics = {item.pk: item for item in index.topics}
        topics = {topic.pk: topic for topic in self.filter_queryset(self.get_queryset())}
        ranked = [
            topics.pop(item.pk)
            for item in topics_index.topic_index_ranked(index, sort=sort)
            if item.pk in topics
        ]
        ranked.extend(topics.values())  # not in the index yet: last, by name
        page = self.paginate_queryset(ranked)
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    def get_serializer_context(self):
        return {
            **super().get_serializer_context(),
            "index_topics": getattr(self, "index_topics", {}),
        }


class TopicMixin:
    """Resolves ``slug`` to the active topic, or a 301 for an old slug (``url_name``)."""

    url_name = ""

    def topic_or_redirect(self, request, slug):
        return active_topic_or_redirect(request, slug, self.url_name)


@extend_schema(
    summary="A topic",
    description="The topic with its parent, ancestors, children, paper count (descendants "
    "included) and momentum (DESIGN.md: last four weeks against the four before, 12 weeks).",
    parameters=[SLUG_PARAMETER, FIELDS_PARAMETER],
    responses={200: TopicDetailSerializer, 301: MOVED},
)
class TopicDetailView(TopicMixin, ReadView):
    serializer_class = TopicDetailSerializer
    url_name = "api:topic-detail"

    def get(self, request, slug):
        topic = self.topic_or_redirect(request, slug)
        if isinstance(topic, HttpResponsePermanentRedirect):
            return topic
        context = {
            **self.get_serializer_context(),
            "ancestors": topic_selectors.topic_ancestors(topic=topic),
            "children": list(topic.children.active().order_by("name", "id")),
            # The topic page's stored figures (the same numbers, recounted when stale): the
            # live count and momentum of a big subtree cost 60 ms at 1M papers.
            "paper_count": topic_selectors.topic_paper_count(topic=topic),
            "momentum": topic_momentum_stored(topic=topic),
        }
        return Response(TopicDetailSerializer(topic, context=context).data)


@extend_schema_view(
    get=extend_schema(
        summary="A topic's papers",
        description="Papers of the topic and its descendants (accepted assignments), with the "
        "same filters, ordering and cursor pagination as /papers/.",
        parameters=[SLUG_PARAMETER, FIELDS_PARAMETER, GROUP_BY_PARAMETER],
        responses={200: PaperSerializer(many=True), 301: MOVED},
    )
)
class TopicPapersView(TopicMixin, PaperListBase):
    url_name = "api:topic-papers"

    def get(self, request, slug):
        topic = self.topic_or_redirect(request, slug)
        if isinstance(topic, HttpResponsePermanentRedirect):
            return topic
        self.topic = topic
        return super().get(request)

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation: no topic
            return Paper.objects.none()
        # The subtree's assignments straight (topic_papers' rows, without a second pass
        # over papers to find the same ids).
        paper_ids = (
            Assignment.objects.accepted_live().in_subtree(self.topic).order_by().values("paper_id")
        )
        return paper_rows().filter(id__in=paper_ids)

    def _newest_walk(self) -> bool:
        """Whether this request pages the topic's papers newest first, unfiltered, forwards:
        then the page comes from the topics' newest-first index walks and the count from the
        stored topic count, neither reading every paper of the topic."""
        return self._unfiltered() and self._newest_first_forwards()

    def page_queryset(self, filtered):
        """Newest first, unfiltered, forwards: the page and the paper after it, found by
        ``topics.selectors.topic_newest_paper_ids`` after the cursor's position (one index
        range scan per topic of the subtree, ``page_size + 1`` rows each at most), then read
        by id. Otherwise ``filtered``."""
        if not self._newest_walk():
            return filtered
        before = self.paginator.newest_before(self.request)
        ids = topic_selectors.topic_newest_paper_ids(
            topic_ids=Topic.objects.subtree(self.topic),
            limit=self.paginator.get_page_size(self.request) + 1,
            before=before,
        )
        return paper_rows().filter(id__in=ids)

    def list_meta(self, filtered) -> dict:
        """Unfiltered, in any order or direction: the topic's stored paper count
        (``topics.selectors.topic_stats``, exact, no query while current); else the count of
        ``filtered``. (Counted otherwise, a topic above the exact count got the planner's
        estimate, which takes every topic near the average size.)"""
        if not self._unfiltered():
            return super().list_meta(filtered)
        count = topic_selectors.topic_paper_count(topic=self.topic)
        return {"count": count, "count_exact": True}


@extend_schema(
    summary="A topic's weekly trend",
    description="Weekly counts of the topic's papers (descendants included) and their share "
    "of all papers submitted that week, oldest first; weeks start on Monday and the last one "
    "holds as_of.",
    parameters=[SLUG_PARAMETER, TrendQuerySerializer],
    responses={200: TrendSerializer, 301: MOVED},
)
class TopicTrendView(TopicMixin, ReadView):
    extra_query_params = ("as_of", "weeks")
    url_name = "api:topic-trend"

    def get(self, request, slug):
        topic = self.topic_or_redirect(request, slug)
        if isinstance(topic, HttpResponsePermanentRedirect):
            return topic
        query = TrendQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        as_of, weeks = topic_trend(
            topic=topic,
            weeks=query.validated_data["weeks"],
            as_of=query.validated_data.get("as_of"),
        )
        data = {
            "topic": TopicRefSerializer(topic).data,
            "as_of": as_of.isoformat(),
            "weeks": TrendWeekSerializer(weeks, many=True).data,
        }
        return Response(data)


class TopicExportView(StrictQueryParamsMixin, TopicMixin, generics.GenericAPIView):
    """A topic's papers (descendants included) streamed in one format, filtered like /papers/,
    newest first unless ``ordering`` says otherwise."""

    content_negotiation_class = StreamAnyAccept
    filter_backends = [DjangoFilterBackend, PaperOrderingFilter]
    filterset_class = PaperFilter
    pagination_class = None
    export_format = ""

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation: no topic
            return Paper.objects.none()
        paper_ids = topic_selectors.topic_papers(topic=self.topic).order_by().values("id")
        return papers_for_api().filter(id__in=paper_ids)

    def get(self, request, slug):
        topic = self.topic_or_redirect(request, slug)
        if isinstance(topic, HttpResponsePermanentRedirect):
            return topic
        self.topic = topic
        papers = self.filter_queryset(self.get_queryset()).iterator(chunk_size=exports.EXPORT_CHUNK)
        name = export_filename(topic.slug)
        if self.export_format == "bibtex":
            return streamed_response(
                exports.bibtex_lines(papers),
                content_type=exports.BIBTEX_CONTENT_TYPE,
                filename=f"{name}.bib",
            )
        if self.export_format == "csv":
            return streamed_response(
                exports.csv_lines(papers),
                content_type=exports.CSV_CONTENT_TYPE,
                filename=f"{name}.csv",
            )
        context = {**self.get_serializer_context(), "select_fields": False}
        return streamed_response(
            exports.jsonl_lines(papers, serializer_class=PaperSerializer, context=context),
            content_type=exports.JSONL_CONTENT_TYPE,
            filename=f"{name}.jsonl",
        )


def _export_view(export_format: str, media_type: str, summary: str):
    view = type(
        f"Topic{export_format.title()}ExportView",
        (TopicExportView,),
        {"export_format": export_format, "url_name": f"api:topic-export-{export_format}"},
    )
    return extend_schema_view(
        get=extend_schema(
            summary=summary,
            operation_id=f"topics_export_{export_format}",
            parameters=[SLUG_PARAMETER],
            responses={(200, media_type): OpenApiTypes.STR, 301: MOVED},
        )
    )(view)


TopicBibtexExportView = _export_view(
    "bibtex", "application/x-bibtex", "A topic's papers as BibTeX (streamed)"
)
TopicCsvExportView = _export_view("csv", "text/csv", "A topic's papers as CSV (streamed)")
TopicJsonlExportView = _export_view(
    "jsonl", "application/jsonl", "A topic's papers as JSON lines (streamed)"
)
