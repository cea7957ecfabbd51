from django.apps import AppConfig


class TopicsConfig(AppConfig):
    name = "topics"
    verbose_name = "Topics"

    def ready(self):
        from . import receivers  # noqa: F401  (connects to papers.signals)
