"""The session engine (``SESSION_ENGINE``): Django's cached database sessions, read from the
database without the ORM.

Every signed-in request reads its session before anything else. This is Django's
``django.contrib.sessions.backends.cached_db.SessionStore``: every session is a row of Django's
session table (the same rows, encoding, expiry, saving and deleting as the database engine, so
switching engines kept every session) and a copy of its data in the cache
(``SESSION_CACHE_ALIAS``: Redis), kept ``SESSION_CACHE_SECONDS`` at most (Django's engine keeps
it until the session expires), written on every save and deleted with the session (log-out).
A request reads the copy; only when the cache has none (a new process's Redis, Redis down, a
copy's lifetime over) does it read the row, with one written-out ``SELECT``: through
the ORM (``Session.objects.get(...)``) that read cost about 200 µs of CPU, written out about 70
(``bench/README.md``, issue 19), on the database the routers give for ``Session`` reads (a
replica for a reader's GET, ``topicsite.dbrouter``), prepared once per connection on
PostgreSQL. The signed-in readers' early path (``topicsite.pagecache``) reads the copy in the
same round trip as the site-wide version (:meth:`SessionStore.cache_key_if_valid`,
:meth:`SessionStore.take_cached`).

A log-out while Redis does not answer, or while the cache's breaker skips Redis after a slow
answer (``topicsite.cache``), deletes the row but not the copy. The early path confirms the
row in the statement it sends anyway (:meth:`SessionStore.live_statement`) and deletes a copy
that outlived it; elsewhere such a copy serves that key for ``SESSION_CACHE_SECONDS`` at
most (Django's engine: until the session would have expired). The browser forgot the key at
the log-out.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.sessions.backends.base import VALID_KEY_CHARS
from django.contrib.sessions.backends.cached_db import SessionStore as CachedDatabaseSessionStore
from django.db import connections, router
from django.utils import timezone

from .readers import read_statement

__all__ = ["SessionStore"]

# What a key Django made can hold: VALID_KEY_CHARS, and at most the column's 40 characters.
_KEY_CHARS = frozenset(VALID_KEY_CHARS)
_KEY_MAX_LENGTH = 40


class _LifetimeCapped:
    """The session cache, every copy it is given kept ``seconds`` at most (Django's store
    keeps it as long as the session)."""

    def __init__(self, cache, seconds: int):
        self._cache = cache
        self._seconds = seconds

    def set(self, key, value, timeout=None, *args, **kwargs):
        if timeout is None or timeout > self._seconds:
            timeout = self._seconds
        return self._cache.set(key, value, timeout, *args, **kwargs)

    def __contains__(self, key) -> bool:
        return key in self._cache

    def __getattr__(self, name):
        return getattr(self._cache, name)


class SessionStore(CachedDatabaseSessionStore):
    """Django's cached database session store whose read of the row (when the cache has no
    copy) is one written-out ``SELECT`` (session key, unexpired) instead of the ORM query,
    prepared once per connection on PostgreSQL (``topicsite.readers.readers_cursor``)."""

    def __init__(self, session_key=None):
        super().__init__(session_key)
        self._cache = _LifetimeCapped(self._cache, settings.SESSION_CACHE_SECONDS)

    def load(self) -> dict:
        """The session's data: its cached copy, else its row (then cached), else empty. A key
        Django did not make reads as empty at once: Django's cached store would make a new
        key for it first, asking the database whether that key is taken."""
        if self.session_key is None:
            return {}
        return super().load()

    def cache_key_if_valid(self) -> str | None:
        """The cache key of this session's copy, or ``None`` when its key is not one Django
        made (such a session reads as empty). Unlike ``cache_key``, never makes a new key."""
        key = self.session_key  # None when the cookie's key failed validation
        return None if key is None else self.cache_key_prefix + key

    def take_cached(self, data) -> None:
        """Use ``data``, read from the cache under :meth:`cache_key_if_valid` together with
        other keys, as this session's data, as ``load`` would have read it; ``None`` (no
        copy) leaves the session to load as usual."""
        if isinstance(data, dict):
            self._session_cache = data

    def _validate_session_key(self, key):
        """Django's check (at least 8 characters) and the shape of the keys Django makes
        (``VALID_KEY_CHARS``, at most the column's 40): a cookie's key of anything else (a NUL
        byte, which PostgreSQL refuses in a parameter: a 500 on every page) names no session
        and never reaches the database."""
        return bool(
            super()._validate_session_key(key)
            and len(key) <= _KEY_MAX_LENGTH
            and _KEY_CHARS.issuperset(key)
        )

    def _row_statement(self, columns: str) -> tuple[str, str, list] | None:
        """``(alias, sql, params)`` reading ``columns`` of this session's unexpired row, on the
        database the routers give for session reads; ``None`` for a key Django did not make.
        Read through ``topicsite.readers``: one statement whose result is JSON whatever the
        table's column types (a prepared statement whose result type changed, after a
        migration, would fail on every kept connection)."""
        key = self.session_key  # None when the cookie's key failed Django's validation
        if key is None:
            return None
        alias = router.db_for_read(self.model)
        table = connections[alias].ops.quote_name(self.model._meta.db_table)
        sql = f"SELECT {columns} FROM {table} WHERE session_key = %s AND expire_date > %s"  # noqa: S608
        return alias, sql, [key, timezone.now()]

    def _get_session_from_db(self):
        """The unexpired ``Session`` row of this store's key, or ``None`` (and the key
        forgotten, as Django's store does) when there is none or the key is invalid."""
        statement = self._row_statement("session_data, expire_date")
        rows = read_statement(statement)
        if not rows:
            self._session_key = None
            return None
        data, expire_date = rows[0]
        expire_date = self.model._meta.get_field("expire_date").to_python(expire_date)
        session = self.model(
            session_key=self.session_key, session_data=data, expire_date=expire_date
        )
        session._state.db = statement[0]
        session._state.adding = False
        return session

    def live_statement(self) -> tuple[str, str, list] | None:
        """``(alias, sql, params)``: whether this session's row still exists and has not
        expired (one row, or none), for ``topicsite.readers.read_together``; ``None`` for a key
        Django did not make. A session served from its cached copy is confirmed by it where
        the copy may have outlived the row (a log-out whose delete Redis did not get)."""
        return self._row_statement("1 AS live")

    def forget_cached(self) -> None:
        """Delete this session's cached copy (its row is gone: the copy must not serve)."""
        key = self.cache_key_if_valid()
        if key is not None:
            self._cache.delete(key)
