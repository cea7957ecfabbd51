"""Log-in attempts are rate limited by allauth, counted in the real Redis cache."""

import pytest
import redis
from allauth.core.internal.ratelimit import parse_rates
from django.conf import settings
from django.core.cache import cache, caches
from django.test import Client
from django_redis.cache import RedisCache

from accounts.tests.factories import PASSWORD, UserFactory
from accounts.tests.mail import signed_in_user_id

pytestmark = pytest.mark.django_db

TOO_MANY = "Too many failed login attempts. Try again later."
WRONG = "The email address and/or password you specified are not correct."


@pytest.fixture
def redis_keys():
    """The rate-limit keys allauth writes to Redis, deleted after the test."""
    client = redis.Redis.from_url(settings.REDIS_URL)
    pattern = f"{settings.CACHES['default']['KEY_PREFIX']}:*allauth:rl:*"
    yield lambda: sorted(key.decode() for key in client.scan_iter(pattern))
    for key in client.scan_iter(pattern):
        client.delete(key)


def failures_allowed_per_address() -> int:
    """N of the configured ``login_failed`` limit per email address ("N/5m/key")."""
    rates = parse_rates(settings.ACCOUNT_RATE_LIMITS["login_failed"])
    return next(rate.amount for rate in rates if rate.per == "key")


def log_in(client, email, password):
    response = client.post("/accounts/login/", {"login": email, "password": password})
    return response.status_code, response.content.decode()


def test_after_n_failures_the_next_attempt_is_refused_even_with_the_right_password(redis_keys):
    assert isinstance(caches["default"], RedisCache)
    UserFactory(email="ada@example.org")
    n = failures_allowed_per_address()
    assert n == 5
    client = Client()

    for _ in range(n):
        status, page = log_in(client, "ada@example.org", "guess")
        assert status == 200 and WRONG in page and TOO_MANY not in page

    status, page = log_in(client, "ada@example.org", "guess")
    assert status == 200 and TOO_MANY in page
    status, page = log_in(client, "ada@example.org", PASSWORD)
    assert status == 200 and TOO_MANY in page
    assert signed_in_user_id(client) is None
    assert any(":login_failed:" in key for key in redis_keys())

    # The limit is per address tried: another reader on the same network still gets in.
    UserFactory(email="bob@example.org")
    other = Client()
    log_in(other, "bob@example.org", PASSWORD)
    assert signed_in_user_id(other) is not None


def test_a_successful_log_in_does_not_use_up_the_failure_allowance(redis_keys):
    UserFactory(email="ada@example.org")
    n = failures_allowed_per_address()

    for _ in range(n + 2):
        client = Client()
        log_in(client, "ada@example.org", PASSWORD)
        assert signed_in_user_id(client) is not None

    status, page = log_in(Client(), "ada@example.org", "guess")
    assert WRONG in page and TOO_MANY not in page


def test_the_count_lives_in_redis_so_clearing_it_lets_the_reader_in_again(redis_keys):
    UserFactory(email="ada@example.org")
    client = Client()
    for _ in range(failures_allowed_per_address() + 1):
        log_in(client, "ada@example.org", "guess")
    assert TOO_MANY in log_in(client, "ada@example.org", PASSWORD)[1]

    cache.clear()

    log_in(client, "ada@example.org", PASSWORD)
    assert signed_in_user_id(client) is not None


def test_wrong_passwords_on_the_delete_form_count_towards_the_same_limit(redis_keys):
    user = UserFactory(email="ada@example.org")
    client = Client()
    client.force_login(user)

    for _ in range(failures_allowed_per_address()):
        response = client.post("/accounts/delete/", {"password": "guess"})
        assert "Incorrect password." in response.content.decode()

    response = client.post("/accounts/delete/", {"password": PASSWORD})

    assert response.status_code == 200
    assert TOO_MANY in response.content.decode()
    assert user.__class__.objects.filter(pk=user.pk).exists()
    # And the log-in form refuses that address too.
    assert TOO_MANY in log_in(Client(), "ada@example.org", PASSWORD)[1]
