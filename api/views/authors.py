"""``authors/?q=`` (authors by name), ``authors/{id}/`` and its ``papers/``, ``coauthors/`` and
``topics/``: from the selectors that back the author page."""

from __future__ import annotations

from django.db import connection
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import generics
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from papers.author_selectors import (
    COUNTED_PAPERS,
    author_affiliations,
    author_coauthors,
    author_credits,
    author_newest_live_paper_ids,
    author_paper_count,
    author_paper_count_capped,
    author_papers,
    authors_matching,
    authors_paper_counts,
)
from papers.models import Author, Paper
from topics.authors import author_topics

from ..facets import capped_count
from ..pagination import PageNumberPagination
from ..selectors import paper_rows
from ..serializers.authors import (
    AuthorDetailSerializer,
    AuthorListItemSerializer,
    AuthorNameCountSerializer,
    AuthorTopicSerializer,
)
from ..serializers.papers import PaperSerializer
from .base import ERROR, FIELDS_PARAMETER, ReadView
from .papers import PaperListBase

SHOWN = 10
LISTED = 100  # co-authors and topics in their own lists
AUTHOR_ID_PARAMETER = OpenApiParameter(
    "id", OpenApiTypes.INT, OpenApiParameter.PATH, description="Author id."
)
NO_AUTHOR = OpenApiResponse(ERROR, description="No author has this id.")


def author_or_404(pk: int) -> Author:
    """The author ``pk``, or the survivor a merged-away name was merged into; NotFound (the
    API's 404) when no author has that id. One query."""
    author = Author.objects.select_related("merged_into").filter(pk=pk).first()
    if author is None:
        raise NotFound("No author has this id.")
    return author.merged_into or author


MIN_QUERY = 2
NAME_QUERY_PARAMETER = OpenApiParameter(
    "q",
    OpenApiTypes.STR,
    required=True,
    description=f"Part of a name, case-insensitive, {MIN_QUERY} to 200 characters.",
)


def name_query(request) -> str:
    """The request's ``q``, stripped: a ValidationError (the API's 400 naming ``q``) when
    missing, shorter than :data:`MIN_QUERY` or longer than 200 characters."""
    q = request.query_params.get("q", "").strip()
    if not MIN_QUERY <= len(q) <= 200:
        raise ValidationError({"q": [f"Give {MIN_QUERY} to 200 characters of a name."]})
    return q


@extend_schema(
    summary="Authors by name",
    description="Authors whose name holds `q` (case-insensitive), names starting with it "
    "first, then by name; a name merged into another author is not listed (its survivor "
    "is). Page-number paging; `paper_count` counts papers neither withdrawn nor deleted.",
    parameters=[NAME_QUERY_PARAMETER],
)
class AuthorListView(ReadView, generics.ListAPIView):
    serializer_class = AuthorListItemSerializer
    filter_backends: list = []
    pagination_class = PageNumberPagination
    extra_query_params = ("q",)

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Author.objects.none()
        return authors_matching(q=name_query(self.request))

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.get_queryset())
        counts = authors_paper_counts(author_ids=[author.pk for author in page])
        rows = [
            {
                "pk": author.pk,
                "name": author.name,
                "paper_count": counts.get(author.pk, 0),
                "html_url": request.build_absolute_uri(author.get_absolute_url()),
            }
            for author in page
        ]
        return self.get_paginated_response(self.get_serializer(rows, many=True).data)


class AuthorDetailView(ReadView):
    """One author by id. A merged-away name's id answers its survivor (``id`` is the
    survivor's), as the author page redirects there. Six queries, whatever the data."""

    serializer_class = AuthorDetailSerializer
    filter_backends: list = []

    @extend_schema(
        summary="An author",
        description="Name, paper count, affiliations, co-authors and topics (each at most "
        f"{SHOWN}, on most papers first, counted on the author's newest {COUNTED_PAPERS} "
        "papers) and the site page's url. The id of a name merged "
        "into another author answers that author (its `id` differs from the one asked).",
        parameters=[
            OpenApiParameter(
                "id", OpenApiTypes.INT, OpenApiParameter.PATH, description="Author id."
            )
        ],
        responses={
            200: AuthorDetailSerializer,
            404: OpenApiResponse(ERROR, description="No author has this id."),
        },
    )
    def get(self, request, id: int):
        author = author_or_404(id)
        data = {
            "id": author.pk,
            "name": author.name,
            "paper_count": author_paper_count(author=author),
            "html_url": request.build_absolute_uri(author.get_absolute_url()),
            "affiliations": author_affiliations(author=author, limit=SHOWN),
            "coauthors": author_coauthors(author=author, limit=SHOWN),
            "topics": author_topics(author=author, limit=SHOWN),
        }
        return Response(AuthorDetailSerializer(data).data)


