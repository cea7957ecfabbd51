from django.contrib.sitemaps import views as sitemap_views
from django.urls import path
from django.views.decorators.http import require_safe
from django.views.generic import RedirectView

from . import views
from .sitemaps import SITEMAPS, robots_txt

app_name = "topics"

urlpatterns = [
    # The site's front page is the topics index, at one address.
    path("", RedirectView.as_view(pattern_name="topics:index", query_string=True), name="home"),
    path("topics/", views.topic_index, name="index"),
    # Before the topic pages' own routes (follows and ask add "topics/<slug>/…" ones).
    path("topics/assignments/<int:pk>/report/", views.assignment_report_view, name="report"),
    path("topics/<slug:slug>/", views.topic_detail, name="detail"),
    path("search/", views.search, name="search"),
    # For crawlers: a sitemap index (topics, papers in pages of 10,000) and robots.txt.
    path(
        "sitemap.xml",
        require_safe(sitemap_views.index),
        {"sitemaps": SITEMAPS, "sitemap_url_name": "topics:sitemap-section"},
        name="sitemap",
    ),
    path(
        "sitemap-<section>.xml",
        require_safe(sitemap_views.sitemap),
        {"sitemaps": SITEMAPS},
        name="sitemap-section",
    ),
    path("robots.txt", robots_txt, name="robots"),
]
