"""The access-controlled API resources (the user's follows, curators' assignments) and the HTML
page where a user creates and revokes API tokens.

Thin views: every write goes through a service (``follows.services``, ``topics.assignments``,
``api.services``), the same ones the site's pages and the admin call.
"""

from __future__ import annotations

import django_filters
from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.cache import add_never_cache_headers, patch_vary_headers
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from follows import services as follow_services
from follows.models import Follow
from papers.identifiers import InvalidArxivId, parse_arxiv_id
from topics.assignments import assignment_add, assignment_decide
from topics.models import Assignment, Topic

from .forms import TokenCreateForm
from .models import ApiToken
from .permissions import IsCurator, IsSignedIn
from .serializers_access import (
    AssignmentCreateSerializer,
    AssignmentSerializer,
    FollowCreateSerializer,
    FollowSerializer,
    FollowUpdateSerializer,
)
from .services import TokenLimitReached, token_create, token_revoke

# The Error component is added by api.schema's hook, with 429 (and its Retry-After) and the
# other errors every operation can give; these say what the errors mean here.
ERROR = {"$ref": "#/components/schemas/Error"}
UNAUTHENTICATED = OpenApiResponse(ERROR, description="No credentials, or a bad or revoked token.")
NOT_CURATOR = OpenApiResponse(ERROR, description="Signed in, but not a curator.")
NOT_FOUND = OpenApiResponse(ERROR, description="No such object of yours.")
INVALID = OpenApiResponse(
    ERROR,
    description="A field names something that does not exist or is malformed; `details` "
    "names each field and what was wrong.",
)


class PrivateAnswersMixin:
    """For resources that differ by user: answers are never stored by shared caches and vary
    by the ``Authorization`` header."""

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        add_never_cache_headers(response)
        patch_vary_headers(response, ("Authorization",))
        return response


# --- me/follows/ -------------------------------------------------------------------------------


