"""The feed's writes and tokens: visits and what counts as seen, the private feed token."""

import datetime as dt

import pytest
from django.core import signing

from follows.feed_services import (
    PRIVATE_FEED_SALT,
    VISIT_GAP,
    feed_visit,
    private_feed_key_regenerate,
    private_feed_state,
    private_feed_token,
)
from follows.models import FeedState
from topics.tests.factories import UserFactory

pytestmark = pytest.mark.django_db

T0 = dt.datetime(2026, 10, 1, 9, 0, tzinfo=dt.UTC)


def test_visits_within_the_gap_are_one_visit_and_a_later_one_moves_seen_before():
    user = UserFactory()

    first = feed_visit(user=user, now=T0)
    assert (first.seen_before, first.last_visit_at) == (None, T0)

    # Paging through the feed 20 minutes later is the same visit: nothing becomes seen.
    same = feed_visit(user=user, now=T0 + dt.timedelta(minutes=20))
    assert (same.seen_before, same.last_visit_at) == (None, T0 + dt.timedelta(minutes=20))

    # Exactly the gap after the last request is still the same visit.
    edge = T0 + dt.timedelta(minutes=20) + VISIT_GAP
    assert feed_visit(user=user, now=edge).seen_before is None

    # A visit starting more than 30 minutes later: what the previous visit showed is seen.
    later = edge + VISIT_GAP + dt.timedelta(seconds=1)
    second = feed_visit(user=user, now=later)
    assert (second.seen_before, second.last_visit_at) == (edge, later)
    assert FeedState.objects.get(user=user).seen_before == edge
    assert FeedState.objects.count() == 1


def test_feed_state_is_per_user():
    user, other = UserFactory(), UserFactory()
    feed_visit(user=user, now=T0)
    feed_visit(user=user, now=T0 + dt.timedelta(hours=2))

    other_state = feed_visit(user=other, now=T0 + dt.timedelta(hours=3))

    assert other_state.seen_before is None
    assert FeedState.objects.get(user=user).seen_before == T0


def test_token_is_stable_until_regenerated():
    state = feed_visit(user=UserFactory(), now=T0)

    assert private_feed_token(state=state) == private_feed_token(
        state=FeedState.objects.get(pk=state.pk)
    )


def test_token_opens_its_users_feed_until_regenerated():
    user, other = UserFactory(), UserFactory()
    state = feed_visit(user=user, now=T0)
    other_state = feed_visit(user=other, now=T0)
    token = private_feed_token(state=state)

    assert private_feed_state(token=token).user == user
    assert private_feed_state(token=private_feed_token(state=other_state)).user == other
    # The stored key is random per user.
    assert state.private_feed_key != other_state.private_feed_key

    regenerated = private_feed_key_regenerate(user=user)

    assert regenerated.private_feed_key != state.private_feed_key
    assert private_feed_state(token=token) is None
    assert private_feed_state(token=private_feed_token(state=regenerated)).user == user
    # The other user's feed is untouched.
    assert private_feed_state(token=private_feed_token(state=other_state)).user == other


SIGNER = signing.Signer(salt=PRIVATE_FEED_SALT)


def _swap_payload(state):
    """Another user's id in the payload, kept with this token's signature."""
    forged = SIGNER.sign_object([state.user_id + 1, state.private_feed_key])
    signature = private_feed_token(state=state).rsplit(":", 1)[1]
    return f"{forged.rsplit(':', 1)[0]}:{signature}"


@pytest.mark.parametrize(
    "make_token",
    [
        pytest.param(lambda s: private_feed_token(state=s)[:-1] + "x", id="tampered-signature"),
        pytest.param(_swap_payload, id="payload-swapped"),
        pytest.param(
            lambda s: signing.Signer(salt="another.salt").sign_object(
                [s.user_id, s.private_feed_key]
            ),
            id="other-salt",
        ),
        pytest.param(lambda s: SIGNER.sign_object({"user": s.user_id}), id="wrong-shape"),
        pytest.param(lambda s: SIGNER.sign_object(["1", s.private_feed_key]), id="wrong-types"),
        pytest.param(
            lambda s: signing.dumps([s.user_id, s.private_feed_key], salt=PRIVATE_FEED_SALT),
            id="timestamped-signed-not-an-object",
        ),
        pytest.param(lambda s: SIGNER.sign("not base64 json"), id="signed-not-an-object"),
        pytest.param(lambda s: "not-a-token", id="garbage"),
        pytest.param(lambda s: "", id="empty"),
    ],
)
def test_bad_tokens_open_nothing(make_token):
    state = feed_visit(user=UserFactory(), now=T0)

    assert private_feed_state(token=make_token(state)) is None


def test_token_of_an_inactive_user_opens_nothing():
    user = UserFactory()
    token = private_feed_token(state=feed_visit(user=user, now=T0))
    user.is_active = False
    user.save()

    assert private_feed_state(token=token) is None
