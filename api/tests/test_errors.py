"""Every error has one JSON shape: validation, 404 (also for unknown URLs), 405, 406, 429
(Retry-After kept) and 500."""

import pytest
from django.test import RequestFactory
from rest_framework.exceptions import Throttled

from api.errors import exception_handler, server_error
from topics.tests.factories import UserFactory

from .conftest import assert_error

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "url", ["/api/v1/nothing-here/", "/api/v1/nothing/x/y", "/api/v1/topics/a/b/c/"]
)
def test_unknown_urls_under_the_api_are_json_404s(api_client, world, url):
    error = assert_error(api_client.get(url), 404, code="not_found")
    assert "/api/v1/docs/" in error["message"]


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_a_write_to_an_unknown_url_is_a_json_404_not_a_csrf_page(world, method):
    """A signed-in browser session (CSRF enforced) writing to a mistyped path: the JSON 404,
    not Django's HTML CSRF failure page."""
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(UserFactory())
    response = getattr(client, method)("/api/v1/follows/", {}, content_type="application/json")
    assert response["Content-Type"].startswith("application/json")
    assert_error(response, 404, code="not_found")


def test_a_known_endpoint_without_its_slash_redirects_to_it(api_client, world):
    response = api_client.get("/api/v1/papers?page_size=1")
    assert response.status_code == 301
    assert response["Location"] == "/api/v1/papers/?page_size=1"


def test_a_method_not_allowed_is_a_json_405(api_client, world):
    # Signed in: an anonymous write is refused (401) before the method is looked at.
    api_client.force_authenticate(UserFactory())
    error = assert_error(api_client.post("/api/v1/papers/", {}), 405, code="method_not_allowed")
    assert "POST" in error["message"]


def test_an_unacceptable_accept_header_is_a_json_406(api_client, world):
    response = api_client.get("/api/v1/papers/", HTTP_ACCEPT="text/x-nothing")
    assert_error(response, 406, code="not_acceptable")


def test_missing_search_words_are_a_400_naming_q(api_client, world):
    assert_error(api_client.get("/api/v1/search/"), 400, code="invalid_parameter", param="q")


def test_throttled_keeps_retry_after_and_the_shape():
    request = RequestFactory().get("/api/v1/papers/")
    response = exception_handler(Throttled(wait=42), {"request": request})
    assert response.status_code == 429
    assert response["Retry-After"] == "42"
    assert response.data["error"]["code"] == "throttled"
    assert response.data["error"]["details"] == {"retry_after_seconds": ["42"]}


def test_an_unexpected_exception_is_a_logged_json_500(caplog):
    request = RequestFactory().get("/api/v1/papers/")
    with caplog.at_level("ERROR", logger="django.request"):
        response = exception_handler(RuntimeError("boom"), {"request": request})
    assert response.status_code == 500
    assert response.data["error"]["code"] == "server_error"
    assert "boom" not in str(response.data)
    assert any(r.exc_info and "boom" in str(r.exc_info[1]) for r in caplog.records)


def test_handler500_answers_json_under_the_api_and_html_elsewhere():
    api = server_error(RequestFactory().get("/api/v1/papers/"))
    assert api.status_code == 500
    assert api["Content-Type"] == "application/json"
    site = server_error(RequestFactory().get("/topics/x/"))
    assert site.status_code == 500
    assert site["Content-Type"].startswith("text/html")
