from django.apps import AppConfig


class ApiConfig(AppConfig):
    """The public JSON API under /api/v1/ (DRF, django-filter, drf-spectacular)."""

    name = "api"
    label = "api"
    default_auto_field = "django.db.models.BigAutoField"
