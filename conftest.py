"""Project-wide pytest fixtures (PostgreSQL and Redis, topicsite.settings.test)."""

import pytest


@pytest.fixture(autouse=True)
def _clear_cache(request):
    """Each test starts with an empty cache (the Redis test database is shared by the suite).

    Plain-Python tests (parsers) can run without Django: ``pytest -p no:django``.
    """
    if not request.config.pluginmanager.hasplugin("django"):
        yield
        return
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()
