from django.apps import AppConfig


class FollowsConfig(AppConfig):
    name = "follows"
    verbose_name = "Follows"

    def ready(self):
        from . import receivers  # noqa: F401  (connects to topics.signals)
