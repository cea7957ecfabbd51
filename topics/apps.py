from django.apps import AppConfig


class TopicsConfig(AppConfig):
    name = "topics"
    verbose_name = "Topics"

    def ready(self):
        from . import holes, receivers  # noqa: F401  (fillers; connects to papers.signals)
