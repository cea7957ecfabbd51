from django.urls import path
from django.views.generic import RedirectView

from . import views

app_name = "topics"

urlpatterns = [
    # The site's front page is the topics index, at one address.
    path("", RedirectView.as_view(pattern_name="topics:index", query_string=True), name="home"),
    path("topics/", views.topic_index, name="index"),
    path("topics/<slug:slug>/", views.topic_detail, name="detail"),
    path("search/", views.search, name="search"),
]
