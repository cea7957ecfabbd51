"""/api/v1/ (named ``api:<name>``): the schema and docs, then every resource (papers, topics,
categories, search, the user's follows, curators' assignments, the API tokens page, asking a
topic), and a JSON 404 for any other address."""

from csp.constants import UNSAFE_INLINE
from csp.decorators import csp_update
from django.urls import path, re_path
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerSplitView,
)
from rest_framework.routers import SimpleRouter

from .errors import not_found
from .views import (
    ask,
    assignments,
    authors,
    autocomplete,
    categories,
    follows,
    me,
    papers,
    search,
    tokens,
    topics,
    trends,
)

app_name = "api"

router = SimpleRouter(use_regex_path=False)
router.register("me/follows", follows.MyFollowViewSet, basename="me-follow")
router.register("me/library", me.MyLibraryViewSet, basename="me-library")
router.register("assignments", assignments.AssignmentViewSet, basename="assignment")

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
    path("papers/", papers.PaperListView.as_view(), name="paper-list"),
    path("papers.jsonl", papers.PaperBulkExportView.as_view(), name="paper-export-jsonl"),
    # Before the paper routes: a DOI holds slashes, and "doi/…" is no arXiv identifier.
    path("papers/doi/<path:doi>/", papers.PaperByDoiView.as_view(), name="paper-by-doi"),
    # Old-style identifiers hold a slash (hep-th/9901001): <path:>, the export route first.
    path("papers/<path:paper_id>/bibtex/", papers.PaperBibtexView.as_view(), name="paper-bibtex"),
    path(
        "papers/<path:paper_id>/authors/", papers.PaperAuthorsView.as_view(), name="paper-authors"
    ),
    path(
        "papers/<path:paper_id>/similar/", papers.PaperSimilarView.as_view(), name="paper-similar"
    ),
    path("papers/<path:paper_id>/", papers.PaperDetailView.as_view(), name="paper-detail"),
    path("topics/", topics.TopicListView.as_view(), name="topic-list"),
    path("topics/<slug:slug>/", topics.TopicDetailView.as_view(), name="topic-detail"),
    path("topics/<slug:slug>/papers/", topics.TopicPapersView.as_view(), name="topic-papers"),
    path("topics/<slug:slug>/trend/", topics.TopicTrendView.as_view(), name="topic-trend"),
    path(
        "topics/<slug:slug>/papers.bib",
        topics.TopicBibtexExportView.as_view(),
        name="topic-export-bibtex",
    ),
    path(
        "topics/<slug:slug>/papers.csv",
        topics.TopicCsvExportView.as_view(),
        name="topic-export-csv",
    ),
    path(
        "topics/<slug:slug>/papers.jsonl",
        topics.TopicJsonlExportView.as_view(),
        name="topic-export-jsonl",
    ),
    path("categories/", categories.CategoryListView.as_view(), name="category-list"),
    path("categories/<str:code>/", categories.CategoryDetailView.as_view(), name="category-detail"),
    path("search/", search.SearchView.as_view(), name="search"),
    path("authors/", authors.AuthorListView.as_view(), name="author-list"),
    path("autocomplete/", autocomplete.AutocompleteView.as_view(), name="autocomplete"),
    path("me/for-you/", me.MyForYouView.as_view(), name="me-for-you"),
    path("authors/<int:id>/", authors.AuthorDetailView.as_view(), name="author-detail"),
    path("authors/<int:id>/papers/", authors.AuthorPapersView.as_view(), name="author-papers"),
    path(
        "authors/<int:id>/coauthors/",
        authors.AuthorCoauthorsView.as_view(),
        name="author-coauthors",
    ),
    path("authors/<int:id>/topics/", authors.AuthorTopicsView.as_view(), name="author-topics"),
    path("trends/", trends.TrendsView.as_view(), name="trends"),
    path("tokens/", tokens.token_list, name="tokens"),
    path("tokens/<int:pk>/revoke/", tokens.token_revoke_view, name="token_revoke"),
    *router.urls,
    path("topics/<slug:slug>/ask/", ask.TopicAskView.as_view(), name="topic-ask"),
    # Last: any other address under /api/v1/ is a JSON 404 in the API's error shape.
    re_path(r"^(?P<unmatched>.*)$", not_found, name="not-found"),
]
