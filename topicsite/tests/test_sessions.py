"""The session engine (topicsite/sessions.py): Django's database sessions read with one
written-out SELECT. A signed-in reader stays signed in, an expired or unknown session reads as
empty (the reader signed out), a malformed key never reaches the database, and the read is
one query on the database the routers give for session reads."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.sessions.models import Session
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.tests.factories import UserFactory
from topicsite.sessions import SessionStore

pytestmark = pytest.mark.django_db


def test_the_site_uses_it_and_a_signed_in_reader_stays_signed_in(settings):
    assert settings.SESSION_ENGINE == "topicsite.sessions"
    client = Client()
    user = UserFactory(email="reader@example.org")
    client.force_login(user)
    response = client.get("/library/")
    assert response.status_code == 200
    assert response.wsgi_request.user == user


def test_a_stored_session_loads_from_its_cached_copy_or_else_its_row_in_one_query(settings):
    """A session is read from its copy in the cache, with no query; without one (a Redis
    emptied) from its row in one query, and the copy is kept again; the copy lives as long
    as the session."""
    store = SessionStore()
    store["answer"] = 42
    store["nested"] = {"a": [1, 2]}
    store.create()
    again = SessionStore(store.session_key)
    with CaptureQueriesContext(connection) as queries:
        assert again["answer"] == 42 and again["nested"] == {"a": [1, 2]}
    assert len(queries) == 0
    assert 0 < cache.ttl(store.cache_key) <= settings.SESSION_CACHE_SECONDS

    cache.clear()
    from_row = SessionStore(store.session_key)
    with CaptureQueriesContext(connection) as queries:
        assert from_row["answer"] == 42 and from_row["nested"] == {"a": [1, 2]}
    assert len(queries) == 1
    assert from_row.session_key == store.session_key
    assert cache.get(store.cache_key) == {"answer": 42, "nested": {"a": [1, 2]}}


def test_an_expired_session_reads_as_empty_and_its_key_is_forgotten():
    store = SessionStore()
    store["answer"] = 42
    store.create()
    Session.objects.filter(session_key=store.session_key).update(
        expire_date=timezone.now() - dt.timedelta(seconds=1)
    )
    cache.delete(store.cache_key)  # the copy's lifetime was the session's
    again = SessionStore(store.session_key)
    assert again.load() == {}
    assert again.session_key is None


def test_a_log_out_deletes_the_row_and_the_cached_copy():
    client = Client()
    client.force_login(UserFactory(email="leaving@example.org"))
    key = client.session.session_key
    assert cache.get(SessionStore(key).cache_key) is not None
    client.post("/accounts/logout/")
    assert not Session.objects.filter(session_key=key).exists()
    assert cache.get(SessionStore(key).cache_key) is None
    assert SessionStore(key).load() == {}


@pytest.mark.parametrize("key", ["nosuchsessionkey0123456789abcdef", "short", "x" * 41])
def test_an_unknown_or_malformed_key_reads_as_empty(key):
    store = SessionStore(key)
    assert store.load() == {}
    assert store.session_key is None


def test_a_malformed_key_never_reaches_the_database():
    store = SessionStore("bad")
    with CaptureQueriesContext(connection) as queries:
        assert store.load() == {}
    assert len(queries) == 0


def test_a_session_loaded_then_saved_updates_its_row():
    store = SessionStore()
    store["count"] = 1
    store.create()
    again = SessionStore(store.session_key)
    again["count"] = again["count"] + 1
    again.save()
    assert SessionStore(store.session_key)["count"] == 2
    assert Session.objects.filter(session_key=store.session_key).count() == 1


def test_a_cookie_with_a_hostile_key_is_a_signed_out_reader_not_an_error():
    client = Client()
    client.cookies["sessionid"] = "'; DROP TABLE django_session; --"
    response = client.get("/topics/")
    assert response.status_code == 200
    assert not response.wsgi_request.user.is_authenticated
    assert Session.objects.model._meta.db_table in connection.introspection.table_names()


@pytest.mark.parametrize(
    "cookie",
    [
        # A quoted cookie's octal escape gives a NUL byte (http.cookies' unquoting), which
        # PostgreSQL refuses in any text parameter: the read raised DataError, a 500 on every
        # page for a browser that carries it (a cookie another subdomain can set).
        '"\\000abcdefghijklmnop"',
        '"abcdefghij\\000"',
    ],
)
def test_a_session_cookie_with_a_nul_byte_is_a_signed_out_reader_not_a_server_error(cookie):
    client = Client(raise_request_exception=False)
    for path in ("/topics/", "/library/"):
        response = client.get(path, HTTP_COOKIE=f"sessionid={cookie}")
        assert response.status_code in (200, 302), (path, response.status_code)
        assert not response.wsgi_request.user.is_authenticated


def test_a_key_no_session_can_have_never_reaches_the_database():
    """Django's keys are 32 of ``VALID_KEY_CHARS`` and the column holds 40: anything else
    names no session, and is not sent to the database (nor to ``delete`` on a flush)."""
    for key in ("abc\x00defghijk", "ABCDEFGHIJKLMNOP", "x" * 41, "abcdefgh\u00e9ijk"):
        store = SessionStore(key)
        with CaptureQueriesContext(connection) as queries:
            assert store.load() == {}
            store.flush()
        assert store.session_key is None
        assert len(queries) == 0, key


@pytest.mark.django_db(transaction=True)
def test_reading_a_row_survives_a_migration_that_changes_its_columns_types():
    """The row is read by a statement prepared once per connection whose result is JSON: a
    migration run elsewhere that changes a column's type (here the expiry's precision) does
    not make every kept connection fail with "cached plan must not change result type"."""
    import psycopg

    store = SessionStore()
    store["answer"] = 42
    store.create()
    cache.clear()
    assert SessionStore(store.session_key)["answer"] == 42  # prepared on this connection
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    with psycopg.connect(**params, autocommit=True) as other:
        other.execute("ALTER TABLE django_session ALTER COLUMN expire_date TYPE timestamptz(3)")
        try:
            cache.clear()
            again = SessionStore(store.session_key)
            assert again["answer"] == 42
            assert again.get_expiry_age() > 0
        finally:
            other.execute("ALTER TABLE django_session ALTER COLUMN expire_date TYPE timestamptz")
