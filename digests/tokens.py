"""Signed one-click unsubscribe tokens for digest emails (``django.core.signing`` with a
timestamp and the salt ``digests.unsubscribe``), so the links work without logging in.

A token names the user and either one follow or all of the user's follows. It carries no
secret beyond ``SECRET_KEY``'s signature and expires after ``DIGESTS_UNSUBSCRIBE_MAX_AGE_DAYS``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing

from follows.models import Follow

SALT = "digests.unsubscribe"


class UnsubscribeTokenError(Exception):
    """A token that cannot be used. ``reason`` is one of ``"invalid"`` (malformed or tampered),
    ``"expired"`` (older than the allowed age) or ``"gone"`` (its user or follow no longer
    exists); the message says it in words a reader understands."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class UnsubscribeTarget:
    """What a valid token unsubscribes: ``follow`` of ``user``, or every follow when None."""

    user: object
    follow: Follow | None


def unsubscribe_token_make(*, user, follow: Follow | None = None) -> str:
    """A URL-safe token that turns digests off for ``follow`` (one of ``user``'s follows) or,
    when ``follow`` is None, for every follow of ``user``."""
    payload = {"user": user.pk, "follow": follow.pk if follow is not None else None}
    return signing.dumps(payload, salt=SALT)


def unsubscribe_token_read(*, token: str) -> UnsubscribeTarget:
    """The user and follow that ``token`` names, loaded from the database.

    Raises UnsubscribeTokenError (reason ``invalid``, ``expired`` or ``gone``).
    """
    max_age = dt.timedelta(days=settings.DIGESTS_UNSUBSCRIBE_MAX_AGE_DAYS)
    try:
        payload = signing.loads(token, salt=SALT, max_age=max_age)
    except signing.SignatureExpired:
        raise UnsubscribeTokenError(
            "expired",
            "This unsubscribe link has expired. Log in and change your follows' digest "
            "frequency instead.",
        ) from None
    except signing.BadSignature:
        raise UnsubscribeTokenError(
            "invalid", "This unsubscribe link is not valid: it may have been cut or changed."
        ) from None
    user_id, follow_id = _fields(payload)
    user = get_user_model().objects.filter(pk=user_id).first()
    if user is None:
        raise UnsubscribeTokenError("gone", "The account this link was sent to no longer exists.")
    if follow_id is None:
        return UnsubscribeTarget(user=user, follow=None)
    follow = Follow.objects.filter(pk=follow_id, user=user).select_related("topic").first()
    if follow is None:
        raise UnsubscribeTokenError(
            "gone", "You no longer follow what this link was for, so there is nothing to stop."
        )
    return UnsubscribeTarget(user=user, follow=follow)


def _fields(payload) -> tuple[int, int | None]:
    # A signed payload can only come from us, but an older format must not become a 500.
    if not isinstance(payload, dict):
        raise UnsubscribeTokenError("invalid", "This unsubscribe link is not valid.")
    user_id, follow_id = payload.get("user"), payload.get("follow")
    if not isinstance(user_id, int) or not (follow_id is None or isinstance(follow_id, int)):
        raise UnsubscribeTokenError("invalid", "This unsubscribe link is not valid.")
    return user_id, follow_id
