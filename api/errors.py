"""The one JSON shape of every API error, and the handlers that produce it.

Every error response under ``/api/v1/`` has this body (``details`` may be empty)::

    {"error": {"status": 400, "code": "invalid_parameter",
               "message": "Invalid value for submitted_after.",
               "details": {"submitted_after": ["Enter a valid date (YYYY-MM-DD)."]}}}

- :func:`exception_handler` is DRF's ``EXCEPTION_HANDLER``: every DRF-raised error (validation,
  404, 405, 406, 401/403, 429 with its ``Retry-After`` header kept), a body over Django's upload
  limits (``DATA_UPLOAD_MAX_MEMORY_SIZE``, ``..._NUMBER_FIELDS``, ``..._NUMBER_FILES``: 413,
  ``payload_too_large``) and, when ``DEBUG`` is off,
  any other exception (logged to ``django.request`` with its traceback, answered as a 500);
- :func:`not_found` answers unknown URLs under ``/api/v1/`` (a JSON 404, not the HTML page);
- :func:`server_error` is a ``handler500`` for errors outside DRF views.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import (
    PermissionDenied,
    RequestDataTooBig,
    TooManyFieldsSent,
    TooManyFilesSent,
)
from django.http import Http404, HttpResponsePermanentRedirect, JsonResponse
from django.urls import Resolver404, resolve
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import set_rollback

logger = logging.getLogger("django.request")

__all__ = ["error_body", "exception_handler", "not_found", "server_error"]

# DRF's error codes, renamed where a reader of the API would look for a clearer word.
_CODES = {
    "invalid": "invalid_parameter",
    "parse_error": "malformed_request",
    "not_found": "not_found",
    "method_not_allowed": "method_not_allowed",
    "not_acceptable": "not_acceptable",
    "unsupported_media_type": "unsupported_media_type",
    "throttled": "throttled",
    "not_authenticated": "not_authenticated",
    "authentication_failed": "authentication_failed",
    "permission_denied": "permission_denied",
}


class PayloadTooLarge(exceptions.APIException):
    """413: the request body is over one of Django's upload limits (read when DRF parses it)."""

    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "payload_too_large"
    default_detail = "The request body is too large."


