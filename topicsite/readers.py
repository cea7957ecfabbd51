"""Who a signed-in reader is, read in written-out statements: the early path of the signed-in
readers' shared pages (``topicsite.pagecache.PageCacheMiddleware``).

Django's ``AuthenticationMiddleware`` gives a request its user through the backend the session
names (``ModelBackend.get_user``: the ORM's ``get``, about 0.3 ms of CPU a request, more than
the statement itself). :func:`session_user` and :func:`user_accepted` give the same user for the
sessions Django would accept without doing anything else: the user the session names, read by
its primary key in one written-out statement (:func:`user_statement`), when the session's
backend is still configured and reads its users as Django's ``ModelBackend`` does (allauth's
does), the backend lets the user sign in (``user_can_authenticate``: an active user) and the
session's hash is the user's current one. Every other case (no user in the session, a backend
of another kind, an inactive or deleted user, a hash that does not verify or verifies only with
a fallback key, which Django answers by flushing or rotating the session) is refused: the
request then goes down the full stack, where Django decides as always. So the early path never
accepts a session Django would refuse.

:func:`readers_cursor` is the cursor the per-request reads of a signed-in page view run on: a
prepared statement's cursor on PostgreSQL (``topicsite.postgresql``), Django's cursor on
another database; :func:`read_together` sends several such statements in one round trip.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import (
    BACKEND_SESSION_KEY,
    HASH_SESSION_KEY,
    SESSION_KEY,
    get_user_model,
    load_backend,
)
from django.contrib.auth.backends import ModelBackend
from django.db import connections, models, router
from django.utils.crypto import constant_time_compare

__all__ = [
    "any_of",
    "read_statement",
    "read_together",
    "readers_cursor",
    "session_user",
    "user_accepted",
    "user_by_pk",
    "user_from_rows",
    "user_statement",
]


def readers_cursor(alias: str):
    """A cursor of database ``alias`` whose statements are prepared once per connection
    (``DatabaseWrapper.prepared_cursor``), or Django's own cursor where the backend has none
    (SQLite, Django's PostgreSQL backend)."""
    connection = connections[alias]
    prepared = getattr(connection, "prepared_cursor", None)
    return connection.cursor() if prepared is None else prepared()


def any_of(alias: str, column: str, values: list) -> tuple[str, list]:
    """``(condition, params)``: ``column`` is one of ``values`` (a non-empty list), written
    so that its text does not vary with the number of values where statements are prepared
    (``column = ANY(%s)`` with one list parameter on PostgreSQL), else ``column IN (%s, ...)``.
    ``column`` is SQL (a quoted name), never a reader's text."""
    if connections[alias].vendor == "postgresql":
        return f"{column} = ANY(%s)", [list(values)]
    return f"{column} IN ({', '.join(['%s'] * len(values))})", list(values)


def read_together(alias: str, statements: list[tuple[str, list]]) -> list[list[tuple]]:
    """The rows of each ``(sql, params)`` of ``statements`` on database ``alias``, in order,
    each row a tuple of its columns in order. On PostgreSQL the statements go as one (each a
    branch of a ``UNION ALL``, its rows as JSON), prepared once per connection
    (:func:`readers_cursor`): one round trip and one result to decode, where three statements
    cost the client about twice the CPU even pipelined (``bench/README.md``, issue 19). Values
    are then as JSON gives them (numbers, text, booleans, null; a timestamp as its ISO 8601
    text), and each statement's columns must have distinct names. Elsewhere the statements
    run one after another and values are as the driver gives them. Raises what the database
    raises (as Django's ``DatabaseError`` subclasses)."""
    if not statements:
        return []
    connection = connections[alias]
    if connection.vendor != "postgresql":
        results = []
        with connection.cursor() as cursor:
            for sql, params in statements:
                cursor.execute(sql, params)
                results.append(cursor.fetchall())
        return results
    sql = " UNION ALL ".join(
        f"SELECT {index} AS statement, to_json(q) AS row FROM ({text}) AS q"
        for index, (text, _params) in enumerate(statements)
    )
    with readers_cursor(alias) as cursor:
        cursor.execute(sql, [value for _text, params in statements for value in params])
        found = cursor.fetchall()
    results: list[list[tuple]] = [[] for _statement in statements]
    for index, row in found:
        results[index].append(tuple(row.values()))
    return results


def read_statement(statement: tuple[str, str, list] | None) -> list[tuple]:
    """The rows of one ``(alias, sql, params)`` statement (:func:`read_together`), or none
    for ``None`` (a reader's read with nothing to read)."""
    if statement is None:
        return []
    alias, sql, params = statement
    return read_together(alias, [(sql, params)])[0]


def _reads_as_model_backend(backend) -> bool:
    """Whether ``backend`` reads a user as Django's ``ModelBackend.get_user`` does (the user
    model's default manager's ``get`` by primary key, then ``user_can_authenticate``)."""
    return isinstance(backend, ModelBackend) and type(backend).get_user is ModelBackend.get_user


# Fields whose value comes back exactly through JSON and the field's to_python (read_together).
_JSON_SAFE_FIELDS = frozenset(
    {
        "AutoField",
        "BigAutoField",
        "BigIntegerField",
        "BooleanField",
        "CharField",
        "DateField",
        "DateTimeField",
        "EmailField",
        "IntegerField",
        "PositiveIntegerField",
        "PositiveSmallIntegerField",
        "SlugField",
        "SmallAutoField",
        "SmallIntegerField",
        "TextField",
        "UUIDField",
    }
)


def user_statement(pk, *, alias: str | None = None) -> tuple[str, str, list] | None:
    """``(alias, sql, params)``: the written-out read of the user whose primary key is ``pk``
    (the user model's concrete fields, in their order; :func:`user_from_rows` makes the
    user), on the database the routers give for reading users (``alias`` another). ``None``
    where the ORM must read it instead: the user model's default manager filters its rows,
    one of its fields would not come back exactly through JSON (:func:`read_together`), or
    the database is not PostgreSQL."""
    model = get_user_model()
    alias = alias or router.db_for_read(model)
    connection = connections[alias]
    fields = model._meta.concrete_fields
    if (
        connection.vendor != "postgresql"
        or type(model._default_manager).get_queryset is not models.Manager.get_queryset
        or any(field.get_internal_type() not in _JSON_SAFE_FIELDS for field in fields)
    ):
        return None
    quote = connection.ops.quote_name
    columns = ", ".join(quote(field.column) for field in fields)
    sql = (
        f"SELECT {columns} FROM {quote(model._meta.db_table)}"  # noqa: S608 - names
        f" WHERE {quote(model._meta.pk.column)} = %s"
    )
    return alias, sql, [pk]


def user_from_rows(alias: str, rows: list[tuple]):
    """The user of :func:`user_statement`'s ``rows`` read on ``alias``, or ``None``."""
    if not rows:
        return None
    model = get_user_model()
    fields = model._meta.concrete_fields
    values = [field.to_python(value) for field, value in zip(fields, rows[0], strict=True)]
    return model.from_db(alias, [field.attname for field in fields], values)


def user_by_pk(pk, *, alias: str | None = None):
    """The user whose primary key is ``pk`` (the user model's concrete fields, as the ORM's
    ``get`` would give them), or ``None`` when there is none: one statement, written out
    and prepared once per connection on PostgreSQL (:func:`user_statement`), else the ORM's."""
    model = get_user_model()
    alias = alias or router.db_for_read(model)
    statement = user_statement(pk, alias=alias)
    if statement is None:
        return model._default_manager.using(alias).filter(pk=pk).first()
    return user_from_rows(alias, read_statement(statement))


def session_user(session):
    """``(user's primary key, backend)`` of the user ``session`` (a session store) names,
    when Django's authentication could accept it as it is (module docstring), else ``None``:
    the session names a user, a configured backend that reads users as ``ModelBackend``
    does, and holds a hash. Reads the session when not read yet."""
    try:
        backend_path = session[BACKEND_SESSION_KEY]
        user_key = session[SESSION_KEY]
    except KeyError:
        return None
    session_hash = session.get(HASH_SESSION_KEY)
    if not session_hash or not isinstance(session_hash, str):
        return None
    if backend_path not in settings.AUTHENTICATION_BACKENDS:
        return None
    backend = load_backend(backend_path)
    if not _reads_as_model_backend(backend):
        return None
    try:
        pk = get_user_model()._meta.pk.to_python(user_key)
    except Exception:  # noqa: BLE001 - a key Django's own read refuses too: not early
        return None
    return pk, backend


def user_accepted(user, session, backend) -> bool:
    """Whether Django's authentication gives ``user`` (read for :func:`session_user`'s
    key, or ``None``) to a request with ``session`` as it is: the backend lets the user sign
    in and the session's hash matches the user's under the current secret key."""
    return (
        user is not None
        and backend.user_can_authenticate(user)
        and constant_time_compare(session[HASH_SESSION_KEY], user.get_session_auth_hash())
    )
