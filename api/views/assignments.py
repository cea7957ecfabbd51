"""``assignments/`` (curators): read, add, accept and reject assignments of papers to
topics, through the same services as the admin (``topics.assignments``)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from topics.assignments import assignment_add, assignment_decide
from topics.models import Assignment

from ..filters import AssignmentFilter
from ..permissions import IsCurator
from ..serializers.assignments import AssignmentCreateSerializer, AssignmentSerializer
from ..strict import StrictQueryParamsMixin
from .base import INVALID, NOT_CURATOR, NOT_FOUND, UNAUTHENTICATED, PrivateAnswersMixin


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
    StrictQueryParamsMixin,
    PrivateAnswersMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
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
