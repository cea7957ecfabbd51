"""API tokens (api.services): stored as their SHA-256 and a prefix only, a name required, a
limit per user."""

from __future__ import annotations

import pytest
from django.db import connection

from api.models import ApiToken
from api.services import TokenLimitReached, key_hash, token_create, token_revoke
from topics.tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_token_is_stored_as_its_sha256_and_prefix_only():
    user = UserFactory()

    created = token_create(user=user, name="  laptop  ")

    token = ApiToken.objects.get()
    assert token.name == "laptop"
    assert token.key_prefix == created.key[:8]
    assert token.key_hash == key_hash(created.key) != created.key
    assert len(created.key) >= 40
    # No column of any row holds the key.
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM api_apitoken")
        rows = cursor.fetchall()
    assert rows and not any(created.key in str(value) for row in rows for value in row)


def test_token_create_refuses_a_blank_name_and_too_many_tokens(settings):
    user = UserFactory()
    with pytest.raises(ValueError, match="needs a name"):
        token_create(user=user, name="   ")
    settings.API_TOKENS_PER_USER = 2
    token_create(user=user, name="one")
    second = token_create(user=user, name="two")

    with pytest.raises(TokenLimitReached, match="already have 2 active tokens"):
        token_create(user=user, name="three")
    assert ApiToken.objects.count() == 2

    # A revoked token no longer counts.
    token_revoke(token=second.token)
    token_create(user=user, name="three")
    assert ApiToken.objects.active().count() == 2
