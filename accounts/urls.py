"""Our pages under ``/accounts/``, mounted before django-allauth's (which has no app name)."""

from django.urls import path

from . import views

app_name = "accounts"

urlpatterns = [
    path("", views.account_overview, name="overview"),
    path("delete/", views.account_delete, name="delete"),
]
