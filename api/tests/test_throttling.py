"""Rate limits (api.throttling): anonymous reads per address, token reads per user, writes
apart; 429 with Retry-After, counted in Redis; a malformed rate stops the start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.cache import cache
from django.test import override_settings

from api.services import token_create
from api.tests.conftest import token_client
from follows.models import Follow
from papers.tests.factories import CategoryFactory
from topics.tests.factories import TopicFactory, UserFactory

pytestmark = pytest.mark.django_db

READ_URL = "/api/v1/categories/"
FOLLOWS_URL = "/api/v1/me/follows/"
ORIGIN = "https://dashboard.example"
BASE_DIR = Path(__file__).resolve().parents[2]


def small_rates(**overrides):
    """``override_settings`` with tiny rates (DRF reloads its settings on the change; our
    throttle reads them per request)."""
    rates = {"anon": "2/min", "user": "3/min", "write": "1/min"}
    return override_settings(
        REST_FRAMEWORK={
            **settings.REST_FRAMEWORK,
            "DEFAULT_THROTTLE_RATES": rates,
            **overrides,
        }
    )


def assert_throttled(response):
    assert response.status_code == 429, response.content
    wait = int(response["Retry-After"])
    assert 1 <= wait <= 60
    error = response.json()["error"]
    assert (error["status"], error["code"]) == (429, "throttled")
    assert error["details"] == {"retry_after_seconds": [str(wait)]}


@pytest.fixture(autouse=True)
def _a_category(db):
    CategoryFactory(code="cs.CL")


def test_anonymous_reads_are_limited_per_address_with_retry_after():
    with small_rates():
        client = token_client()
        assert [client.get(READ_URL).status_code for _ in range(2)] == [200, 200]
        response = client.get(READ_URL, HTTP_ORIGIN=ORIGIN)

        assert_throttled(response)
        # A browser client on another origin can read the wait.
        assert response["Access-Control-Allow-Origin"] == "*"
        assert "Retry-After" in response["Access-Control-Expose-Headers"]
        # Another address has its own budget; a forged X-Forwarded-For does not escape the
        # limit (no trusted proxy: REMOTE_ADDR counts).
        assert client.get(READ_URL, REMOTE_ADDR="192.0.2.7").status_code == 200
        assert client.get(READ_URL, HTTP_X_FORWARDED_FOR="198.51.100.1").status_code == 429


def test_the_count_is_kept_in_the_shared_redis_cache():
    assert settings.CACHES["default"]["BACKEND"].endswith("RedisCache")
    with small_rates():
        token_client().get(READ_URL)
        token_client().get(READ_URL)

    history = cache.get("throttle_anon_addr-127.0.0.1")
    assert isinstance(history, list) and len(history) == 2


def test_behind_a_trusted_proxy_the_forwarded_address_counts():
    with small_rates(NUM_PROXIES=1):
        client = token_client()
        for _ in range(2):
            assert client.get(READ_URL, HTTP_X_FORWARDED_FOR="198.51.100.1").status_code == 200
        assert client.get(READ_URL, HTTP_X_FORWARDED_FOR="198.51.100.1").status_code == 429
        assert client.get(READ_URL, HTTP_X_FORWARDED_FOR="198.51.100.2").status_code == 200


def test_a_token_gets_its_own_higher_read_limit_per_user():
    user, other = UserFactory(), UserFactory()
    key = token_create(user=user, name="t").key
    second_key_same_user = token_create(user=user, name="t2").key
    other_key = token_create(user=other, name="o").key
    with small_rates():
        # The address's anonymous budget is spent; the token reads on.
        for _ in range(2):
            token_client().get(READ_URL)
        assert token_client().get(READ_URL).status_code == 429
        assert [token_client(key).get(READ_URL).status_code for _ in range(3)] == [200] * 3

        # The limit is the user's, whichever of their tokens is sent.
        assert_throttled(token_client(second_key_same_user).get(READ_URL))
        assert token_client(other_key).get(READ_URL).status_code == 200


def test_writes_have_their_own_limit():
    user = UserFactory()
    key = token_create(user=user, name="t").key
    first, second = TopicFactory(slug="first"), TopicFactory(slug="second")
    with small_rates():
        client = token_client(key)
        for _ in range(3):
            assert client.get(FOLLOWS_URL).status_code == 200
        assert client.get(FOLLOWS_URL).status_code == 429

        # Reads spent, the write still goes through; then writes are spent too.
        assert client.post(FOLLOWS_URL, {"topic": "first"}, format="json").status_code == 201
        response = client.post(FOLLOWS_URL, {"topic": "second"}, format="json")

    assert_throttled(response)
    assert list(Follow.objects.values_list("topic", flat=True)) == [first.pk]
    assert not Follow.objects.filter(topic=second).exists()


def test_a_malformed_rate_in_the_environment_stops_the_start():
    env = {**os.environ, "API_THROTTLE_ANON": "lots/min"}
    env["DJANGO_SETTINGS_MODULE"] = "topicsite.settings.test"

    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )

    assert result.returncode != 0
    assert "API_THROTTLE_ANON='lots/min' is not a rate" in result.stderr
