"""Hostile input to the read and write API that used to be a 500: every one of these is a
4xx in the API's error JSON now."""

from __future__ import annotations

import base64
import json

import pytest

from api.services import token_create
from topics.tests.factories import UserFactory

from .conftest import assert_error, ids


def _cursor(querystring: str) -> str:
    return base64.b64encode(querystring.encode()).decode()


@pytest.mark.parametrize("url", ["/api/v1/papers/", "/api/v1/topics/", "/api/v1/categories/"])
@pytest.mark.parametrize("page_size", ["²", "١٠"])
def test_page_size_in_non_ascii_digits_is_a_400(api_client, world, url, page_size):
    # "²".isdigit() is true but int("²") raises; Arabic-Indic digits int() would accept.
    response = api_client.get(url, {"page_size": page_size})

    assert_error(response, 400, code="invalid_parameter", param="page_size")


@pytest.mark.parametrize(
    "ordering, position",
    [
        ("", "garbage"),
        ("", "2024-13-45"),
        ("", "2024-02-30"),
        ("", "\x00"),
        ("-updated", "xx"),
        ("id", "abc"),
        ("id", "²"),
        ("id", "99999999999999999999999"),
    ],
)
def test_a_cursor_with_a_forged_position_is_a_400_like_any_invalid_cursor(
    api_client, world, ordering, position
):
    params = {"cursor": _cursor(f"p={position}")}
    if ordering:
        params["ordering"] = ordering

    response = api_client.get("/api/v1/papers/", params)

    assert_error(response, 400, code="invalid_parameter", param="cursor")
    assert "Not a cursor this API handed out" in response.json()["error"]["details"]["cursor"][0]


def test_the_cursors_the_api_hands_out_still_work(api_client, world):
    for ordering in ("", "updated", "-id"):
        first = api_client.get("/api/v1/papers/", {"page_size": 2, "ordering": ordering})
        second = api_client.get(first.json()["next"])
        back = api_client.get(second.json()["previous"])

        assert len(ids(first)) == 2 and len(ids(second)) == 2
        assert ids(back) == ids(first)


def test_a_category_code_holding_nul_is_a_404(api_client, world):
    assert_error(api_client.get("/api/v1/categories/cs%00CL/"), 404, code="not_found")


def test_local_id_in_non_ascii_digits_is_a_404(api_client, world):
    assert_error(api_client.get("/api/v1/papers/local:²/"), 404, code="not_found")


@pytest.mark.parametrize("as_of, weeks", [("0001-01-01", 2), ("0001-01-08", 260)])
def test_trend_weeks_before_year_one_is_a_400_naming_as_of(api_client, world, as_of, weeks):
    response = api_client.get("/api/v1/topics/llm/trend/", {"as_of": as_of, "weeks": weeks})

    assert_error(response, 400, code="invalid_parameter", param="as_of")


def test_trend_as_early_as_it_can_go_still_answers(api_client, world):
    response = api_client.get("/api/v1/topics/llm/trend/", {"as_of": "0001-01-14", "weeks": 2})

    assert response.status_code == 200, response.content
    assert [w["week_start"] for w in response.json()["weeks"]] == ["0001-01-01", "0001-01-08"]


@pytest.mark.parametrize("url", ["/api/v1/me/follows/", "/api/v1/topics/llm/ask/"])
def test_json_nested_too_deeply_is_a_400_not_a_500(api_client, world, url):
    user = UserFactory()
    api_client.credentials(HTTP_AUTHORIZATION=f"Bearer {token_create(user=user, name='t').key}")
    body = "[" * 100_000 + "]" * 100_000

    response = api_client.generic("POST", url, body, content_type="application/json")

    error = assert_error(response, 400, code="malformed_request")
    assert "nested too deeply" in error["message"]


def test_json_nested_a_little_still_parses(api_client, world):
    user = UserFactory()
    api_client.credentials(HTTP_AUTHORIZATION=f"Bearer {token_create(user=user, name='t').key}")
    body = json.dumps({"topic": "llm", "extra": [[[[{"a": [1]}]]]]})

    response = api_client.generic("POST", "/api/v1/me/follows/", body, "application/json")

    assert response.status_code == 201, response.content
