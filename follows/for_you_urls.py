from django.urls import path

from . import for_you_views as views

app_name = "for_you"

urlpatterns = [
    path("", views.for_you_index, name="index"),
    path("papers/<int:paper_id>/not-interested/", views.for_you_dismiss, name="dismiss"),
]
