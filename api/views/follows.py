"""``me/follows/``: the signed-in user's follows (topics, authors and saved searches), and only
theirs. Every write goes through ``follows.services``, as the site's pages do."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status
from rest_framework.response import Response

from follows import services as follow_services
from follows.models import Follow

from ..serializers.follows import (
    FollowCreateSerializer,
    FollowSerializer,
    FollowUpdateSerializer,
)
from .base import INVALID, NOT_FOUND, UNAUTHENTICATED, MyViewSet


@extend_schema_view(
    list=extend_schema(
        summary="List your follows",
        description="The signed-in user's follows, newest first: topics, authors and saved "
        "searches.",
        responses={200: FollowSerializer(many=True), 401: UNAUTHENTICATED},
    ),
    retrieve=extend_schema(
        summary="One of your follows",
        responses={200: FollowSerializer, 401: UNAUTHENTICATED, 404: NOT_FOUND},
    ),
    create=extend_schema(
        summary="Follow a topic or an author, or save a search",
        description=(
            'Send `{"topic": "<slug>"}` to follow a topic, `{"author": <id>}` to follow an '
            "author (following either again returns the existing follow, 200), or "
            '`{"query": "...", "topics": [...], "categories": [...]}` to save a search. Needs '
            "a token (or a signed-in session and its CSRF token)."
        ),
        request=FollowCreateSerializer,
        responses={
            201: FollowSerializer,
            200: OpenApiResponse(FollowSerializer, description="Already followed."),
            400: INVALID,
            401: UNAUTHENTICATED,
        },
    ),
    partial_update=extend_schema(
        summary="Change a follow's digest frequency",
        description=(
            'Send `{"digest_frequency": "daily"}` (`daily`, `weekly` or `off`). Another '
            "user's follow is a 404."
        ),
        request=FollowUpdateSerializer,
        responses={200: FollowSerializer, 400: INVALID, 401: UNAUTHENTICATED, 404: NOT_FOUND},
    ),
    destroy=extend_schema(
        summary="Stop following",
        description="Delete one of your follows by its id. Another user's follow is a 404.",
        responses={204: None, 401: UNAUTHENTICATED, 404: NOT_FOUND},
    ),
)
class MyFollowViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.DestroyModelMixin, MyViewSet
):
    """``me/follows/``: the signed-in user's follows, and only theirs."""

    serializer_class = FollowSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # drf-spectacular, no user
            return Follow.objects.none()
        return (
            Follow.objects.filter(user=self.request.user)
            .select_related("topic", "author")
            .prefetch_related("topic_scope", "category_scope")
            .order_by("-created_at", "-pk")
        )

    def create(self, request, *args, **kwargs):
        serializer = FollowCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        frequency = data.get("digest_frequency")
        existing = self.get_queryset()
        try:
            if "topic" in data:
                existed = existing.filter(topic=data["topic"]).exists()
                follow = follow_services.follow_create(
                    user=request.user, topic=data["topic"], digest_frequency=frequency
                )
            elif "author" in data:
                author = follow_services.author_current(data["author"])
                existed = existing.filter(author=author).exists()
                follow = follow_services.follow_author_create(
                    user=request.user, author=author, digest_frequency=frequency
                )
            else:
                query = follow_services.normalise_query(data["query"])
                existed = existing.filter(kind=Follow.Kind.SEARCH, query=query).exists()
                follow = follow_services.follow_search_create(
                    user=request.user,
                    query=data["query"],
                    topics=data.get("topics", ()),
                    categories=data.get("categories", ()),
                    digest_frequency=frequency,
                )
        except DjangoValidationError as error:
            raise serializers.ValidationError(serializers.as_serializer_error(error)) from None
        return Response(
            FollowSerializer(self.get_queryset().get(pk=follow.pk)).data,
            status=status.HTTP_200_OK if existed else status.HTTP_201_CREATED,
        )

    def partial_update(self, request, *args, **kwargs):
        follow = self.get_object()  # the user's own, else 404
        serializer = FollowUpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        follow_services.follow_update(
            follow=follow, digest_frequency=serializer.validated_data["digest_frequency"]
        )
        return Response(FollowSerializer(self.get_queryset().get(pk=follow.pk)).data)

    def perform_destroy(self, instance):
        follow_services.follow_delete(user=self.request.user, follow=instance)
