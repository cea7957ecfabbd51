"""/api/v1/: the read resources, the access-controlled ones and asking a topic."""

from django.urls import include, path, re_path

from .errors import not_found

app_name = "api"

urlpatterns = [
    path("", include("api.urls_read")),
    path("", include("api.urls_access")),
    path("topics/<slug:slug>/ask/", include("ask.api_urls")),
    # Last: any other address under /api/v1/ is a JSON 404 in the API's error shape.
    re_path(r"^(?P<unmatched>.*)$", not_found, name="not-found"),
]
