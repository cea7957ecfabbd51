"""Project-wide pytest fixtures. Tests run against PostgreSQL and Redis (topicsite.settings.test)."""

import pytest
from django.core.cache import cache


@pytest.fixture(autouse=True)
def _clear_cache():
    """Each test starts with an empty cache (the Redis test database is shared by the suite)."""
    cache.clear()
    yield
    cache.clear()
