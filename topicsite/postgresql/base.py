"""Django's PostgreSQL backend with a health check that asks the server only when the
connection's socket says something happened.

``CONN_HEALTH_CHECKS`` (on in the settings) checks a kept connection at the start of every
request that uses the database: Django's check is a ``SELECT 1``, a round trip on every
request, a fifth of the queries of a signed-in reader's page. A connection the server has
closed (a restart, ``pg_terminate_backend``, an idle timeout) has its last message or its end
of stream waiting on the socket, so the socket reads as ready; a healthy idle connection has
nothing to read. :meth:`DatabaseWrapper.is_usable` therefore polls the socket without waiting
and sends Django's ``SELECT 1`` only when there is something to read or an error or hang-up
flagged, or when the connection was left inside a transaction (a failed one must be dropped,
as Django's check drops it); psycopg's own ``closed``/``broken`` flags come first. A
connection that died without a word (a host gone, a network cut) passes, as it does Django's
check until a timeout: the request's first query then fails, and Django closes the
connection at the end of that request (``close_if_unusable_or_obsolete``).

It also gives :meth:`DatabaseWrapper.binary_cursor`, for reads of many ``bytea`` values,
:meth:`DatabaseWrapper.prepared_cursor`, for the few statements every signed-in page view runs,
and reads ``json`` values (not ``jsonb``, which Django's ``JSONField`` decodes itself) with orjson:
a page of API rows decodes one JSON array per paper (``api.selectors.paper_rows``), 1.3 ms of
a 100-paper page with ``json.loads``. A document that may hold an integer beyond 64 bits
(which orjson reads as a float) or that orjson refuses (a lone surrogate escape) is read by
``json.loads`` as before.

The drill ``drills/restart_postgres.py`` restarts the server under load and checks that
requests recover, and ``topicsite/tests/test_postgresql_backend.py`` kills a connection's
server process and checks that the next request's check finds it.
"""

from __future__ import annotations

import json
import re
import select

import orjson
import psycopg
from django.db.backends.postgresql.base import DatabaseWrapper as PostgreSQLDatabaseWrapper
from django.db.backends.postgresql.operations import (
    DatabaseOperations as PostgreSQLDatabaseOperations,
)
from psycopg.pq import Format, TransactionStatus
from psycopg.types.json import JsonBinaryLoader, JsonLoader

__all__ = ["DatabaseWrapper"]


# 19 digits or more: an integer there may lie beyond 64 bits, which orjson reads as a float
# (-9223372036854775809 and 2**64 alike), where json.loads keeps it exact.
_LONG_NUMBER = re.compile(rb"\d{19}")


def json_loads(data: bytes):
    """A ``json`` value's document (bytes, UTF-8) as Python, as ``json.loads`` reads it:
    read by orjson, unless it holds a run of 19 digits or more (an integer beyond 64 bits
    would be a float) or orjson refuses it. Raises ``ValueError`` (a ``json.JSONDecodeError``)
    for text that is not JSON."""
    if _LONG_NUMBER.search(data):
        return json.loads(data)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


# psycopg's loaders of json values, text and binary, with json_loads.
_JSON_LOADERS = [
    type(f"Orjson{base.__name__}", (base,), {"_loads": staticmethod(json_loads)})
    for base in (JsonLoader, JsonBinaryLoader)
]


# A prepare_threshold (executions of one statement before psycopg prepares it by itself) that
# none reaches: only prepared_cursor's statements, which ask for it, are prepared.
_NEVER_BY_COUNT = 2**62


class _PreparingCursor(psycopg.Cursor):
    """psycopg's server-binding cursor that asks to prepare every statement it executes
    (which the connection's ``prepare_threshold`` of ``None`` still refuses)."""

    def execute(self, query, params=None, *, prepare=None, binary=None):
        return super().execute(query, params, prepare=True, binary=binary)


class DatabaseOperations(PostgreSQLDatabaseOperations):
    """Django's operations, with the statement of a prepared execution in the queries log."""

    def last_executed_query(self, cursor, sql, params):
        """Django's text of the statement ``cursor`` ran, or, where psycopg keeps none (a
        prepared statement's execution), the statement as the client wrote it with its values
        composed in as Django composes them for server-bound statements."""
        executed = super().last_executed_query(cursor, sql, params)
        if executed is not None or sql is None:
            return executed
        try:
            return self.compose_sql(sql, params)
        except psycopg.errors.DataError:
            return sql


