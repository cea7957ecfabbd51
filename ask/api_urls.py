"""``/api/v1/topics/<slug>/ask/`` (included by ``api.urls``, inside its ``api`` namespace):
``api:topic-ask``."""

from django.urls import path

from .api.views import TopicAskView

urlpatterns = [
    path("", TopicAskView.as_view(), name="topic-ask"),
]
