from django.apps import AppConfig


class PapersConfig(AppConfig):
    name = "papers"
    verbose_name = "Papers"

    def ready(self):
        from . import (
            categories,  # noqa: F401  (its copy forgets edited categories)
            receivers,  # noqa: F401  (embedding, near-duplicates)
        )
