"""drf-spectacular hooks: the error responses every operation can give, described once.

:func:`add_error_responses` (a ``POSTPROCESSING_HOOKS`` entry) adds the ``Error`` schema
component (the shape ``api.errors.error_body`` builds) and, to every operation, the error
responses it can give: 400 (bad parameter or body, or an unknown or repeated query
parameter), 401/403 (bad
token, missing role), 404, 406, 429 (with ``Retry-After``) and 500.
"""

from __future__ import annotations

ERROR_SCHEMA = {
    "type": "object",
    "description": "Every error of the API has this shape.",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "status": {"type": "integer", "description": "The HTTP status code."},
                "code": {
                    "type": "string",
                    "description": "A stable machine-readable code: invalid_parameter, "
                    "invalid_request, not_found, method_not_allowed, not_acceptable, "
                    "not_authenticated, authentication_failed, permission_denied, throttled, "
                    "server_error, ...",
                },
                "message": {"type": "string", "description": "What was wrong, for a person."},
                "details": {
                    "type": "object",
                    "description": "Per parameter or field: the list of its problems.",
                    "additionalProperties": {"type": "array", "items": {"type": "string"}},
                },
            },
            "required": ["status", "code", "message", "details"],
        }
    },
    "required": ["error"],
}

_ERRORS = {
    "400": "A parameter or field has a bad value, or a query parameter is unknown or repeated "
    "(where it may not be); details name it and say what is allowed.",
    "401": "The token is missing, unknown or revoked where one is needed.",
    "403": "The token's user may not do this.",
    "404": "No such resource (or no such address under /api/v1/).",
    "406": "The Accept header asks for a format the endpoint does not give.",
    "429": "Too many requests; retry after the number of seconds in Retry-After.",
    "500": "The server failed; the error is logged.",
}


def _response(status: str) -> dict:
    response = {
        "description": _ERRORS[status],
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }
    if status == "429":
        response["headers"] = {
            "Retry-After": {
                "description": "Seconds to wait before the next request.",
                "schema": {"type": "integer"},
            }
        }
    return response


def add_error_responses(result, generator, request, public):
    """Add the ``Error`` component and the error responses to every operation of ``result``
    (the OpenAPI document as a dict); returns it."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            # Every operation can be a 400: an unknown query parameter is one (api.strict).
            for status in _ERRORS:
                operation["responses"].setdefault(status, _response(status))
    return result
