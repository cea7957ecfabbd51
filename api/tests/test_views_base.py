"""What the views share (api.views.base): answers about a user are private to caches."""

from __future__ import annotations

import pytest

from api.services import token_create
from api.tests.conftest import curator_user, token_client

pytestmark = pytest.mark.django_db

FOLLOWS_URL = "/api/v1/me/follows/"
ASSIGNMENTS_URL = "/api/v1/assignments/"


@pytest.mark.parametrize("url", [FOLLOWS_URL, ASSIGNMENTS_URL])
def test_answers_about_a_user_are_private_to_caches(url):
    key = token_create(user=curator_user(), name="c").key

    response = token_client(key).get(url)

    assert response.status_code == 200
    assert {"private", "no-store"} <= {
        part.strip() for part in response["Cache-Control"].split(",")
    }
    assert "Authorization" in response["Vary"]
