"""``categories/`` and ``categories/{code}/``: arXiv's categories by code, one by its code, a
404 for an unknown code."""

import pytest

from .conftest import assert_error

pytestmark = pytest.mark.django_db


def test_categories_list_and_detail(api_client, world):
    body = api_client.get("/api/v1/categories/").json()
    assert [c["code"] for c in body["results"]] == ["cs.AI", "cs.CL", "cs.LG", "hep-th"]
    detail = api_client.get("/api/v1/categories/hep-th/").json()
    assert detail["name"] == "High Energy Physics - Theory"
    assert_error(api_client.get("/api/v1/categories/xx.YY/"), 404)
