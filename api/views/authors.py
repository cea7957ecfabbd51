"""``authors/{id}/``: one author's summary, from the selectors that back the author page."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from papers.author_selectors import author_affiliations, author_coauthors, author_paper_count
from papers.models import Author
from topics.authors import author_topics

from ..serializers.authors import AuthorDetailSerializer
from .base import ERROR, ReadView

SHOWN = 10


class AuthorDetailView(ReadView):
    """One author by id. A merged-away name's id answers its survivor (``id`` is the
    survivor's), as the author page redirects there. Six queries, whatever the data."""

    serializer_class = AuthorDetailSerializer
    filter_backends: list = []

    @extend_schema(
        summary="An author",
        description="Name, paper count, affiliations, co-authors and topics (each at most "
        f"{SHOWN}, on most papers first) and the site page's url. The id of a name merged "
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
        author = Author.objects.select_related("merged_into").filter(pk=id).first()
        if author is None:
            raise NotFound("No author has this id.")
        author = author.merged_into or author
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
