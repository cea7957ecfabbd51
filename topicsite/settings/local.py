"""Development and the embedded demo: DEBUG on unless told otherwise, a fixed dev secret key."""

from .base import *  # noqa: F403
from .env import env_bool

DEBUG = env_bool("DJANGO_DEBUG", True)
SECRET_KEY = SECRET_KEY or "django-insecure-local-development-key-not-for-production"  # noqa: F405

# Tasks run eagerly here, so Celery's per-task success lines would flood the demo's output.
LOGGING["loggers"]["celery.app.trace"] = {"level": "WARNING"}  # noqa: F405
