from django.urls import path
from django.views.decorators.http import require_safe

from .feeds import TopicAtomFeed

app_name = "topic-feed"

urlpatterns = [
    path("<slug:slug>/feed/", require_safe(TopicAtomFeed()), name="atom"),
]
