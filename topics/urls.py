from django.urls import path

from . import views

app_name = "topics"

urlpatterns = [
    path("", views.topic_index, name="index"),
    path("topics/<slug:slug>/", views.topic_detail, name="detail"),
    path("topics/<slug:slug>/ask/", views.topic_ask, name="ask"),
]
