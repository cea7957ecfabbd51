"""``/topics/<slug>/ask/``: the ask page (mounted before ``topics.urls``, so it serves that
address)."""

from django.urls import path

from . import views

app_name = "ask"

urlpatterns = [
    path("<slug:slug>/ask/", views.topic_ask, name="topic"),
]
