"""Author pages (``/authors/``): included by ``topicsite.urls``."""

from django.urls import path

from . import author_views

app_name = "authors"

urlpatterns = [
    path("<int:pk>-<slug:slug>/", author_views.author_detail, name="detail"),
    path("<int:pk>/", author_views.author_detail, name="detail-id"),
]