@extend_schema_view(
    get=extend_schema(
        summary="An author's papers",
        description="The author's papers (neither withdrawn nor deleted), with the same "
        "filters, ordering and cursor pagination as /papers/. A merged-away name's id answers "
        "its survivor's papers.",
        parameters=[AUTHOR_ID_PARAMETER, FIELDS_PARAMETER],
        responses={200: PaperSerializer(many=True), 404: NO_AUTHOR},
    )
)
class AuthorPapersView(PaperListBase):
    """The author's papers. Unfiltered, newest first, forwards (the common case, and every
    page of a plain walk), the page and ``meta.count`` come from the author's authorships
    read newest first (``papers.author_selectors``), stopping after the page or the exact
    count's limit, so that they cost the same for an author of 10 papers or of 10,000; above
    the limit the count is estimated by the author's authorships (withdrawn and deleted
    papers included). Otherwise the papers are filtered as ``/papers/`` filters them."""

    def get(self, request, id: int):
        self.author = author_or_404(id)
        return super().get(request)

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation: no author
            return Paper.objects.none()
        paper_ids = author_papers(author=self.author).order_by().values("id")
        return paper_rows().filter(id__in=paper_ids)

    def page_queryset(self, filtered):
        if not (self._unfiltered() and self._newest_first_forwards()):
            return filtered
        ids = author_newest_live_paper_ids(
            author=self.author,
            limit=self.paginator.get_page_size(self.request) + 1,
            before=self.paginator.newest_before(self.request),
        )
        return paper_rows().filter(id__in=ids)

    def list_meta(self, filtered) -> dict:
        if not self._unfiltered() or connection.vendor != "postgresql":
            return super().list_meta(filtered)  # SQLite: always exact (api.facets)
        return capped_count(
            lambda cap: author_paper_count_capped(author=self.author, cap=cap),
            lambda: author_credits(author=self.author),
        )


@extend_schema(
    summary="An author's co-authors",
    description=f"At most {LISTED} authors sharing most papers with the author, most first, "
    f"then by name; `papers` counts the shared papers among the author's newest {COUNTED_PAPERS}.",
    parameters=[AUTHOR_ID_PARAMETER],
    responses={200: AuthorNameCountSerializer(many=True), 404: NO_AUTHOR},
)
class AuthorCoauthorsView(ReadView):
    serializer_class = AuthorNameCountSerializer
    filter_backends: list = []
    # One unpaged list (at most LISTED): the schema must not describe a page.
    pagination_class = None

    def get(self, request, id: int):
        author = author_or_404(id)
        rows = author_coauthors(author=author, limit=LISTED)
        return Response(AuthorNameCountSerializer(rows, many=True).data)


@extend_schema(
    summary="An author's topics",
    description=f"At most {LISTED} active topics the author's papers are accepted in, on most "
    "of them first, then by name; `papers` counts the author's papers in each, among their "
    f"newest {COUNTED_PAPERS}.",
    parameters=[AUTHOR_ID_PARAMETER],
    responses={200: AuthorTopicSerializer(many=True), 404: NO_AUTHOR},
)
class AuthorTopicsView(ReadView):
    serializer_class = AuthorTopicSerializer
    filter_backends: list = []
    # One unpaged list (at most LISTED): the schema must not describe a page.
    pagination_class = None

    def get(self, request, id: int):
        author = author_or_404(id)
        rows = author_topics(author=author, limit=LISTED)
        return Response(AuthorTopicSerializer(rows, many=True).data)
