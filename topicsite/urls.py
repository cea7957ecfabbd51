from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView


class StaticRedirectView(RedirectView):
    """A redirect to a static file, its address resolved per request (hashed names in
    production)."""

    static_path = ""

    def get_redirect_url(self, *args, **kwargs):
        return static(self.static_path)


# admin.site is topicsite.admin_site.TopicsiteAdminSite: staff and the Curators group enter;
# they log in on allauth's page (/admin/login/ redirects there with ?next=).

urlpatterns = [
    path("admin/", admin.site.urls),
    # Our account pages (settings, deletion) first, then django-allauth's.
    path("accounts/", include("accounts.urls")),
    path("accounts/", include("allauth.urls")),
    path("api/v1/", include("api.urls")),
    # The address people guess for the API: its documentation.
    path("api/", RedirectView.as_view(pattern_name="api:docs"), name="api-home"),
    path("papers/", include("papers.urls")),
    path("authors/", include("topics.author_urls")),
    path("follows/", include("follows.urls")),
    path("feed/", include("follows.feed_urls")),
    path("library/", include("follows.library_urls")),
    path("for-you/", include("follows.for_you_urls")),
    path("digests/", include("digests.urls")),
    # Per-topic routes owned by other apps (the topic's Atom feed, asking it) come before the
    # topic pages themselves.
    path("topics/", include("follows.topic_urls")),
    path("topics/", include("ask.urls")),
    # Browsers and crawlers ask for /favicon.ico whatever the page's <link rel="icon"> says.
    path("favicon.ico", StaticRedirectView.as_view(static_path="img/favicon.ico", permanent=True)),
    path("", include("topics.urls")),
]

# A server error under /api/ answers in the API's JSON error shape; elsewhere Django's 500 page.
handler500 = "api.errors.server_error"
