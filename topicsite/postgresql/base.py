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

The drill ``drills/restart_postgres.py`` restarts the server under load and checks that
requests recover, and ``topicsite/tests/test_postgresql_backend.py`` kills a connection's
server process and checks that the next request's check finds it.
"""

from __future__ import annotations

import select

from django.db.backends.postgresql.base import DatabaseWrapper as PostgreSQLDatabaseWrapper
from psycopg.pq import TransactionStatus

__all__ = ["DatabaseWrapper"]


class DatabaseWrapper(PostgreSQLDatabaseWrapper):
    """Django's ``DatabaseWrapper`` for PostgreSQL with :meth:`is_usable` as above."""

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
