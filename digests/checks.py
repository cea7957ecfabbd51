"""System checks for the digest settings that the typed environment helpers cannot bound."""

from django.conf import settings
from django.core.checks import Error, register


@register()
def send_hour_check(app_configs, **kwargs):
    """``DIGESTS_SEND_HOUR`` must be an hour of the day (0-23)."""
    hour = settings.DIGESTS_SEND_HOUR
    if not 0 <= hour <= 23:
        return [
            Error(
                f"DIGESTS_SEND_HOUR={hour!r} is not an hour of the day; use 0 to 23.",
                id="digests.E001",
            )
        ]
    return []
