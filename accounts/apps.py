from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """Readers' accounts: django-allauth's sign-up, log-in and email pages, plus account
    settings and deletion."""

    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"
