"""The session engine (``SESSION_ENGINE``): Django's database sessions, read without the ORM.

Every signed-in request reads its session before anything else, and on a page signed-in
readers share (``topicsite.pagecache``) that read is one of the four queries of a hit. Through
the ORM (``Session.objects.get(...)``) it cost about 200 µs of CPU; the same statement written
out costs about 70 µs (``bench/README.md``, issue 19). Everything else is Django's
``django.contrib.sessions.backends.db.SessionStore``: the same table, rows, encoding, expiry,
saving and deleting, so switching engines keeps every session, and the read goes to the
database the routers give for ``Session`` reads (a replica for a reader's GET,
``topicsite.dbrouter``).
"""

from __future__ import annotations

from django.contrib.sessions.backends.base import VALID_KEY_CHARS
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.db import connections, router
from django.utils import timezone

from .readers import readers_cursor

__all__ = ["SessionStore"]

# What a key Django made can hold: VALID_KEY_CHARS, and at most the column's 40 characters.
_KEY_CHARS = frozenset(VALID_KEY_CHARS)
_KEY_MAX_LENGTH = 40


class SessionStore(DatabaseSessionStore):
    """Django's database session store whose load reads the row with one written-out
    ``SELECT`` (session key, unexpired) instead of building the ORM query, prepared once per
    connection on PostgreSQL (``topicsite.readers.readers_cursor``)."""

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
