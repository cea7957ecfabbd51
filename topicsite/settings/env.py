"""Typed reads of the environment that fail loudly, naming the variable, on a malformed value.

django-environ parses URLs; these helpers add the strictness it lacks (``env.bool`` would read
``DJANGO_DEBUG=yes please`` as False without a word).
"""

from __future__ import annotations

import environ
from django.core.exceptions import ImproperlyConfigured

env = environ.Env()

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_bool(name: str, default: bool) -> bool:
    """Read ``name`` as a boolean (1/0, true/false, yes/no, on/off; case-insensitive).

    Raises ImproperlyConfigured naming the variable and the value for anything else.
    """
    raw = env.str(name, default=None)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean; use true/false, 1/0, yes/no.")


def env_int(name: str, default: int) -> int:
    """Read ``name`` as an integer; raises ImproperlyConfigured naming it when it is not one."""
    raw = env.str(name, default=None)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer.") from None


def env_list(name: str, default: list[str]) -> list[str]:
    """Read ``name`` as a comma-separated list of non-empty strings."""
    raw = env.str(name, default=None)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


_DB_SCHEMES = {"postgres", "postgresql", "pgsql", "sqlite"}


def env_database(name: str, default: str) -> dict:
    """Read ``name`` as a database URL (``postgres://user@host:5432/db`` or ``sqlite:///path``).

    Returns a Django ``DATABASES`` entry. Raises ImproperlyConfigured naming the variable for a
    URL that has no supported scheme or no database name.
    """
    raw = env.str(name, default=default)
    scheme = raw.split("://", 1)[0] if "://" in raw else ""
    if scheme not in _DB_SCHEMES:
        raise ImproperlyConfigured(
            f"{name}={raw!r} is not a database URL; expected postgres://... or sqlite:///..."
        )
    config = environ.Env.db_url_config(raw)
    if not config.get("NAME"):
        raise ImproperlyConfigured(f"{name}={raw!r} names no database.")
    return config


def env_redis_url(name: str) -> str | None:
    """Read ``name`` as a Redis URL (``redis://host:6379/0``); None when unset or empty."""
    raw = env.str(name, default="").strip()
    if not raw:
        return None
    if not raw.startswith(("redis://", "rediss://", "unix://")):
        raise ImproperlyConfigured(f"{name}={raw!r} is not a Redis URL; expected redis://...")
    return raw