def _payload_too_large(exc: Exception) -> PayloadTooLarge:
    """The 413 for one of Django's upload-limit errors, naming the limit that was passed."""
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return PayloadTooLarge(
            f"The request body is larger than this API accepts ({limit:,} bytes at most)."
        )
    if isinstance(exc, TooManyFieldsSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
        return PayloadTooLarge(f"The request has more than {limit:,} fields.")
    limit = settings.DATA_UPLOAD_MAX_NUMBER_FILES
    return PayloadTooLarge(f"The request has more than {limit:,} files.")


def error_body(*, status_code: int, code: str, message: str, details: dict | None = None) -> dict:
    """The error JSON: ``{"error": {"status", "code", "message", "details"}}``."""
    return {
        "error": {
            "status": status_code,
            "code": code,
            "message": message,
            "details": details or {},
        }
    }


def _validation_details(detail) -> dict[str, list[str]]:
    """DRF validation detail (a dict, a list or a string, nested) as ``{name: [messages]}``;
    messages without a name go under ``"non_field_errors"``."""
    if isinstance(detail, dict):
        details = {}
        for name, value in detail.items():
            if isinstance(value, dict):
                for sub, messages in _validation_details(value).items():
                    details[f"{name}.{sub}"] = messages
            else:
                details[str(name)] = [
                    str(m) for m in (value if isinstance(value, list) else [value])
                ]
        return details
    if isinstance(detail, list):
        return {"non_field_errors": [str(m) for m in detail]}
    return {"non_field_errors": [str(detail)]}


def _validation_message(details: dict[str, list[str]], method: str) -> str:
    names = [n for n in details if n != "non_field_errors"]
    if not names:
        return "; ".join(details.get("non_field_errors", [])) or "Invalid request."
    what = "parameter" if method in ("GET", "HEAD") else "field"
    listed = ", ".join(names)
    first = details[names[0]][0]
    return f"Invalid {what}{'s' if len(names) > 1 else ''} {listed}: {first}"


def exception_handler(exc, context):
    """DRF ``EXCEPTION_HANDLER``: answer ``exc`` with the error JSON (see the module docstring).

    Returns ``None`` (DRF re-raises, Django shows its debug page) only for exceptions that are
    not API errors while ``settings.DEBUG`` is on.
    """
    request = context.get("request")
    method = getattr(request, "method", "GET")
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or None)
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    elif isinstance(exc, (RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent)):
        # Raised when DRF first reads request.body: the client's mistake, not a server error.
        exc = _payload_too_large(exc)

    if not isinstance(exc, exceptions.APIException):
        if settings.DEBUG:
            return None
        logger.error(
            "Internal Server Error: %s",
            getattr(request, "path", "?"),
            exc_info=exc,
            extra={"status_code": 500, "request": getattr(request, "_request", request)},
        )
        set_rollback()
        return Response(
            error_body(
                status_code=500,
                code="server_error",
                message="The server failed to answer this request; it has been logged.",
            ),
            status=status.HTTP_500_INTERNAL_SERVER_ERROR,
        )

    headers = {}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header
    if getattr(exc, "wait", None):
        headers["Retry-After"] = str(int(exc.wait))

    if isinstance(exc, exceptions.ValidationError):
        details = _validation_details(exc.detail)
        body = error_body(
            status_code=exc.status_code,
            code="invalid_parameter" if method in ("GET", "HEAD") else "invalid_request",
            message=_validation_message(details, method),
            details=details,
        )
    else:
        detail = exc.detail
        code = detail.code if hasattr(detail, "code") else exc.default_code
        message = str(detail) if not isinstance(detail, (dict, list)) else str(exc.default_detail)
        details = _validation_details(detail) if isinstance(detail, (dict, list)) else {}
        if isinstance(exc, exceptions.Throttled) and exc.wait is not None:
            details = {"retry_after_seconds": [str(int(exc.wait))]}
        body = error_body(
            status_code=exc.status_code,
            code=_CODES.get(code, code),
            message=message,
            details=details,
        )
    set_rollback()
    return Response(body, status=exc.status_code, headers=headers)


@csrf_exempt
def not_found(request, unmatched=""):
    """Unknown URL under ``/api/v1/``: a JSON 404 naming the path, whatever the method (CSRF
    exempt: it changes nothing, and a POST to a mistyped path must get this answer, not the
    HTML page of a CSRF failure).

    A GET or HEAD of a known endpoint written without its trailing slash is redirected (301)
    to the address with the slash, as Django's ``APPEND_SLASH`` would have done.
    """
    path = request.path
    if request.method in ("GET", "HEAD") and not path.endswith("/"):
        try:
            match = resolve(path + "/")
        except Resolver404:
            match = None
        if match is not None and match.func is not not_found:
            query = request.META.get("QUERY_STRING", "")
            return HttpResponsePermanentRedirect(f"{path}/?{query}" if query else f"{path}/")
    return JsonResponse(
        error_body(
            status_code=404,
            code="not_found",
            message=f"No API endpoint at {path}; see /api/v1/docs/ for the endpoints.",
        ),
        status=404,
    )


def server_error(request, *args, **kwargs):
    """A ``handler500`` for the whole site: under ``/api/`` the error JSON with status 500 (no
    details leaked), elsewhere Django's own 500 page (``django.views.defaults.server_error``)."""
    if not request.path.startswith("/api/"):
        return defaults.server_error(request, *args, **kwargs)
    return JsonResponse(
        error_body(
            status_code=500,
            code="server_error",
            message="The server failed to answer this request; it has been logged.",
        ),
        status=500,
    )
