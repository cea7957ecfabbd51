"""Token authentication for the API: ``Authorization: Bearer <key>`` (or ``Token <key>``)."""

from __future__ import annotations

import datetime as dt
import hmac

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header

from .models import ApiToken
from .services import key_hash

KEYWORDS = (b"bearer", b"token")
# last_used_at is written at most this often per token: one UPDATE a minute, not per request.
LAST_USED_RESOLUTION = dt.timedelta(minutes=1)


class ApiTokenAuthentication(BaseAuthentication):
    """Authenticate with an :class:`~api.models.ApiToken` key sent as ``Authorization: Bearer
    <key>`` (DRF's ``Token <key>`` form too; the keyword is case-insensitive).

    No ``Authorization`` header, or another scheme: not this authenticator's business (``None``).
    A malformed header, an unknown key, a revoked token or an inactive user: 401
    (``AuthenticationFailed``, with ``WWW-Authenticate: Bearer``). The key is found by its first
    8 characters, then the SHA-256 digests are compared in constant time.
    """

    keyword = "Bearer"

    def authenticate(self, request):
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() not in KEYWORDS:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed(
                "Invalid Authorization header: send 'Bearer <key>' with the key and no spaces."
            )
        try:
            key = parts[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("Invalid token: not an API key.") from None
        return self.authenticate_key(key)

    def authenticate_key(self, key: str):
        """``(user, token)`` for ``key``; raises ``AuthenticationFailed`` (401) otherwise."""
        digest = key_hash(key)
        candidates = ApiToken.objects.select_related("user").filter(
            key_prefix=key[: ApiToken.PREFIX_LENGTH]
        )
        token = next(
            (c for c in candidates if hmac.compare_digest(c.key_hash, digest)),
            None,
        )
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if token.revoked_at is not None:
            raise exceptions.AuthenticationFailed("This token has been revoked.")
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("The token's user account is inactive.")
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
            token.last_used_at = now
        return token.user, token

    def authenticate_header(self, request):
        # Present, so DRF answers 401 (not 403) when credentials are missing or wrong.
        return f'{self.keyword} realm="api"'


class ApiTokenAuthenticationScheme(OpenApiAuthenticationExtension):
    """The OpenAPI security scheme of :class:`ApiTokenAuthentication` (HTTP bearer)."""

    target_class = "api.authentication.ApiTokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": (
                "An API token, created on the API tokens page of your account "
                "(/api/v1/tokens/): send `Authorization: Bearer <key>`. "
                "`Token <key>` is accepted too."
            ),
        }
