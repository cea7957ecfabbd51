"""The papers' part of ``/sitemap.xml`` (django.contrib.sitemaps)."""

from django.contrib.sitemaps import Sitemap

from .models import Paper


class PaperSitemap(Sitemap):
    """Every paper page of papers that count (neither withdrawn nor deleted), oldest id first,
    ``limit`` addresses a sitemap page (``/sitemap-papers.xml?p=N``); ``lastmod`` is when the
    stored record last changed."""

    limit = 10_000
    changefreq = "monthly"

    def items(self):
        return Paper.objects.live().only("id", "arxiv_id", "updated_at").order_by("id")

    def lastmod(self, paper):
        return paper.updated_at