class DatabaseWrapper(PostgreSQLDatabaseWrapper):
    """Django's ``DatabaseWrapper`` for PostgreSQL with :meth:`is_usable` as above,
    :meth:`binary_cursor`, :meth:`prepared_cursor`, and ``json`` values read by
    :func:`json_loads`."""

    ops_class = DatabaseOperations

    def get_new_connection(self, conn_params):
        connection = super().get_new_connection(conn_params)
        for loader in _JSON_LOADERS:
            connection.adapters.register_loader("json", loader)
        if (
            self.settings_dict.get("PREPARED_STATEMENTS", True)
            and connection.prepare_threshold is None
        ):
            # Django turns psycopg's automatic preparation off (None), which also refuses the
            # explicit preparation prepared_cursor asks for. A threshold no statement reaches
            # keeps the automatic one off and lets the explicit one through; a threshold set in
            # OPTIONS is the operator's and stays.
            connection.prepare_threshold = _NEVER_BY_COUNT
        return connection

    def prepared_cursor(self):
        """A cursor as :meth:`cursor` gives (Django's wrapper: logged when debugging, through
        the execute wrappers, errors as Django's) whose statements are bound by the server and
        prepared on this connection at their first execution (psycopg keeps the last 100 a
        connection prepared), so that a statement run on every page view is parsed and planned
        once per connection, not per request: 30-70 µs of the server's time a statement
        (``bench/README.md``, issue 19). Only for statements whose text does not vary with the
        values (``= ANY(%s)`` with a list, not ``IN`` with one placeholder per value), or the
        connection's prepared statements churn; and only for statements whose result type no
        migration can change (PostgreSQL refuses a prepared statement whose result columns'
        types changed, "cached plan must not change result type", on every connection that
        prepared it): ``topicsite.readers.read_together`` returns each row as one JSON value.

        With ``PREPARED_STATEMENTS`` false in the database's settings (``DATABASE_URL`` behind
        a pooler in transaction mode that does not keep prepared statements), nothing is
        prepared and the statements run as on any server-bound cursor."""
        self.close_if_health_check_failed()
        self.ensure_connection()
        with self.wrap_database_errors:
            return self._prepare_cursor(_PreparingCursor(self.connection))

    def binary_cursor(self):
        """A cursor as :meth:`cursor` gives (Django's wrapper: logged in ``queries`` when
        debugging, through the execute wrappers, errors as Django's), whose results come in
        PostgreSQL's binary format, its parameters bound by the server. A ``bytea`` then
        arrives as its bytes, not as hex text the client decodes (twice its size): 3,300
        paper vectors (1,536 bytes each) took 23-28 ms as text, 13-16 ms this way. Values come as
        psycopg loads them (no Django converters); ``%s`` placeholders as with
        :meth:`cursor`."""
        self.close_if_health_check_failed()
        self.ensure_connection()
        with self.wrap_database_errors:
            cursor = psycopg.Cursor(self.connection)
            cursor.format = Format.BINARY
            return self._prepare_cursor(cursor)

    def is_usable(self) -> bool:
        """Whether the kept connection can serve this request: ``False`` when psycopg knows it
        closed or broken; ``True`` when it is outside a transaction and its socket has nothing
        to read and no error flagged; else Django's ``SELECT 1`` decides."""
        connection = self.connection
        if connection is None or connection.closed or connection.broken:
            return False
        if connection.info.transaction_status != TransactionStatus.IDLE:
            # Left in a transaction (a failed one, say, by raw BEGIN outside atomic()): the
            # server decides, as with Django's check.
            return super().is_usable()
        try:
            quiet = not _socket_has_news(connection.fileno())
        except (OSError, ValueError):
            return False
        return True if quiet else super().is_usable()


def _socket_has_news(fd: int) -> bool:
    """Whether socket ``fd`` has data to read, or an error or hang-up flagged, right now (a
    ``poll`` that does not wait)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLPRI)
    return bool(poller.poll(0))
