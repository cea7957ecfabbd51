"""Site-wide middleware of our own."""

from django.middleware.http import ConditionalGetMiddleware
from django.utils.cache import get_conditional_response, set_response_etag


class ETagConditionalGetMiddleware(ConditionalGetMiddleware):
    """Django's ``ConditionalGetMiddleware`` with the 304 decided by the ETag alone.

    Django's also answers 304 to ``If-Modified-Since`` against a ``Last-Modified`` header, and
    ours never covers everything a page or feed shows: an Atom feed's is its newest entry's
    date, so a paper tagged later with an older submitted date, or a paper taken out of a
    topic, would stay hidden from a feed reader polling with ``If-Modified-Since``. The body's
    ETag changes with any of it. Only successful GETs get an ETag (errors carry none).
    """

    def process_response(self, request, response):
        if request.method != "GET" or not 200 <= response.status_code < 300:
            return response
        if self.needs_etag(response) and not response.has_header("ETag"):
            set_response_etag(response)
        etag = response.get("ETag")
        if not etag:
            return response
        return get_conditional_response(request, etag=etag, response=response)
