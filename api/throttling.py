"""Rate limits for the API, kept in the default cache (Redis wherever more than one process
serves the API).

Three rates from ``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]`` (settings ``API_THROTTLE_*``):
``anon`` for reads without credentials, per client address; ``user`` for reads with a token
(or a session), per user; ``write`` for every other method, per user. Over the limit DRF answers
429 with ``Retry-After`` (seconds).
"""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured
from rest_framework.permissions import SAFE_METHODS
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle


class ApiRateThrottle(SimpleRateThrottle):
    """One throttle, three scopes: ``anon`` / ``user`` reads and ``write``s (see the module).

    The scope is chosen per request, and its rate read from the live API settings (not bound at
    import as DRF's own throttles do), so ``override_settings(REST_FRAMEWORK=...)`` applies.
    """

    def __init__(self):
        # The rate depends on the request: set in allow_request().
        self.rate = None

    @staticmethod
    def scope_for(request) -> str:
        if request.method not in SAFE_METHODS:
            return "write"
        return "user" if request.user and request.user.is_authenticated else "anon"

    def get_rate(self) -> str | None:
        try:
            return api_settings.DEFAULT_THROTTLE_RATES[self.scope]
        except KeyError:
            raise ImproperlyConfigured(
                f"REST_FRAMEWORK['DEFAULT_THROTTLE_RATES'] has no rate for {self.scope!r}."
            ) from None

    def allow_request(self, request, view):
        self.scope = self.scope_for(request)
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        return super().allow_request(request, view)

    def get_cache_key(self, request, view):
        if request.user and request.user.is_authenticated:
            ident = f"user-{request.user.pk}"
        else:
            # REMOTE_ADDR, or the address the trusted proxies report (NUM_PROXIES).
            ident = f"addr-{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}
