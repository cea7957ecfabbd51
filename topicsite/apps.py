from django.apps import AppConfig


class TopicsiteConfig(AppConfig):
    """The shared kernel: abstract models, the page cache, publishing tasks, Jinja2."""

    name = "topicsite"
    verbose_name = "Site"

    def ready(self):
        from .lookups import register
        from .pagecache import connect_invalidation

        register()
        connect_invalidation()
