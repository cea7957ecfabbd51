"""The read resources of ``/api/v1/``: papers, topics (detail with momentum, papers, trend,
exports), categories and full-text search. Thin views over ``api.selectors``,
``topics.selectors`` and ``topics.momentum``; authentication, permissions and throttles come
from the ``REST_FRAMEWORK`` defaults (see ``api.authentication`` / ``api.throttling``).
"""

from __future__ import annotations

import django_filters
from django.db.models.functions import Lower
from django.http import HttpResponsePermanentRedirect, StreamingHttpResponse
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import generics
from rest_framework.exceptions import NotFound
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.response import Response

from papers.models import Category, Paper
from topics import selectors as topic_selectors
from topics.lookups import active_topic_or_redirect
from topics.models import Topic
from topics.momentum import topic_momentum

from . import exports
from .conditional import ConditionalGetMixin
from .filters import (
    FULL_TEXT_HELP,
    SEARCH_WINDOW,
    PaperFilter,
    PaperOrderingFilter,
    full_text_ranked,
    full_text_syntax_validate,
)
from .pagination import CategoryPagination, PageNumberPagination, PaperCursorPagination
from .selectors import (
    PaperNotFound,
    paper_by_api_id,
    paper_row,
    paper_rows,
    papers_for_api,
    papers_in_order,
    rows_last_modified,
    rows_of,
    topic_trend,
)
from .serializers import (
    FIELDS_PARAM,
    CategorySerializer,
    PaperSerializer,
    SearchResultSerializer,
    TopicDetailSerializer,
    TopicRefSerializer,
    TopicSerializer,
    TrendQuerySerializer,
    TrendSerializer,
)

FIELDS_PARAMETER = OpenApiParameter(
    FIELDS_PARAM,
    OpenApiTypes.STR,
    description="Comma-separated top-level fields to return (e.g. id,title,submitted); "
    "an unknown name is a 400.",
)
PAPER_ID_PARAMETER = OpenApiParameter(
    "paper_id",
    OpenApiTypes.STR,
    OpenApiParameter.PATH,
    description="arXiv identifier, with or without version (2401.01234, 2401.01234v2, "
    "hep-th/9901001v1), or local:<n> for a paper not on arXiv.",
)
SLUG_PARAMETER = OpenApiParameter(
    "slug",
    OpenApiTypes.STR,
    OpenApiParameter.PATH,
    description="Topic slug. An old slug of a renamed topic answers 301 to the new address.",
)
MOVED = OpenApiResponse(description="Old slug of a renamed topic: Location has the new URL.")


class ReadView(ConditionalGetMixin, generics.GenericAPIView):
    # Shared base of the read resources: ETag/Last-Modified and 304s (api.conditional). A
    # comment, not a docstring: drf-spectacular would publish it as every subclass's text.

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "select_fields": True}


class PaperListBase(ReadView, generics.ListAPIView):
    serializer_class = PaperSerializer
    filter_backends = [DjangoFilterBackend, PaperOrderingFilter]
    filterset_class = PaperFilter
    pagination_class = PaperCursorPagination

    def list(self, request, *args, **kwargs):
        # get_queryset gives paper rows (api.selectors.paper_rows): one query for the page on
        # PostgreSQL.
        page = rows_of(self.paginate_queryset(self.filter_queryset(self.get_queryset())))
        self.last_modified = rows_last_modified(page)
        return self.get_paginated_response(self.get_serializer(page, many=True).data)


@extend_schema_view(
    get=extend_schema(
        summary="List papers",
        description="Papers, newest submitted first, filtered and cursor-paginated: follow "
        "`next` until it is null. Stable while new papers arrive.",
        parameters=[FIELDS_PARAMETER],
    )
)
class PaperListView(PaperListBase):
    def get_queryset(self):
        return paper_rows()


@extend_schema(
    summary="A paper",
    parameters=[PAPER_ID_PARAMETER, FIELDS_PARAMETER],
    responses={200: PaperSerializer},
)
class PaperDetailView(ReadView):
    """One paper by its arXiv identifier (any version: 2401.01234v2 resolves to the paper;
    old-style ids like hep-th/9901001 too), or ``local:<n>`` for a paper from outside arXiv.
    Answers 304 to a matching If-None-Match."""

    serializer_class = PaperSerializer

    def get(self, request, paper_id):
        try:
            paper = paper_by_api_id(paper_id)
        except PaperNotFound as error:
            raise NotFound(str(error)) from None
        row = paper_row(paper)
        self.last_modified = row["last_modified"]
        return Response(self.get_serializer(row).data)


