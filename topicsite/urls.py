from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("papers/", include("papers.urls")),
    path("follows/", include("follows.urls")),
    path("", include("topics.urls")),
]
