"""/api/v1/ routes of the access side: the user's follows, curators' assignments, and the
HTML page where a user manages API tokens (``api:tokens``)."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from . import views_access

router = SimpleRouter(use_regex_path=False)
router.register("me/follows", views_access.MyFollowViewSet, basename="me-follow")
router.register("assignments", views_access.AssignmentViewSet, basename="assignment")

urlpatterns = [
    path("tokens/", views_access.token_list, name="tokens"),
    path("tokens/<int:pk>/revoke/", views_access.token_revoke_view, name="token_revoke"),
    *router.urls,
]
