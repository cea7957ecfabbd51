"""Conditional GET for API reads: ``ETag`` and ``Last-Modified``, answering 304 when unchanged.

- ``ETag``: a strong validator, the SHA-256 of the rendered JSON body (first 32 hex digits).
  Hashing the body is always right (topics, momentum and pages change with data that has no
  single timestamp: assignments, other papers, deletions) at the cost of building the
  response; what a 304 saves is the transfer and the client's work.
- ``Last-Modified``: where a view knows when its content last changed (papers: the newest
  ``updated_at`` of the papers shown, their accepted assignments and those topics), it sets
  ``self.last_modified``. A removal does not move it, so it is informative only: a 304 comes
  from a matching ``If-None-Match``, never from ``If-Modified-Since`` alone (a changed
  resource must not answer 304), and responses say ``Cache-Control: no-cache`` so caches
  revalidate rather than guess a freshness from it.

Streamed exports carry neither (their body is not known before it is sent).
"""

from __future__ import annotations

import hashlib

from django.utils.cache import get_conditional_response, patch_cache_control
from django.utils.http import http_date
from rest_framework.response import Response

__all__ = ["ConditionalGetMixin", "body_etag"]


def body_etag(content: bytes) -> str:
    """A quoted strong ETag for ``content``: ``"<32 hex digits of its SHA-256>"``."""
    return f'"{hashlib.sha256(content).hexdigest()[:32]}"'


class ConditionalGetMixin:
    """For DRF views: add ``ETag`` (and ``Last-Modified`` when ``self.last_modified`` is a
    datetime) and ``Cache-Control: no-cache`` to successful GET/HEAD responses and answer 304
    Not Modified to a matching ``If-None-Match`` (see the module docstring)."""

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
        if self.last_modified is not None:
            response["Last-Modified"] = http_date(int(self.last_modified.timestamp()))
        # Caches revalidate (with the ETag) instead of guessing a freshness from Last-Modified.
        patch_cache_control(response, no_cache=True)
        # Only the ETag decides a 304: Last-Modified does not move when something is removed
        # (a rejected assignment, a deleted paper), so If-Modified-Since alone gets a 200.
        return get_conditional_response(request, etag=etag, response=response)
