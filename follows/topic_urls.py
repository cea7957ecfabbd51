from django.urls import path

from .feeds import TopicAtomFeed

app_name = "topic-feed"

urlpatterns = [
    path("<slug:slug>/feed/", TopicAtomFeed(), name="atom"),
]
