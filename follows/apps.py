from django.apps import AppConfig


class FollowsConfig(AppConfig):
    name = "follows"
    verbose_name = "Follows"

    def ready(self):
        from . import holes, receivers  # noqa: F401  (fillers; connects to topics.signals)
