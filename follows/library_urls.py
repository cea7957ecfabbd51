from django.urls import path

from . import library_views as views

app_name = "library"

urlpatterns = [
    path("", views.library_index, name="index"),
    path("papers/<int:paper_id>/save/", views.library_save, name="save"),
    path("papers/<int:paper_id>/read/", views.library_read, name="read"),
    path("papers/<int:paper_id>/note/", views.library_note, name="note"),
    path("export.bib", views.library_export, {"kind": "bib"}, name="export-bib"),
    path("export.ris", views.library_export, {"kind": "ris"}, name="export-ris"),
    path("export.csv", views.library_export, {"kind": "csv"}, name="export-csv"),
]
