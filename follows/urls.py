from django.urls import path

app_name = "follows"

urlpatterns: list = []
