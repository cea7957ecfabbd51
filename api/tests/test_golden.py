"""Golden JSON for the main responses, from the fixed ``world`` fixture (fixed ids, dates,
names). Regenerate after an intended change with ``UPDATE_GOLDEN=1`` (see conftest.py)."""

import pytest

from .conftest import assert_golden

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("name", "url"),
    [
        ("paper_detail", "/api/v1/papers/2609.00001/"),
        ("paper_list_page", "/api/v1/papers/?page_size=2"),
        ("topic_list", "/api/v1/topics/"),
        ("topic_detail", "/api/v1/topics/llm-agent-training/"),
        ("topic_papers_page", "/api/v1/topics/llm/papers/?page_size=2&ordering=submitted"),
        ("topic_trend", "/api/v1/topics/llm/trend/?as_of=2026-10-01&weeks=10"),
        ("categories", "/api/v1/categories/"),
        ("search", "/api/v1/search/?q=agents"),
        ("error_bad_date", "/api/v1/papers/?submitted_after=2026-02-30"),
    ],
)
def test_response_matches_its_golden_file(api_client, world, name, url):
    response = api_client.get(url)
    assert response["Content-Type"] == "application/json"
    assert_golden(name, {"status": response.status_code, "body": response.json()})
