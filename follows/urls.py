from django.urls import path

from . import views

app_name = "follows"

urlpatterns = [
    path("", views.follow_list, name="list"),
    path("topics/<slug:slug>/", views.follow_toggle, name="toggle"),
    path("topics/<slug:slug>/confirm/", views.follow_confirm, name="confirm"),
    path("authors/<int:pk>/", views.follow_author_toggle, name="author-toggle"),
    path("searches/", views.search_create, name="search-create"),
    path("<int:pk>/frequency/", views.follow_frequency, name="frequency"),
    path("<int:pk>/delete/", views.follow_remove, name="delete"),
    path("export.json", views.follows_export_view, name="export"),
    path("import/", views.follows_import_view, name="import"),
]
