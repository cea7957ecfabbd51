"""/api/v1/: the read resources, the access-controlled ones and asking a topic."""

from django.urls import include, path

app_name = "api"

urlpatterns = [
    path("", include("api.urls_read")),
    path("", include("api.urls_access")),
    path("topics/<slug:slug>/ask/", include("ask.api_urls")),
]
