"""A method an assignment endpoint does not offer is a 405 naming the method, for a curator
too (not "Only curators may…"); without credentials still a 401."""

import pytest

from .conftest import assert_error, token_client

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("method", ["patch", "put", "delete"])
def test_a_curator_changing_an_assignment_gets_405_naming_the_method(access_world, method):
    client = token_client(access_world["keys"]["curator"])
    url = f"/api/v1/assignments/{access_world['assignment'].pk}/"
    response = getattr(client, method)(url, {"state": "accepted"}, format="json")
    error = assert_error(response, 405, code="method_not_allowed")
    assert method.upper() in error["message"]
    assert "curators" not in error["message"]


def test_get_of_a_decision_endpoint_is_405_for_a_curator(access_world):
    client = token_client(access_world["keys"]["curator"])
    url = f"/api/v1/assignments/{access_world['assignment'].pk}/accept/"
    assert_error(client.get(url), 405, code="method_not_allowed")


def test_without_credentials_an_unoffered_method_is_still_401(access_world):
    url = f"/api/v1/assignments/{access_world['assignment'].pk}/"
    assert_error(token_client().patch(url, {}, format="json"), 401)


def test_a_reader_still_cannot_read_assignments(access_world):
    client = token_client(access_world["keys"]["other"])
    assert_error(client.get("/api/v1/assignments/"), 403, code="permission_denied")
