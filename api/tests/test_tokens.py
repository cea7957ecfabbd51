"""The API tokens page (``tokens/``): login required, a key shown once, the limit, one's own
tokens only, revoking, a resent form; and the admin's token list and revoke action."""

from __future__ import annotations

import pytest
from django.contrib.sessions.models import Session
from django.utils import timezone

from api.models import ApiToken
from api.services import key_hash, token_create
from api.tests.conftest import assert_error, token_client
from topics.tests.factories import UserFactory

pytestmark = pytest.mark.django_db

FOLLOWS_URL = "/api/v1/me/follows/"
TOKENS_PAGE = "/api/v1/tokens/"


def test_token_page_needs_a_login(client):
    response = client.get(TOKENS_PAGE)

    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_token_page_creates_a_token_and_shows_the_key_once(client):
    user = UserFactory()
    client.force_login(user)

    response = client.post(TOKENS_PAGE, {"name": "dashboard <script>"})

    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    token = ApiToken.objects.get(user=user)
    page = response.content.decode()
    key = response.context["created"].key
    assert key_hash(key) == token.key_hash
    assert f'value="{key}"' in page
    assert "shown only this once" in page
    assert "dashboard &lt;script&gt;" in page and "<script>" not in page

    # Reloading the page does not show it again; neither the sessions nor the token row hold it.
    again = client.get(TOKENS_PAGE).content.decode()
    assert key not in again
    assert token.key_prefix in again
    assert not any(key in str(s.get_decoded()) for s in Session.objects.all())
    assert not any(key in str(v) for v in ApiToken.objects.values_list().get())
    # And the key works.
    assert token_client(key).get(FOLLOWS_URL).status_code == 200


def test_token_page_refuses_a_blank_name_and_the_limit(client, settings):
    user = UserFactory()
    client.force_login(user)

    response = client.post(TOKENS_PAGE, {"name": "   "})
    assert response.status_code == 200
    assert "This field is required." in response.content.decode()
    assert not ApiToken.objects.exists()

    settings.API_TOKENS_PER_USER = 1
    client.post(TOKENS_PAGE, {"name": "one"})
    response = client.post(TOKENS_PAGE, {"name": "two"})
    assert "revoke one before creating another" in response.content.decode()
    assert list(ApiToken.objects.values_list("name", flat=True)) == ["one"]


def test_token_page_lists_only_ones_own_tokens(client):
    user, other = UserFactory(), UserFactory()
    token_create(user=user, name="my laptop")
    token_create(user=other, name="their server")
    client.force_login(user)

    page = client.get(TOKENS_PAGE).content.decode()

    assert "my laptop" in page
    assert "their server" not in page


def test_revoke_own_token_then_it_stops_working(client):
    user = UserFactory()
    created = token_create(user=user, name="old script")
    client.force_login(user)

    response = client.post(f"{TOKENS_PAGE}{created.token.pk}/revoke/")

    assert response.status_code == 302
    assert response["Location"] == TOKENS_PAGE
    created.token.refresh_from_db()
    assert created.token.revoked_at is not None
    assert created.token.revoked_at <= timezone.now()
    assert "revoked" in client.get(TOKENS_PAGE).content.decode()
    assert_error(token_client(created.key).get(FOLLOWS_URL), 401, code="authentication_failed")


def test_another_users_token_cannot_be_revoked(client):
    owner, intruder = UserFactory(), UserFactory()
    created = token_create(user=owner, name="owner's")
    client.force_login(intruder)

    assert client.post(f"{TOKENS_PAGE}{created.token.pk}/revoke/").status_code == 404
    assert client.get(f"{TOKENS_PAGE}{created.token.pk}/revoke/").status_code == 405

    created.token.refresh_from_db()
    assert created.token.revoked_at is None
    assert token_client(created.key).get(FOLLOWS_URL).status_code == 200


def test_resending_the_token_form_creates_no_second_token(client):
    """A reload of the page that answered the POST sends the same form id again."""
    import re

    user = UserFactory()
    client.force_login(user)
    page = client.get(TOKENS_PAGE).content.decode()
    once = re.search(r'name="once" value="([0-9a-f-]+)"', page).group(1)

    first = client.post(TOKENS_PAGE, {"name": "script", "once": once})
    again = client.post(TOKENS_PAGE, {"name": "script", "once": once})

    assert ApiToken.objects.filter(user=user).count() == 1
    key = re.search(r'id="token-key"[^>]*value="([^"]+)"', first.content.decode()).group(1)
    assert "already sent" in again.content.decode() and key not in again.content.decode()
    # A fresh form (a new id) creates another.
    client.post(TOKENS_PAGE, {"name": "second", "once": "5f0c7e8a-1111-4b2c-9d3e-000000000001"})
    assert ApiToken.objects.filter(user=user).count() == 2


def test_admin_lists_tokens_without_keys_and_revokes_them(client):
    admin = UserFactory(is_staff=True, is_superuser=True)
    created = token_create(user=UserFactory(), name="leaked script")
    client.force_login(admin)

    changelist = client.get("/admin/api/apitoken/")
    assert changelist.status_code == 200
    assert "leaked script" in changelist.content.decode()
    assert client.get("/admin/api/apitoken/add/").status_code == 403

    response = client.post(
        "/admin/api/apitoken/",
        {"action": "revoke", "_selected_action": [created.token.pk]},
    )

    assert response.status_code == 302
    created.token.refresh_from_db()
    assert created.token.revoked_at is not None
    assert_error(token_client(created.key).get(FOLLOWS_URL), 401, code="authentication_failed")
