"""Settings from the environment, each case in a fresh ``manage.py`` process.

A malformed value stops start-up with an error naming the variable; with nothing set the embedded
default runs (SQLite under ``var/``, Celery eager, local-memory cache); valid values are read as
given; production refuses to start without a secret key.
"""

import json
from urllib.parse import quote

import pytest

from .conftest import BASE_DIR

# Prints, as one JSON line, what the settings made of the environment.
SHOW_SETTINGS = """
import json
from django.conf import settings
db = settings.DATABASES["default"]
print(json.dumps({
    "engine": db["ENGINE"], "name": str(db["NAME"]), "host": db.get("HOST", ""),
    "conn_max_age": db["CONN_MAX_AGE"], "debug": settings.DEBUG,
    "db_options": db.get("OPTIONS", {}).get("options", ""),
    "cache": settings.CACHES["default"]["BACKEND"],
    "cache_location": settings.CACHES["default"].get("LOCATION", ""),
    "broker": settings.CELERY_BROKER_URL, "eager": settings.CELERY_TASK_ALWAYS_EAGER,
    "allowed_hosts": settings.ALLOWED_HOSTS,
    "oai_sets": settings.ARXIV_OAI_SETS, "oai_lookback_days": settings.ARXIV_OAI_LOOKBACK_DAYS,
}))
"""


def show_settings(run_manage, env):
    result = run_manage("shell", "-v", "0", "-c", SHOW_SETTINGS, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DJANGO_DEBUG", "maybe"),
        ("DATABASE_URL", "nonsense"),
        ("REDIS_URL", "http://x"),
        ("DJANGO_CONN_MAX_AGE", "abc"),
        ("ARXIV_INGEST_BATCH_SIZE", "0"),
        ("ARXIV_HTTP_TIMEOUT", "-1"),
        ("ARXIV_OAI_LOOKBACK_DAYS", "0"),
        ("REDIS_URL", "redis://127.0.0.1:notaport/8"),
        ("DATABASE_URL", "postgres://h:notaport/db"),
        ("DATABASE_URL", "sqlite://"),
        ("DATABASE_RANDOM_PAGE_COST", "fast"),
        ("DATABASE_RANDOM_PAGE_COST", "0"),
        ("DATABASE_RANDOM_PAGE_COST", "nan"),
        # PostgreSQL refuses a number too small to store normally: every connection failed.
        ("DATABASE_RANDOM_PAGE_COST", "1e-310"),
        ("DATABASE_RANDOM_PAGE_COST", "1001"),
    ],
)
def test_malformed_value_stops_start_naming_the_variable(run_manage, name, value):
    result = run_manage("check", env={name: value})

    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert f"{name}={value!r}" in result.stderr


def test_nothing_set_runs_the_embedded_default(run_manage):
    shown = show_settings(run_manage, env={})

    assert shown["engine"] == "django.db.backends.sqlite3"
    assert shown["name"] == str(BASE_DIR / "var" / "topicsite.sqlite3")
    assert shown["eager"] is True
    assert shown["broker"] == "memory://localhost/"
    assert shown["cache"] == "django.core.cache.backends.locmem.LocMemCache"
    # local settings: DEBUG on unless told otherwise, serving only this machine.
    assert shown["debug"] is True
    assert "127.0.0.1" in shown["allowed_hosts"]


def test_valid_values_are_read_as_given(run_manage):
    shown = show_settings(
        run_manage,
        env={
            "DATABASE_URL": "postgres://postgres@db.example:5432/topicsite",
            "REDIS_URL": "redis://cache.example:6379/3",
            "DJANGO_DEBUG": "no",
            "DJANGO_CONN_MAX_AGE": "0",
            "DJANGO_ALLOWED_HOSTS": "topics.example.org, www.topics.example.org",
        },
    )

    assert shown["engine"] == "topicsite.postgresql"
    assert (shown["name"], shown["host"]) == ("topicsite", "db.example")
    assert shown["db_options"] == "-c random_page_cost=1.1"
    assert shown["conn_max_age"] == 0
    assert shown["debug"] is False
    assert shown["cache"] == "topicsite.cache.RedisCache"
    assert shown["cache_location"] == "redis://cache.example:6379/3"
    assert shown["broker"] == "redis://cache.example:6379/3"
    assert shown["eager"] is False
    assert shown["allowed_hosts"] == ["topics.example.org", "www.topics.example.org"]


