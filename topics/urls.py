from django.urls import path
from django.views.generic import RedirectView

from . import views

app_name = "topics"

urlpatterns = [
    # The site's front page is the topics index, at one address.
    path("", RedirectView.as_view(pattern_name="topics:index", query_string=True), name="home"),
    path("topics/", views.topic_index, name="index"),
    # Before the topic pages' own routes (follows and ask add "topics/<slug>/…" ones).
    path("topics/assignments/<int:pk>/report/", views.assignment_report_view, name="report"),
    path("topics/<slug:slug>/", views.topic_detail, name="detail"),
    path("search/", views.search, name="search"),
]
