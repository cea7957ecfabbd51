from allauth.account.decorators import secure_admin_login
from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

# Staff log in on allauth's page (/admin/login/ redirects there with ?next=), as allauth
# documents: its rate limits (ACCOUNT_RATE_LIMITS, per account and per address) then cover the
# admin too, whose own form had none. Signed in but not staff: 403.
admin.site.login = secure_admin_login(admin.site.login)

urlpatterns = [
    path("admin/", admin.site.urls),
    # Our account pages (settings, deletion) first, then django-allauth's.
    path("accounts/", include("accounts.urls")),
    path("accounts/", include("allauth.urls")),
    path("api/v1/", include("api.urls")),
    # The address people guess for the API: its documentation.
    path("api/", RedirectView.as_view(pattern_name="api:docs"), name="api-home"),
    path("papers/", include("papers.urls")),
    path("follows/", include("follows.urls")),
    path("feed/", include("follows.feed_urls")),
    path("library/", include("follows.library_urls")),
    path("for-you/", include("follows.for_you_urls")),
    path("digests/", include("digests.urls")),
    # Per-topic routes owned by other apps (the topic's Atom feed, asking it) come before the
    # topic pages themselves.
    path("topics/", include("follows.topic_urls")),
    path("topics/", include("ask.urls")),
    path("", include("topics.urls")),
]

# A server error under /api/ answers in the API's JSON error shape; elsewhere Django's 500 page.
handler500 = "api.errors.server_error"
