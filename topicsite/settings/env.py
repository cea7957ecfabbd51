"""Typed reads of the environment that fail loudly, naming the variable, on a malformed value.

django-environ parses URLs; these helpers add the strictness it lacks (``env.bool`` would read
``DJANGO_DEBUG=yes please`` as False without a word).
"""

from __future__ import annotations

from urllib.parse import urlsplit

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


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    """Read ``name`` as an integer, at least ``minimum`` when given.

    Raises ImproperlyConfigured naming the variable when it is not an integer or is too small.
    """
    raw = env.str(name, default=None)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer.") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={raw!r} must be at least {minimum}.")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    """Read ``name`` as a comma-separated list of non-empty strings; ``default`` when unset.

    Set but empty (``NAME=``) is the empty list, not the default: for ``ARXIV_OAI_SETS`` it
    means the whole repository.
    """
    # Not env.str: django-environ reads an empty value as unset.
    raw = env.ENVIRON.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


_DB_SCHEMES = {"postgres", "postgresql", "pgsql", "sqlite"}


def env_database(name: str, default: str) -> dict:
    """Read ``name`` as a database URL (``postgres://user@host:5432/db`` or ``sqlite:///path``).

    Returns a Django ``DATABASES`` entry (PostgreSQL's with ``ENGINE`` ``topicsite.postgresql``,
    :mod:`topicsite.postgresql.base`). Raises ImproperlyConfigured naming the variable for a
    URL that has no supported scheme or no database name.
    """
    raw = env.str(name, default=default)
    scheme = raw.split("://", 1)[0] if "://" in raw else ""
    if scheme not in _DB_SCHEMES:
        raise ImproperlyConfigured(
            f"{name}={raw!r} is not a database URL; expected postgres://... or sqlite:///..."
        )
    try:
        config = environ.Env.db_url_config(raw)
    except ValueError as error:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a valid database URL: {error}") from None
    # sqlite:// alone means an in-memory database: every process would see its own, empty one.
    if not config.get("NAME") or config["NAME"] == ":memory:":
        raise ImproperlyConfigured(f"{name}={raw!r} names no database file or database.")
    if config["ENGINE"] == "django.db.backends.postgresql":
        # Django's backend with a health check that skips the SELECT 1 while the socket is quiet.
        config["ENGINE"] = "topicsite.postgresql"
    return config


# PostgreSQL takes random_page_cost from 0 up, but refuses numbers too small to store
# normally; nothing outside this range is a sensible cost of a page read.
RANDOM_PAGE_COST_RANGE = (0.01, 1000.0)


def env_planner_options(name: str, default: str) -> str:
    """Read ``name`` as PostgreSQL's ``random_page_cost`` for the site's connections (a number
    from 0.01 to 1000) and return it as libpq's ``options`` (``-c random_page_cost=1.1``);
    empty when set but empty (the server's, database's or role's own setting stays). Raises
    ImproperlyConfigured naming the variable for anything else."""
    raw = env.ENVIRON.get(name, default).strip()
    if not raw:
        return ""
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number.") from None
    low, high = RANDOM_PAGE_COST_RANGE
    if not low <= value <= high:  # also refuses nan and inf
        raise ImproperlyConfigured(f"{name}={raw!r} must be from {low:g} to {high:g}.")
    # repr: every digit of the value as read, in a form PostgreSQL reads (1.1, 2.0, 0.5).
    return f"-c random_page_cost={value!r}"


def postgresql_options(site_options: str, url_options: object = "") -> str:
    """libpq's ``options`` for a site connection: ``site_options`` first, then the database
    URL's own ``url_options`` or, when it has none, the environment's ``PGOPTIONS`` (what
    libpq itself would send: it reads ``PGOPTIONS`` only for a connection without
    ``options``, and every site connection now has some). PostgreSQL applies them in order,
    so an operator's setting in either wins over the site's default."""
    operator = str(url_options or "").strip() or env.ENVIRON.get("PGOPTIONS", "").strip()
    return " ".join(part for part in (site_options.strip(), operator) if part)


def env_redis_url(name: str) -> str | None:
    """Read ``name`` as a Redis URL (``redis://host:6379/0``); None when unset or empty."""
    raw = env.str(name, default="").strip()
    if not raw:
        return None
    if not raw.startswith(("redis://", "rediss://", "unix://")):
        raise ImproperlyConfigured(f"{name}={raw!r} is not a Redis URL; expected redis://...")
    try:
        parsed = urlsplit(raw)
        parsed.port  # noqa: B018  (raises ValueError for a port that is not a number)
    except ValueError as error:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a valid Redis URL: {error}") from None
    return raw
