"""Conditional GET for API reads: ``ETag`` and ``Last-Modified``, answering 304 when unchanged.

- ``ETag``: a strong validator, the SHA-256 of the rendered JSON body (first 32 hex digits).
  Hashing the body is always right (topics, momentum and pages change with data that has no
  single timestamp: assignments, other papers, deletions) at the cost of building the
  response; what a 304 saves is the transfer and the client's work.
- ``Last-Modified``: where a view knows when its content last changed (papers: the newest
  ``updated_at`` of the papers shown, their accepted assignments and those topics), it sets
  ``self.last_modified``. A removal does not move it, so clients should prefer ``ETag``; as
  HTTP says, ``If-None-Match`` wins over ``If-Modified-Since`` when a request has both.

Streamed exports carry neither (their body is not known before it is sent).
"""

from __future__ import annotations

import hashlib

from django.utils.cache import get_conditional_response
from django.utils.http import http_date
from rest_framework.response import Response

__all__ = ["ConditionalGetMixin", "body_etag"]


def body_etag(content: bytes) -> str:
    """A quoted strong ETag for ``content``: ``"<32 hex digits of its SHA-256>"``."""
    return f'"{hashlib.sha256(content).hexdigest()[:32]}"'


class ConditionalGetMixin:
    """For DRF views: add ``ETag`` (and ``Last-Modified`` when ``self.last_modified`` is a
    datetime) to successful GET/HEAD responses and answer 304 Not Modified to a matching
    ``If-None-Match`` or a satisfied ``If-Modified-Since``."""

    last_modified = None

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if (
            request.method not in ("GET", "HEAD")
            or response.status_code != 200
            or not isinstance(response, Response)
        ):
            return response
        response.render()
        etag = body_etag(response.content)
        response["ETag"] = etag
        timestamp = None
        if self.last_modified is not None:
            timestamp = int(self.last_modified.timestamp())
            response["Last-Modified"] = http_date(timestamp)
        return get_conditional_response(
            request, etag=etag, last_modified=timestamp, response=response
        )
