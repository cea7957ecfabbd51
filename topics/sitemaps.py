"""``/sitemap.xml``: a sitemap index over the topic pages and the paper pages
(django.contrib.sitemaps), and ``/robots.txt`` pointing at it."""

from django.contrib.sitemaps import Sitemap
from django.http import HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_safe

from papers.sitemaps import PaperSitemap

from .models import Topic


class TopicSitemap(Sitemap):
    """Every active topic's page, in tree order (``Topic.path``); ``lastmod`` is when the
    topic itself last changed."""

    changefreq = "daily"

    def items(self):
        return Topic.objects.active().only("id", "slug", "updated_at").order_by("path")

    def lastmod(self, topic):
        return topic.updated_at


SITEMAPS = {"topics": TopicSitemap, "papers": PaperSitemap}

# Paths crawlers should leave alone: the admin, sign-in and account pages, follows and the
# personal feed, and the API beyond its documentation (tokens and writes).
ROBOTS_DISALLOW = ("/admin/", "/accounts/", "/follows/", "/feed/", "/digests/", "/api/v1/")
ROBOTS_ALLOW = ("/api/v1/docs/",)


@require_safe
def robots_txt(request):
    """``/robots.txt`` (text/plain): every page allowed but :data:`ROBOTS_DISALLOW` (the API's
    documentation excepted), and the absolute address of the sitemap index."""
    lines = ["User-agent: *"]
    lines += [f"Allow: {path}" for path in ROBOTS_ALLOW]
    lines += [f"Disallow: {path}" for path in ROBOTS_DISALLOW]
    lines += ["", f"Sitemap: {request.build_absolute_uri(reverse('topics:sitemap'))}", ""]
    return HttpResponse("\n".join(lines), content_type="text/plain; charset=utf-8")
