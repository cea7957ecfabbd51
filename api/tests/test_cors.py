"""CORS under /api/v1/: any origin reads; writes with a token, never with cookies; no CORS
headers outside the API."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from api.services import token_create
from api.tests.conftest import token_client
from follows.models import Follow
from papers.tests.factories import CategoryFactory
from topics.tests.factories import TopicFactory, UserFactory

pytestmark = pytest.mark.django_db

READ_URL = "/api/v1/categories/"
FOLLOWS_URL = "/api/v1/me/follows/"
ORIGIN = "https://dashboard.example"


@pytest.fixture(autouse=True)
def _a_category(db):
    CategoryFactory(code="cs.CL")


def test_preflight_for_a_read_allows_any_origin_without_credentials():
    response = APIClient().options(
        READ_URL, HTTP_ORIGIN=ORIGIN, HTTP_ACCESS_CONTROL_REQUEST_METHOD="GET"
    )

    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == "*"
    methods = {m.strip() for m in response["Access-Control-Allow-Methods"].split(",")}
    assert {"GET", "HEAD", "OPTIONS"} <= methods
    assert "PUT" not in methods and "PATCH" not in methods
    assert "Access-Control-Allow-Credentials" not in response


def test_preflight_for_a_token_write_allows_the_authorization_header():
    response = APIClient().options(
        FOLLOWS_URL,
        HTTP_ORIGIN=ORIGIN,
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST",
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="authorization, content-type",
    )

    assert response.status_code == 200
    allowed = {h.strip() for h in response["Access-Control-Allow-Headers"].split(",")}
    assert {"authorization", "content-type"} <= allowed
    assert {"POST", "DELETE"} <= {
        m.strip() for m in response["Access-Control-Allow-Methods"].split(",")
    }
    assert "Access-Control-Allow-Credentials" not in response


def test_cross_origin_read_and_token_write_carry_the_cors_headers():
    read = APIClient().get(READ_URL, HTTP_ORIGIN=ORIGIN)

    assert read.status_code == 200
    assert read["Access-Control-Allow-Origin"] == "*"
    exposed = {h.strip() for h in read["Access-Control-Expose-Headers"].split(",")}
    assert {"ETag", "Last-Modified", "Retry-After"} <= exposed

    key = token_create(user=UserFactory(), name="browser app").key
    TopicFactory(slug="agents")
    write = token_client(key).post(
        FOLLOWS_URL, {"topic": "agents"}, format="json", HTTP_ORIGIN=ORIGIN
    )
    assert write.status_code == 201
    assert write["Access-Control-Allow-Origin"] == "*"
    assert "Access-Control-Allow-Credentials" not in write


def test_cookies_from_another_origin_do_not_write():
    """A page on another origin cannot use a signed-in visitor's session to write: the
    browser would not expose the answer (no credentials allowed), and the write itself is
    refused without the CSRF token."""
    user = UserFactory()
    TopicFactory(slug="agents")
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(user)

    response = client.post(FOLLOWS_URL, {"topic": "agents"}, format="json", HTTP_ORIGIN=ORIGIN)

    assert response.status_code == 403
    assert "Access-Control-Allow-Credentials" not in response
    assert not Follow.objects.exists()


def test_pages_outside_the_api_get_no_cors_headers(client):
    response = client.get("/topics/", HTTP_ORIGIN=ORIGIN)

    assert response.status_code == 200
    assert "Access-Control-Allow-Origin" not in response
