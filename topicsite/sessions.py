"""The session engine (``SESSION_ENGINE``): Django's cached database sessions, read from the
database without the ORM.

Every signed-in request reads its session before anything else. This is Django's
``django.contrib.sessions.backends.cached_db.SessionStore``: every session is a row of Django's
session table (the same rows, encoding, expiry, saving and deleting as the database engine, so
switching engines kept every session) and a copy of its data in the cache
(``SESSION_CACHE_ALIAS``: Redis), kept until the session expires, written on every save and
deleted with the session (log-out). A request reads the copy; only when the cache has none (a
new process's Redis, Redis down) does it read the row, with one written-out ``SELECT``: through
the ORM (``Session.objects.get(...)``) that read cost about 200 µs of CPU, written out about 70
(``bench/README.md``, issue 19), on the database the routers give for ``Session`` reads (a
replica for a reader's GET, ``topicsite.dbrouter``), prepared once per connection on
PostgreSQL. The signed-in readers' early path (``topicsite.pagecache``) reads the copy in the
same round trip as the site-wide version (:meth:`SessionStore.cache_key_if_valid`,
:meth:`SessionStore.take_cached`).

As with Django's engine, a log-out while Redis does not answer deletes the row but not the
copy, which then serves that session's key until it expires; the browser forgot the key at
the log-out.
"""

from __future__ import annotations

from django.contrib.sessions.backends.base import VALID_KEY_CHARS
from django.contrib.sessions.backends.cached_db import SessionStore as CachedDatabaseSessionStore
from django.db import connections, router
from django.utils import timezone

from .readers import readers_cursor

__all__ = ["SessionStore"]

# What a key Django made can hold: VALID_KEY_CHARS, and at most the column's 40 characters.
_KEY_CHARS = frozenset(VALID_KEY_CHARS)
_KEY_MAX_LENGTH = 40


class SessionStore(CachedDatabaseSessionStore):
    """Django's cached database session store whose read of the row (when the cache has no
    copy) is one written-out ``SELECT`` (session key, unexpired) instead of the ORM query,
    prepared once per connection on PostgreSQL (``topicsite.readers.readers_cursor``)."""

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

    def _get_session_from_db(self):
        """The unexpired ``Session`` row of this store's key, or ``None`` (and the key
        forgotten, as Django's store does) when there is none or the key is invalid."""
        key = self.session_key  # None when the cookie's key failed Django's validation
        row = None
        if key is not None:
            model = self.model
            alias = router.db_for_read(model)
            table = connections[alias].ops.quote_name(model._meta.db_table)
            with readers_cursor(alias) as cursor:
                cursor.execute(
                    f"SELECT session_data, expire_date FROM {table}"  # noqa: S608 - table name
                    " WHERE session_key = %s AND expire_date > %s",
                    [key, timezone.now()],
                )
                row = cursor.fetchone()
        if row is None:
            self._session_key = None
            return None
        session = self.model(session_key=key, session_data=row[0], expire_date=row[1])
        session._state.db = alias
        session._state.adding = False
        return session
