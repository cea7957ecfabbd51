"""Writes for API tokens: a user creates and revokes them (the token page, the admin)."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from .models import ApiToken

# 32 random bytes: 43 URL-safe base64 characters.
KEY_BYTES = 32


class TokenLimitReached(ValueError):
    """The user already has ``API_TOKENS_PER_USER`` active tokens."""


@dataclass(frozen=True)
class CreatedToken:
    """A token just created and its full ``key``: the only time the key exists outside the
    user's hands (it is never stored)."""

    token: ApiToken
    key: str


def key_hash(key: str) -> str:
    """The SHA-256 hex digest (64 lowercase hex characters) stored for ``key``."""
    return hashlib.sha256(key.encode()).hexdigest()


@transaction.atomic
def token_create(*, user, name: str) -> CreatedToken:
    """Create an API token named ``name`` for ``user``; return it with its key.

    Raises ``ValueError`` for a blank name or one longer than 100 characters, and
    :class:`TokenLimitReached` when ``user`` already has ``settings.API_TOKENS_PER_USER`` active
    tokens (the user row is locked, so concurrent requests cannot pass the limit together).
    """
    name = name.strip()
    if not name:
        raise ValueError("A token needs a name, to tell it apart from your other tokens.")
    max_length = ApiToken._meta.get_field("name").max_length
    if len(name) > max_length:
        raise ValueError(f"A token name has at most {max_length} characters.")
    get_user_model().objects.select_for_update().filter(pk=user.pk).first()
    limit = settings.API_TOKENS_PER_USER
    if ApiToken.objects.active().filter(user=user).count() >= limit:
        raise TokenLimitReached(
            f"You already have {limit} active tokens; revoke one before creating another."
        )
    key = secrets.token_urlsafe(KEY_BYTES)
    token = ApiToken.objects.create(
        user=user, name=name, key_prefix=key[: ApiToken.PREFIX_LENGTH], key_hash=key_hash(key)
    )
    return CreatedToken(token=token, key=key)


@transaction.atomic
def token_revoke(*, token: ApiToken) -> ApiToken:
    """Revoke ``token`` now: it stops authenticating at once. Revoking a revoked token keeps
    the first revocation time. Returns the token, refreshed."""
    ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now(), updated_at=timezone.now()
    )
    token.refresh_from_db(fields=["revoked_at", "updated_at"])
    return token
