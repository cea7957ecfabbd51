"""A request body over Django's upload limit (``DATA_UPLOAD_MAX_MEMORY_SIZE``, 2.5 MB by
default) is a 413 in the API's error shape on every endpoint that reads a body, the anonymous
Ask included, and is not logged as a server error."""

import logging

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from .conftest import assert_error, token_client

pytestmark = pytest.mark.django_db


def too_big() -> bytes:
    """A JSON object one kilobyte past the upload limit."""
    return b'{"question": "' + b"a" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1024) + b'"}'


def no_server_error_logged(caplog) -> None:
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, [r.getMessage() for r in errors]


def test_an_anonymous_ask_with_a_huge_body_is_a_413(access_world, caplog):
    url = f"/api/v1/topics/{access_world['topic'].slug}/ask/"
    response = APIClient().post(url, too_big(), content_type="application/json")
    error = assert_error(response, 413, code="payload_too_large")
    assert f"{settings.DATA_UPLOAD_MAX_MEMORY_SIZE:,} bytes" in error["message"]
    no_server_error_logged(caplog)


@pytest.mark.parametrize(
    ("role", "method", "url"),
    [
        ("owner", "post", "/api/v1/me/follows/"),
        ("owner", "post", "/api/v1/topics/agents/ask/"),
        ("curator", "post", "/api/v1/assignments/"),
    ],
)
def test_a_signed_in_huge_body_is_a_413(access_world, caplog, role, method, url):
    client = token_client(access_world["keys"][role])
    response = getattr(client, method)(url, too_big(), content_type="application/json")
    assert_error(response, 413, code="payload_too_large")
    no_server_error_logged(caplog)


def test_a_session_signed_in_huge_body_is_a_413(access_world, caplog):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(access_world["owner"])
    response = client.post("/api/v1/me/follows/", too_big(), content_type="application/json")
    # Refused before or after the CSRF check, but as a client error in the API's shape.
    assert response.status_code in (403, 413)
    assert_error(response, response.status_code)
    no_server_error_logged(caplog)


def test_a_body_just_under_the_limit_is_read(access_world):
    client = token_client(access_world["keys"]["owner"])
    body = b'{"topic": "' + b"a" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE - 100) + b'"}'
    response = client.post("/api/v1/me/follows/", body, content_type="application/json")
    assert_error(response, 400)
