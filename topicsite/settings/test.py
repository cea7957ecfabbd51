"""Tests: PostgreSQL and Redis on this machine unless DATABASE_URL / REDIS_URL say otherwise."""

import os

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/topicsite")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/15")

from .base import *  # noqa: E402, F403

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
