from django.apps import AppConfig


class AskConfig(AppConfig):
    """ "Ask about this topic": extractive (or generated) answers citing the topic's papers."""

    name = "ask"
    default_auto_field = "django.db.models.BigAutoField"