class StreamAnyAccept(BaseContentNegotiation):
    """Exports answer with their own content type whatever ``Accept`` says; errors are JSON."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


def _streamed(lines, *, content_type: str, filename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(lines, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _filename(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-." else "_" for c in text)


@extend_schema(
    summary="A paper as BibTeX",
    parameters=[PAPER_ID_PARAMETER],
    responses={(200, "application/x-bibtex"): OpenApiTypes.STR},
)
class PaperBibtexView(generics.GenericAPIView):
    content_negotiation_class = StreamAnyAccept

    def get(self, request, paper_id):
        try:
            paper = paper_by_api_id(paper_id)
        except PaperNotFound as error:
            raise NotFound(str(error)) from None
        return _streamed(
            exports.bibtex_lines([paper]),
            content_type=exports.BIBTEX_CONTENT_TYPE,
            filename=_filename(paper.arxiv_id or f"local-{paper.pk}") + ".bib",
        )


class TopicFilter(django_filters.FilterSet):
    """Topics by ``q`` (part of the name, case-insensitive) and ``parent`` (slug)."""

    q = django_filters.CharFilter(
        field_name="name", lookup_expr="icontains", max_length=200, help_text="Part of the name."
    )
    parent = django_filters.CharFilter(
        field_name="parent__slug", max_length=200, help_text="Slug of the parent topic."
    )

    class Meta:
        model = Topic
        fields: list[str] = []


@extend_schema_view(
    get=extend_schema(
        summary="List topics",
        description="Active topics by name.",
        parameters=[FIELDS_PARAMETER],
    )
)
class TopicListView(ReadView, generics.ListAPIView):
    serializer_class = TopicSerializer
    filter_backends = [DjangoFilterBackend]
    filterset_class = TopicFilter
    pagination_class = PageNumberPagination

    def get_queryset(self):
        # Case-insensitive, whatever the database collation does with case.
        return Topic.objects.active().select_related("parent").order_by(Lower("name"), "id")


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
            "paper_count": topic_selectors.topic_papers(topic=topic).count(),
            "momentum": topic_momentum(topic=topic),
        }
        return Response(TopicDetailSerializer(topic, context=context).data)


@extend_schema_view(
    get=extend_schema(
        summary="A topic's papers",
        description="Papers of the topic and its descendants (accepted assignments), with the "
        "same filters, ordering and cursor pagination as /papers/.",
        parameters=[SLUG_PARAMETER, FIELDS_PARAMETER],
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
        paper_ids = topic_selectors.topic_papers(topic=self.topic).order_by().values("id")
        return paper_rows().filter(id__in=paper_ids)


@extend_schema(
    summary="A topic's weekly trend",
    description="Weekly counts of the topic's papers (descendants included) and their share "
    "of all papers submitted that week, oldest first; weeks start on Monday and the last one "
    "holds as_of.",
    parameters=[SLUG_PARAMETER, TrendQuerySerializer],
    responses={200: TrendSerializer, 301: MOVED},
)
class TopicTrendView(TopicMixin, ReadView):
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
            "weeks": [
                {
                    "week_start": w.week_start.isoformat(),
                    "count": w.count,
                    "total": w.total,
                    "share": w.share,
                }
                for w in weeks
            ],
        }
        return Response(data)


class TopicExportView(TopicMixin, generics.GenericAPIView):
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
        name = _filename(topic.slug)
        if self.export_format == "bibtex":
            return _streamed(
                exports.bibtex_lines(papers),
                content_type=exports.BIBTEX_CONTENT_TYPE,
                filename=f"{name}.bib",
            )
        if self.export_format == "csv":
            return _streamed(
                exports.csv_lines(papers),
                content_type=exports.CSV_CONTENT_TYPE,
                filename=f"{name}.csv",
            )
        context = {**self.get_serializer_context(), "select_fields": False}
        return _streamed(
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


@extend_schema_view(get=extend_schema(summary="List arXiv categories"))
class CategoryListView(ReadView, generics.ListAPIView):
    """arXiv's categories (code, name, archive, group), by code."""

    serializer_class = CategorySerializer
    pagination_class = CategoryPagination
    filter_backends: list = []
    queryset = Category.objects.order_by("code")


@extend_schema_view(
    get=extend_schema(
        summary="An arXiv category",
        parameters=[
            OpenApiParameter(
                "code",
                OpenApiTypes.STR,
                OpenApiParameter.PATH,
                description="Canonical category code (cs.CL, hep-th, math-ph).",
            )
        ],
    )
)
class CategoryDetailView(ReadView, generics.RetrieveAPIView):
    """One arXiv category by its canonical code."""

    serializer_class = CategorySerializer
    filter_backends: list = []
    queryset = Category.objects.all()
    lookup_field = "code"

    def get_object(self):
        # PostgreSQL text cannot hold NUL: no code has one, and asking would be a 500.
        if "\x00" in self.kwargs[self.lookup_field]:
            raise NotFound("No category has this code.")
        return super().get_object()


class SearchFilter(PaperFilter):
    """The paper filters, with ``q`` required."""

    q = django_filters.CharFilter(
        method="filter_q",
        required=True,
        max_length=300,
        validators=[full_text_syntax_validate],
        help_text=FULL_TEXT_HELP,
    )


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
