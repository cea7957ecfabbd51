"""``POST /api/v1/topics/<slug>/ask/``: answer a question from a topic's papers."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from ask.answers import topic_answer
from ask.ratelimit import AskRateLimited, ask_rate_limit
from topics.selectors import topic_by_slug

from ..serializers.ask import AskAnswerSerializer, AskRequestSerializer
from ..strict import StrictQueryParamsMixin


class TopicAskView(StrictQueryParamsMixin, APIView):
    """Answer ``{"q": "..."}`` (``question``, its deprecated alias, still works; both is a
    400) from the papers of the topic and its descendants.

    200: the answer, its citations in order of relevance and its mode (URLs absolute). 400:
    the question is missing, blank or longer than 500 characters (the error names the field).
    404: no active topic has the slug (an old slug of a renamed topic asks that topic). 429:
    over 10 questions a minute for this user or address (the page and the API counted
    together; both limits are site settings), with ``Retry-After``.
    """

    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="topics_ask",
        summary="Ask a question about a topic",
        description=(
            "Answers from the abstracts of the topic's papers (its descendants included), "
            "with numbered citations in order of relevance. Extractive by default; generated "
            "by a language model where the site configures one, falling back to the extractive "
            "answer (and saying why in fallback_reason) when it fails."
        ),
        tags=["topics"],
        request=AskRequestSerializer,
        responses={
            200: AskAnswerSerializer,
            400: OpenApiResponse(description="Missing, blank or too long question."),
            404: OpenApiResponse(description="No active topic has this slug."),
            429: OpenApiResponse(description="Too many questions; see Retry-After."),
        },
    )
    def post(self, request, slug):
        # An old slug of a renamed or merged topic asks the topic now (a POST cannot be answered
        # with a 301 as the GET resources are).
        topic = topic_by_slug(slug)
        if topic is None:
            raise exceptions.NotFound(f"No active topic has the slug {slug!r}.")
        serializer = AskRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            ask_rate_limit(request)
        except AskRateLimited as limited:
            raise exceptions.Throttled(
                wait=limited.retry_after,
                detail=f"Too many questions; try again in {limited.retry_after} seconds.",
            ) from None
        answer = topic_answer(topic=topic, question=serializer.validated_data["question"])
        data = answer.to_dict()
        for item in data["citations"] + data["suggestions"]:
            item["url"] = request.build_absolute_uri(item["url"])
        return Response(AskAnswerSerializer(data).data)
