from django.urls import path

from . import views

app_name = "papers"

urlpatterns = [
    # Before the pages: ``<path:arxiv_id>`` would take "…/cite.bib" otherwise.
    path("local/<int:pk>/cite.bib", views.paper_cite, {"kind": "bib"}, name="cite-bib-local"),
    path("local/<int:pk>/cite.ris", views.paper_cite, {"kind": "ris"}, name="cite-ris-local"),
    path("<path:arxiv_id>/cite.bib", views.paper_cite, {"kind": "bib"}, name="cite-bib"),
    path("<path:arxiv_id>/cite.ris", views.paper_cite, {"kind": "ris"}, name="cite-ris"),
    path("local/<int:pk>/", views.paper_detail_local, name="detail-local"),
    path("<path:arxiv_id>/", views.paper_detail, name="detail"),
]
