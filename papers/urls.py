from django.urls import path

from . import views

app_name = "papers"

urlpatterns = [
    path("local/<int:pk>/", views.paper_detail_local, name="detail-local"),
    path("<path:arxiv_id>/", views.paper_detail, name="detail"),
]
