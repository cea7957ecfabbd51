"""What the API's views share: the read resources' base (conditional GETs, ``?fields=``),
private answers for per-user resources, streamed file answers, and the OpenAPI parameters and
error responses several resources name."""

from __future__ import annotations

from django.http import StreamingHttpResponse
from django.utils.cache import add_never_cache_headers, patch_vary_headers
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import generics, viewsets
from rest_framework.negotiation import BaseContentNegotiation

from ..conditional import ConditionalGetMixin
from ..permissions import IsSignedIn
from ..serializers.base import FIELDS_PARAM
from ..strict import StrictQueryParamsMixin

FIELDS_PARAMETER = OpenApiParameter(
    FIELDS_PARAM,
    OpenApiTypes.STR,
    description="Comma-separated top-level fields to return (e.g. id,title,submitted); "
    "an unknown name is a 400.",
)

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


class ReadView(StrictQueryParamsMixin, ConditionalGetMixin, generics.GenericAPIView):
    # Shared base of the read resources: ETag/Last-Modified and 304s (api.conditional). A
    # comment, not a docstring: drf-spectacular would publish it as every subclass's text.
    # Unknown or repeated query parameters are a 400 (api.strict): a view reading a parameter
    # that is not a filter of its filterset lists it in extra_query_params.

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "select_fields": True}


class PrivateAnswersMixin:
    """For resources that differ by user: answers are never stored by shared caches and vary
    by the ``Authorization`` header."""

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        add_never_cache_headers(response)
        patch_vary_headers(response, ("Authorization",))
        return response


class MyViewSet(StrictQueryParamsMixin, PrivateAnswersMixin, viewsets.GenericViewSet):
    """Base of the signed-in user's own resources (``me/…``): signed in only (401
    otherwise), private answers, strict query parameters, integer ids in the path. The
    subclass adds the mixins of the actions it offers and a ``get_queryset`` of the user's
    rows only, so another user's id is a 404."""

    permission_classes = [IsSignedIn]
    filter_backends: list = []
    lookup_value_converter = "int"


class StreamAnyAccept(BaseContentNegotiation):
    """Exports answer with their own content type whatever ``Accept`` says; errors are JSON."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


def streamed_response(lines, *, content_type: str, filename: str) -> StreamingHttpResponse:
    """``lines`` (an iterable of ``str``) streamed as an attachment named ``filename``."""
    response = StreamingHttpResponse(lines, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def export_filename(text: str) -> str:
    """``text`` safe as a file name: letters, digits, ``-`` and ``.`` kept, others ``_``."""
    return "".join(c if c.isalnum() or c in "-." else "_" for c in text)
