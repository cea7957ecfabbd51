"""``me/library/`` (the signed-in reader's saved papers) and ``me/for-you/`` (their picks):
the same services and selectors as the site's /library/ and /for-you/ pages."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status
from rest_framework.response import Response

from follows.for_you_selectors import for_you_picks
from follows.library_selectors import library_items
from follows.library_services import (
    library_item_mark_read,
    library_item_note,
    library_item_remove,
    library_item_save,
)
from follows.models import LibraryItem
from papers.models import Paper

from ..permissions import IsSignedIn
from ..selectors import PaperNotFound, api_paper_id, paper_by_api_id
from ..serializers.library import (
    ForYouSerializer,
    LibraryItemCreateSerializer,
    LibraryItemSerializer,
    LibraryItemUpdateSerializer,
)
from .base import (
    INVALID,
    NOT_FOUND,
    UNAUTHENTICATED,
    MyViewSet,
    PrivateAnswersMixin,
    ReadView,
)


def _paper_ref(paper) -> dict:
    return {"id": api_paper_id(paper), "title": paper.title, "url": paper.get_absolute_url()}


def _item_data(item) -> dict:
    return {
        "id": item.pk,
        "paper": _paper_ref(item.paper),
        "saved_at": item.saved_at,
        "read": item.read_at is not None,
        "note": item.note,
    }


@extend_schema_view(
    list=extend_schema(
        summary="Your library",
        description="The papers you saved, newest saved first; `status=unread` or `read` "
        "keeps those only.",
        responses={200: LibraryItemSerializer(many=True), 401: UNAUTHENTICATED},
    ),
    create=extend_schema(
        summary="Save a paper",
        description='Send `{"paper": "<API paper id>"}`; saving a saved paper again returns '
        "its item (200).",
        request=LibraryItemCreateSerializer,
        responses={
            201: LibraryItemSerializer,
            200: OpenApiResponse(LibraryItemSerializer, description="Already saved."),
            400: INVALID,
            401: UNAUTHENTICATED,
        },
    ),
    partial_update=extend_schema(
        summary="Mark read or unread, write a note",
        request=LibraryItemUpdateSerializer,
        responses={200: LibraryItemSerializer, 400: INVALID, 401: UNAUTHENTICATED, 404: NOT_FOUND},
    ),
    destroy=extend_schema(
        summary="Remove a paper from your library",
        description="Another user's item is a 404.",
        responses={204: None, 401: UNAUTHENTICATED, 404: NOT_FOUND},
    ),
)
class MyLibraryViewSet(mixins.ListModelMixin, mixins.DestroyModelMixin, MyViewSet):
    """``me/library/``: the signed-in reader's saved papers, and only theirs."""

    serializer_class = LibraryItemSerializer
    extra_query_params = ("status",)

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # drf-spectacular, no user
            return LibraryItem.objects.none()
        status_ = self.request.query_params.get("status", "all")
        try:
            items = library_items(user=self.request.user, status=status_)
        except ValueError as error:
            raise serializers.ValidationError({"status": [str(error)]}) from None
        return items.select_related("paper")

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response([_item_data(item) for item in page])

    def create(self, request, *args, **kwargs):
        serializer = LibraryItemCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            paper = paper_by_api_id(serializer.validated_data["paper"])
        except PaperNotFound as error:
            raise serializers.ValidationError({"paper": [str(error)]}) from None
        existed = self.get_queryset().filter(paper=paper).exists()
        item = library_item_save(user=request.user, paper=paper)
        item = self.get_queryset().get(pk=item.pk)
        return Response(
            _item_data(item), status=status.HTTP_200_OK if existed else status.HTTP_201_CREATED
        )

    def partial_update(self, request, *args, **kwargs):
        item = self.get_object()  # the reader's own, else 404
        serializer = LibraryItemUpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            if "read" in data:
                library_item_mark_read(item=item, read=data["read"])
            if "note" in data:
                library_item_note(item=item, note=data["note"])
        except DjangoValidationError as error:
            raise serializers.ValidationError({"note": error.messages}) from None
        return Response(_item_data(self.get_queryset().get(pk=item.pk)))

    def perform_destroy(self, instance):
        library_item_remove(user=self.request.user, paper=instance.paper)


class MyForYouView(PrivateAnswersMixin, ReadView):
    serializer_class = ForYouSerializer
    permission_classes = [IsSignedIn]
    filter_backends: list = []
    pagination_class = None

    @extend_schema(
        summary="Your 'for you' picks",
        description="New papers ranked for you from what you saved and follow, each saying "
        "why, as /for-you/ shows them (the same ranking); empty when you saved and follow "
        "nothing.",
        responses={200: ForYouSerializer, 401: UNAUTHENTICATED},
    )
    def get(self, request):
        ranking, picks = for_you_picks(user=request.user)
        # The cards clip titles: the papers' own ids and titles, in one query.
        papers = Paper.objects.only("pk", "arxiv_id", "title").in_bulk(
            [pick.card.pk for pick in picks]
        )
        data = {
            "since": ranking.since,
            "until": ranking.until,
            "results": [
                {
                    "paper": _paper_ref(papers[pick.card.pk]),
                    "score": pick.score,
                    "reasons": pick.reasons,
                }
                for pick in picks
                if pick.card.pk in papers
            ],
        }
        return Response(ForYouSerializer(data).data)
