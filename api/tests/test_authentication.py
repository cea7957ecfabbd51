"""Authentication (api.authentication): Bearer and Token schemes, bad headers, revoked tokens
and inactive users, 401 before 403, CSRF for session writes; reads stay open to anyone but
refuse bad credentials."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from api.models import ApiToken
from api.services import key_hash, token_create, token_revoke
from api.tests.conftest import assert_error, expect, token_client
from follows.models import Follow
from follows.services import follow_create
from papers.tests.factories import CategoryFactory
from topics.tests.factories import TopicFactory, UserFactory

pytestmark = pytest.mark.django_db

READ_URL = "/api/v1/categories/"
FOLLOWS_URL = "/api/v1/me/follows/"


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "Token"])
def test_bearer_and_token_schemes_authenticate_and_mark_the_token_used(scheme):
    user = UserFactory()
    created = token_create(user=user, name="script")
    follow_create(user=user, topic=TopicFactory())

    response = token_client(created.key, scheme=scheme).get(FOLLOWS_URL)

    assert response.status_code == 200
    assert response.json()["count"] == 1
    created.token.refresh_from_db()
    assert created.token.last_used_at is not None


def test_the_key_is_found_among_tokens_sharing_its_prefix():
    user, other = UserFactory(), UserFactory()
    created = token_create(user=user, name="mine")
    # Another token with the same first 8 characters (different key): the digest decides.
    ApiToken.objects.create(
        user=other, name="twin", key_prefix=created.key[:8], key_hash=key_hash("x" * 43)
    )
    follow_create(user=user, topic=TopicFactory(slug="mine"))

    response = token_client(created.key).get(FOLLOWS_URL)

    assert response.status_code == 200
    assert [f["topic"] for f in response.json()["results"]] == ["mine"]


@pytest.mark.parametrize(
    "header",
    [
        "Bearer not-a-key-at-all",
        "Bearer",
        "Bearer two parts",
        "Token ",
    ],
)
def test_bad_authorization_headers_get_401_with_the_error_json(header):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)

    response = client.get(FOLLOWS_URL)

    assert_error(response, 401, code="authentication_failed")
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_revoked_token_and_inactive_user_get_401():
    user = UserFactory()
    revoked = token_create(user=user, name="old")
    token_revoke(token=revoked.token)
    first_revocation = ApiToken.objects.get(pk=revoked.token.pk).revoked_at
    token_revoke(token=revoked.token)  # idempotent, keeps the first time
    assert ApiToken.objects.get(pk=revoked.token.pk).revoked_at == first_revocation

    response = token_client(revoked.key).get(FOLLOWS_URL)
    assert_error(response, 401, code="authentication_failed")
    assert "revoked" in response.json()["error"]["message"]

    live = token_create(user=user, name="new")
    user.is_active = False
    user.save()
    assert_error(token_client(live.key).get(FOLLOWS_URL), 401, code="authentication_failed")


def test_anonymous_on_a_signed_in_resource_gets_401_not_403():
    response = APIClient().get(FOLLOWS_URL)

    assert_error(response, 401, code="not_authenticated")
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_session_writes_need_the_csrf_token():
    user, topic = UserFactory(), TopicFactory()
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(user)

    assert client.get(FOLLOWS_URL).status_code == 200
    response = client.post(FOLLOWS_URL, {"topic": topic.slug}, format="json")

    assert_error(response, 403, code="permission_denied")
    assert "CSRF" in response.json()["error"]["message"]
    assert not Follow.objects.exists()


@pytest.mark.parametrize(
    ("role", "status"),
    expect(None, anonymous=200, owner=200, other=200, curator=200).items(),
)
def test_read_endpoint_is_open_but_bad_credentials_are_refused(access_world, role, status):
    CategoryFactory(code="cs.CL")

    response = token_client(access_world["keys"][role]).get(READ_URL)

    assert response.status_code == status, response.content