def test_production_without_a_secret_key_refuses_to_start(run_manage):
    result = run_manage(
        "check",
        env={
            "DJANGO_SETTINGS_MODULE": "topicsite.settings.production",
            "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/topicsite",
        },
    )

    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert "DJANGO_SECRET_KEY" in result.stderr


def test_oai_sets_set_but_empty_mean_the_whole_repository(run_manage):
    # The README: "empty: the whole repository"; unset keeps the default.
    assert show_settings(run_manage, env={"ARXIV_OAI_SETS": ""})["oai_sets"] == []
    unset = show_settings(run_manage, env={})
    assert (unset["oai_sets"], unset["oai_lookback_days"]) == (["cs"], 7)
    given = show_settings(
        run_manage, env={"ARXIV_OAI_SETS": "cs, stat", "ARXIV_OAI_LOOKBACK_DAYS": "3"}
    )
    assert (given["oai_sets"], given["oai_lookback_days"]) == (["cs", "stat"], 3)


@pytest.mark.parametrize(
    ("value", "options"),
    [
        ("2", "-c random_page_cost=2.0"),
        ("", ""),
        ("0.5", "-c random_page_cost=0.5"),
        (" 1e3 ", "-c random_page_cost=1000.0"),
        ("1.0000001", "-c random_page_cost=1.0000001"),
    ],
)
def test_random_page_cost_is_given_to_postgresql_or_left_to_the_server(run_manage, value, options):
    shown = show_settings(
        run_manage,
        env={
            "DATABASE_URL": "postgres://postgres@db.example:5432/topicsite",
            "DATABASE_RANDOM_PAGE_COST": value,
        },
    )

    assert shown["db_options"] == options


SHOW_PLANNER = """
from django.db import connection
with connection.cursor() as cursor:
    cursor.execute(
        "SELECT current_setting('random_page_cost'), current_setting('statement_timeout')"
    )
    print("|".join(cursor.fetchone()))
"""


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url_options", "pgoptions", "value", "shown"),
    [
        ("", "", None, "1.1|0"),
        # libpq reads PGOPTIONS only for a connection without options: the settings keep it.
        ("", "-c statement_timeout=5s", None, "1.1|5s"),
        ("", "-c random_page_cost=3", None, "3|0"),
        # The URL's options win over the site's default, and PGOPTIONS is not read beside them.
        ("?options=-c%20random_page_cost%3D4", "-c statement_timeout=5s", None, "4|0"),
        # Set empty: libpq reads PGOPTIONS, and the server's own cost stays (not the site's).
        ("", "-c statement_timeout=5s", "", "server|5s"),
        ("", "", "2", "2|0"),
    ],
)
def test_an_operators_own_planner_settings_win_on_a_live_connection(
    run_manage, url_options, pgoptions, value, shown
):
    """Connected to the real server (the test database): what the connection reports."""
    from django.db import connection

    db = connection.settings_dict
    login = quote(db["USER"] or "postgres", safe="")
    if db["PASSWORD"]:
        login += ":" + quote(db["PASSWORD"], safe="")
    host, port = db["HOST"] or "127.0.0.1", db["PORT"] or 5432
    url = f"postgres://{login}@{host}:{port}/{db['NAME']}{url_options}"
    env = {"DATABASE_URL": url, "PGOPTIONS": pgoptions}
    if value is not None:
        env["DATABASE_RANDOM_PAGE_COST"] = value
    result = run_manage("shell", "-v", "0", "-c", SHOW_PLANNER, env=env)

    assert result.returncode == 0, result.stderr
    cost, timeout = result.stdout.strip().splitlines()[-1].split("|")
    expected_cost, expected_timeout = shown.split("|")
    assert timeout == expected_timeout
    if expected_cost == "server":
        assert cost != "1.1"
    else:
        assert cost == expected_cost
