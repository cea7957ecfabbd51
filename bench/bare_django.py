"""The "bare Django" ceiling of the bench scripts: the project's own URLs plus one route that
answers a prebuilt body of a given size, so that it goes through exactly the middleware stack
every page goes through (sessions, authentication, CSRF, CSP, security headers, the page
cache's middleware) and nothing else: no query, no template.

    ROOT_URLCONF = "bare_django"        (``bench/`` on ``sys.path``, as the bench scripts set)
    GET /__bench__/bare/<bytes>/?kind=html|json  ->  200, <bytes> bytes of the given kind

A page's "x bare Django" ratio is its server time over this route's for a body of the page's
own size, measured in the same run by the same client (signed in or not, as the page).
"""

from __future__ import annotations

from django.http import HttpResponse
from django.urls import path

from topicsite import urls as site_urls

# One megabyte of HTML-ish text, sliced to the size asked for (bodies above it repeat it).
_CHUNK = (b"<p>" + b"bare django page " * 60 + b"</p>\n") * 1024
MAX_BYTES = 20 * 1024 * 1024


def bare_page(request, size: int):
    """``size`` bytes (at most :data:`MAX_BYTES`) of HTML, or of JSON with ``?kind=json``."""
    size = min(size, MAX_BYTES)
    body = (_CHUNK * (size // len(_CHUNK) + 1))[:size]
    if request.GET.get("kind") == "json":
        return HttpResponse(b'"' + body[: max(0, size - 2)] + b'"', content_type="application/json")
    return HttpResponse(body, content_type="text/html; charset=utf-8")


urlpatterns = [
    path("__bench__/bare/<int:size>/", bare_page, name="bench-bare"),
    *site_urls.urlpatterns,
]
handler500 = site_urls.handler500
