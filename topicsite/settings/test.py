"""Tests: PostgreSQL and Redis on this machine unless DATABASE_URL / REDIS_URL say otherwise."""

import os
from urllib.parse import urlsplit, urlunsplit

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/topicsite")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/15")


def _worker_redis_url(url: str, worker: str) -> str:
    """``url`` moved to this pytest-xdist worker's own Redis database: ``gw0`` keeps the
    database ``url`` names, ``gwN`` takes N below it (modulo Redis' 16), so two workers never
    share a cache, a lock or a Celery queue. ``url`` unchanged outside xdist."""
    if not worker.startswith("gw") or not worker[2:].isdigit():
        return url
    parts = urlsplit(url)
    base = parts.path.strip("/")
    database = (int(base) if base.isdigit() else 0) - int(worker[2:])
    return urlunsplit(parts._replace(path=f"/{database % 16}"))


# pytest-xdist (``-n 2`` in pyproject.toml): each worker gets its own Redis database, set in
# the environment too so the workers and servers a test starts use it; pytest-django gives
# each its own test database (test_<name>_gw0, ...). A child process inherits both variables:
# the URL is moved once, not again in the child (the marker variable holds the moved URL).
# (The controller process, which starts the workers, moves nothing and marks nothing.)
_XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if _XDIST_WORKER and os.environ["REDIS_URL"] != os.environ.get("TOPICSITE_XDIST_REDIS_URL"):
    os.environ["REDIS_URL"] = _worker_redis_url(os.environ["REDIS_URL"], _XDIST_WORKER)
    os.environ["TOPICSITE_XDIST_REDIS_URL"] = os.environ["REDIS_URL"]

from .base import *  # noqa: E402, F403
from .base import VAR_DIR  # noqa: E402

SECRET_KEY = "test-secret-key"
DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
# Unit tests run tasks in-process; the pipeline tests start a real worker and switch this off.
CELERY_TASK_ALWAYS_EAGER = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Tests talk to local servers, not arXiv: no need to wait 3 s between API requests.
ARXIV_REQUEST_INTERVAL_MS = 5
# The whole-page cache for anonymous readers is off: a test changes data inside its own
# transaction, where no on_commit invalidation runs, and then expects the page to show it.
# topicsite/tests/test_pagecache.py and the browser tests (real commits) turn it on.
PAGE_CACHE_SECONDS = 0
READER_PAGE_CACHE_SECONDS = 0
# The vector index files of tests that do not choose a folder of their own: never the
# development index under var/vectors, and one folder per xdist worker.
EMBEDDING_INDEX_DIR = VAR_DIR / "test-vectors" / (_XDIST_WORKER or "main")
# The shared test Redis waits longer than a deployment's REDIS_SOCKET_TIMEOUT_MS: two test
# processes, their PostgreSQL and the servers they start share two cores, and one slow answer
# would open the breaker (topicsite/cache.py) and turn Redis off for the tests after it (rate
# limits and throttles fail open, pages miss, locks fail closed). The Redis fault tests use
# the deployed values (REDIS_CACHE_DEPLOYED_OPTIONS).
REDIS_CACHE_DEPLOYED_OPTIONS = dict(CACHES["default"].get("OPTIONS", {}))  # noqa: F405
if "SOCKET_TIMEOUT" in REDIS_CACHE_DEPLOYED_OPTIONS:
    CACHES["default"]["OPTIONS"] = {  # noqa: F405
        **REDIS_CACHE_DEPLOYED_OPTIONS,
        "SOCKET_CONNECT_TIMEOUT": 5,
        "SOCKET_TIMEOUT": 5,
    }
