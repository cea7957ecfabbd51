"""Routes of the read resources under /api/v1/ (named ``api:<name>``), the schema and docs."""

from csp.constants import UNSAFE_INLINE
from csp.decorators import csp_update
from django.urls import path
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerSplitView,
)

from . import views

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    # The site's Content-Security-Policy allows no inline script: Swagger UI's set-up script is
    # served as a file (the split view). Both pages carry an inline <style>, and Redoc injects
    # its styles and starts its search worker from a blob: URL.
    path(
        "docs/",
        csp_update({"style-src": [UNSAFE_INLINE]})(
            SpectacularSwaggerSplitView.as_view(url_name="api:schema")
        ),
        name="docs",
    ),
    path(
        "docs/redoc/",
        csp_update({"style-src": [UNSAFE_INLINE], "worker-src": ["'self'", "blob:"]})(
            SpectacularRedocView.as_view(url_name="api:schema")
        ),
        name="redoc",
    ),
    path("papers/", views.PaperListView.as_view(), name="paper-list"),
    # Old-style identifiers hold a slash (hep-th/9901001): <path:>, the export route first.
    path("papers/<path:paper_id>/bibtex/", views.PaperBibtexView.as_view(), name="paper-bibtex"),
    path("papers/<path:paper_id>/", views.PaperDetailView.as_view(), name="paper-detail"),
    path("topics/", views.TopicListView.as_view(), name="topic-list"),
    path("topics/<slug:slug>/", views.TopicDetailView.as_view(), name="topic-detail"),
    path("topics/<slug:slug>/papers/", views.TopicPapersView.as_view(), name="topic-papers"),
    path("topics/<slug:slug>/trend/", views.TopicTrendView.as_view(), name="topic-trend"),
    path(
        "topics/<slug:slug>/papers.bib",
        views.TopicBibtexExportView.as_view(),
        name="topic-export-bibtex",
    ),
    path(
        "topics/<slug:slug>/papers.csv",
        views.TopicCsvExportView.as_view(),
        name="topic-export-csv",
    ),
    path(
        "topics/<slug:slug>/papers.jsonl",
        views.TopicJsonlExportView.as_view(),
        name="topic-export-jsonl",
    ),
    path("categories/", views.CategoryListView.as_view(), name="category-list"),
    path("categories/<str:code>/", views.CategoryDetailView.as_view(), name="category-detail"),
    path("search/", views.SearchView.as_view(), name="search"),
]
