from django.urls import path
from django.views.decorators.http import require_safe

from . import feed_views
from .feeds import PrivateAtomFeed

app_name = "feed"

urlpatterns = [
    path("", feed_views.feed_index, name="index"),
    path("atom/regenerate/", feed_views.private_feed_regenerate, name="regenerate"),
    path("atom/<str:token>/", require_safe(PrivateAtomFeed()), name="atom"),
]
