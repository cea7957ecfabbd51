from django.apps import AppConfig


class DigestsConfig(AppConfig):
    """Email digests of new papers for each user's follows, with delivery records."""

    name = "digests"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from . import checks  # noqa: F401 (registers the system checks)