@extend_schema_view(
    list=extend_schema(
        summary="List your follows",
        description="The signed-in user's follows, newest first: topics and saved searches.",
        responses={200: FollowSerializer(many=True), 401: UNAUTHENTICATED},
    ),
    retrieve=extend_schema(
        summary="One of your follows",
        responses={200: FollowSerializer, 401: UNAUTHENTICATED, 404: NOT_FOUND},
    ),
    create=extend_schema(
        summary="Follow a topic or save a search",
        description=(
            'Send `{"topic": "<slug>"}` to follow a topic (following it again returns the '
            'existing follow, 200), or `{"query": "...", "topics": [...], "categories": [...]}` '
            "to save a search. Needs a token (or a signed-in session and its CSRF token)."
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
    PrivateAnswersMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """``me/follows/``: the signed-in user's follows, and only theirs."""

    serializer_class = FollowSerializer
    permission_classes = [IsSignedIn]
    filter_backends = []
    lookup_value_converter = "int"

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # drf-spectacular, no user
            return Follow.objects.none()
        return (
            Follow.objects.filter(user=self.request.user)
            .select_related("topic")
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


# --- assignments/ ------------------------------------------------------------------------------


class ArxivIdFormField(forms.CharField):
    """An arXiv identifier in any common spelling, cleaned to its canonical form."""

    def clean(self, value):
        value = super().clean(value)
        if not value:
            return value
        try:
            return parse_arxiv_id(value)[0]
        except InvalidArxivId as error:
            raise forms.ValidationError(str(error)) from None


class ArxivIdFilter(django_filters.CharFilter):
    field_class = ArxivIdFormField


class AssignmentFilter(django_filters.FilterSet):
    """Filters of ``assignments/``: ``topic`` (slug, that topic only), ``paper`` (arXiv
    identifier, any spelling), ``state`` and ``source``."""

    topic = django_filters.ModelChoiceFilter(
        queryset=Topic.objects.all(), to_field_name="slug", help_text="Topic slug."
    )
    paper = ArxivIdFilter(field_name="paper__arxiv_id", help_text="arXiv identifier.")
    state = django_filters.ChoiceFilter(choices=Assignment.State.choices)
    source = django_filters.ChoiceFilter(choices=Assignment.Source.choices)

    class Meta:
        model = Assignment
        fields = ["topic", "paper", "state", "source"]


def _decision_schema(state: str):
    return extend_schema(
        summary=f"{state.capitalize()} an assignment",
        description=(
            f"Record a curator decision: the assignment becomes {state}, decided by you now "
            "(kept in its history; re-tagging never changes it). The same service as the admin."
        ),
        request=None,
        responses={
            200: AssignmentSerializer,
            401: UNAUTHENTICATED,
            403: NOT_CURATOR,
            404: NOT_FOUND,
        },
    )


@extend_schema_view(
    list=extend_schema(
        summary="List assignments (curators)",
        description="Papers placed in topics, newest first, with their source and state.",
        responses={
            200: AssignmentSerializer(many=True),
            400: INVALID,
            401: UNAUTHENTICATED,
            403: NOT_CURATOR,
        },
    ),
    retrieve=extend_schema(
        summary="One assignment (curators)",
        responses={
            200: AssignmentSerializer,
            401: UNAUTHENTICATED,
            403: NOT_CURATOR,
            404: NOT_FOUND,
        },
    ),
    create=extend_schema(
        summary="Place a paper in a topic (curators)",
        description=(
            "Assign the paper to the topic as a curator: source `curator`, accepted, decided by "
            "you. An existing assignment of the pair becomes this one."
        ),
        request=AssignmentCreateSerializer,
        responses={
            201: AssignmentSerializer,
            400: INVALID,
            401: UNAUTHENTICATED,
            403: NOT_CURATOR,
        },
    ),
    accept=_decision_schema("accept"),
    reject=_decision_schema("reject"),
)
class AssignmentViewSet(
    PrivateAnswersMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """``assignments/``: curators read, add, accept and reject assignments."""

    serializer_class = AssignmentSerializer
    permission_classes = [IsCurator]
    filterset_class = AssignmentFilter
    lookup_value_converter = "int"
    queryset = Assignment.objects.select_related("paper", "topic", "decided_by").order_by(
        "-created_at", "-pk"
    )

    def create(self, request, *args, **kwargs):
        serializer = AssignmentCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        assignment = assignment_add(
            paper=serializer.validated_data["paper"],
            topic=serializer.validated_data["topic"],
            user=request.user,
        )
        return Response(
            AssignmentSerializer(self.get_queryset().get(pk=assignment.pk)).data,
            status=status.HTTP_201_CREATED,
        )

    def _decide(self, state: str) -> Response:
        assignment = assignment_decide(
            assignment=self.get_object(), state=state, user=self.request.user
        )
        return Response(AssignmentSerializer(self.get_queryset().get(pk=assignment.pk)).data)

    @action(detail=True, methods=["post"], filter_backends=[])
    def accept(self, request, pk=None):
        return self._decide(Assignment.State.ACCEPTED)

    @action(detail=True, methods=["post"], filter_backends=[])
    def reject(self, request, pk=None):
        return self._decide(Assignment.State.REJECTED)


# --- the API tokens page (HTML) ----------------------------------------------------------------


# The ids of the token forms this session has sent (the last 20), never the keys.
TOKEN_FORMS_SESSION_KEY = "api-token-forms-sent"


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def token_list(request):
    """``GET``: the user's API tokens (name, first characters, created, last used, revoked) and
    a form to create one. ``POST`` (``name``): create a token and show its full key, this once:
    the key is in this response only (never stored, never cached, never redirected with)."""
    created = None
    if request.method == "POST":
        form = TokenCreateForm(request.POST)
        if form.is_valid():
            once = form.cleaned_data["once"]
            once = str(once) if once else None
            submitted = request.session.get(TOKEN_FORMS_SESSION_KEY, [])
            if once is not None and once in submitted:
                # The same form again (a reload): its token exists and its key was shown.
                messages.info(
                    request,
                    "That form was already sent: its token was created and its key shown once "
                    "(reloading cannot show it again). Revoke it below if the key was lost.",
                )
                form = TokenCreateForm()
            else:
                try:
                    created = token_create(user=request.user, name=form.cleaned_data["name"])
                except TokenLimitReached as error:
                    form.add_error(None, str(error))
                else:
                    if once is not None:
                        request.session[TOKEN_FORMS_SESSION_KEY] = [*submitted, once][-20:]
                    form = TokenCreateForm()
    else:
        form = TokenCreateForm()
    tokens = ApiToken.objects.filter(user=request.user)
    return render(
        request,
        "api/tokens.html",
        {"form": form, "tokens": tokens, "created": created},
    )


@login_required
@require_POST
def token_revoke_view(request, pk: int):
    """``POST``: revoke one of the user's tokens, then back to the page. Another user's token,
    or none with this id: 404."""
    token = get_object_or_404(ApiToken, pk=pk, user=request.user)
    token_revoke(token=token)
    messages.success(request, f"Token “{token.name}” revoked: it no longer works.")
    return redirect("api:tokens")
