from django.urls import path

from . import views

app_name = "follows"

urlpatterns = [
    path("topics/<slug:slug>/", views.follow_toggle, name="toggle"),
]
