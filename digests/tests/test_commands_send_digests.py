"""``manage.py send_digests`` with Redis really stopped (the cache at a port nothing listens
on): it says Redis is unreachable and fails, instead of "another sweep is running"."""

from io import StringIO

import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command

from digests.tasks import SWEEP_LOCK_KEY, SweepLockUnavailable, digests_send_due
from topicsite.tests.smtp import free_port

pytestmark = pytest.mark.django_db


@pytest.fixture
def redis_stopped(settings):
    settings.CACHES = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{free_port()}/0",
            "OPTIONS": {
                "IGNORE_EXCEPTIONS": True,
                "SOCKET_CONNECT_TIMEOUT": 1,
                "SOCKET_TIMEOUT": 1,
            },
        }
    }


def test_send_digests_with_redis_stopped_says_so_and_fails(redis_stopped):
    out = StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("send_digests", stdout=out)
    assert "Redis, REDIS_URL) is unreachable" in str(raised.value)
    assert "another" not in (str(raised.value) + out.getvalue()).lower()


def test_the_sweep_with_redis_stopped_raises(redis_stopped):
    with pytest.raises(SweepLockUnavailable):
        digests_send_due.apply().get()


def test_a_held_lock_is_still_another_sweep_running():
    cache.set(SWEEP_LOCK_KEY, "someone-else", 60)
    try:
        out = StringIO()
        call_command("send_digests", stdout=out)
        assert "Another digest sweep is running" in out.getvalue()
    finally:
        cache.delete(SWEEP_LOCK_KEY)
