"""Writes and tokens for the personal feed: visits (what counts as seen) and the private Atom
feed's secret URL.

The private feed token is ``django.core.signing`` over ``[user id, FeedState.private_feed_key]``
with the salt ``PRIVATE_FEED_SALT``: nothing secret is stored in plain form beyond the random
key, a forged or altered token fails the signature, and regenerating the key invalidates every
token made before.
"""

import datetime as dt
import zlib

from django.conf import settings
from django.core import signing
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from .models import FeedState, new_private_feed_key

PRIVATE_FEED_SALT = "follows.private-feed"
# A visit starting later than this after the previous one makes that visit's papers "seen".
VISIT_GAP = dt.timedelta(minutes=30)


def _feed_state_locked(*, user) -> FeedState:
    """``user``'s :class:`FeedState`, created if missing, locked for the current transaction."""
    return FeedState.objects.select_for_update().get_or_create(user=user)[0]


@transaction.atomic
def feed_visit(*, user, now: dt.datetime | None = None) -> FeedState:
    """Record that ``user`` opened their feed at ``now`` (aware datetime; default: the current
    time) and return their :class:`FeedState`.

    A visit that starts more than ``VISIT_GAP`` after ``last_visit_at`` moves ``seen_before``
    to that previous visit's time; requests within ``VISIT_GAP`` of each other belong to the
    same visit and leave ``seen_before`` alone. ``last_visit_at`` becomes ``now`` either way.
    The row is locked so two concurrent requests cannot both start a visit.
    """
    now = now or timezone.now()
    state = _feed_state_locked(user=user)
    if state.last_visit_at is not None and now - state.last_visit_at > VISIT_GAP:
        state.seen_before = state.last_visit_at
    state.last_visit_at = now
    state.save(update_fields=["seen_before", "last_visit_at", "updated_at"])
    return state


@transaction.atomic
def private_feed_key_regenerate(*, user) -> FeedState:
    """Give ``user``'s private Atom feed a new random key and return the :class:`FeedState`;
    every token made from the old key stops working."""
    state = _feed_state_locked(user=user)
    state.private_feed_key = new_private_feed_key()
    state.save(update_fields=["private_feed_key", "updated_at"])
    return state


def private_feed_url(*, user, state: FeedState | None = None) -> str:
    """The absolute address of ``user``'s private Atom feed (``SITE_URL`` + the feed path with
    its signed token). Their :class:`FeedState` is ``state`` when the caller has it, else read
    (created if missing). Records no visit."""
    if state is None:
        state = FeedState.objects.get_or_create(user=user)[0]
    path = reverse("feed:atom", kwargs={"token": private_feed_token(state=state)})
    return f"{settings.SITE_URL}{path}"


def _signer() -> signing.Signer:
    # Not timestamped: a user's feed URL stays the same until they regenerate it.
    return signing.Signer(salt=PRIVATE_FEED_SALT)


def private_feed_token(*, state: FeedState) -> str:
    """The signed token for ``state``'s user and current key (URL-safe characters and ``:``);
    the same token every time until the key is regenerated."""
    return _signer().sign_object([state.user_id, state.private_feed_key])


def private_feed_state(*, token: str) -> FeedState | None:
    """The :class:`FeedState` (its ``user`` loaded) whose private feed ``token`` opens, or
    ``None`` when the token is malformed, tampered with, signed with another salt, made from a
    key since regenerated or belongs to an inactive user. One query for a well-signed token,
    none otherwise."""
    try:
        payload = _signer().unsign_object(token)
    except (signing.BadSignature, ValueError, zlib.error):
        # ValueError and zlib.error: a correctly signed value that is not an encoded object.
        return None
    if not (
        isinstance(payload, list)
        and len(payload) == 2
        and isinstance(payload[0], int)
        and isinstance(payload[1], str)
    ):
        return None
    user_id, key = payload
    return (
        FeedState.objects.filter(user_id=user_id, private_feed_key=key, user__is_active=True)
        .select_related("user")
        .first()
    )
