"""Who a signed-in reader is, read in two written-out statements: the early path of the
signed-in readers' shared pages (``topicsite.pagecache.PageCacheMiddleware``).

Django's ``AuthenticationMiddleware`` gives a request its user through the backend the session
names (``ModelBackend.get_user``: the ORM's ``get``, about 0.3 ms of CPU a request, more than
the statement itself). :func:`signed_in_user` gives the same user for the sessions Django
would accept without doing anything else: the user the session names, read by its primary key
in one written-out statement, when the session's backend is still configured and reads its
users as Django's ``ModelBackend`` does (allauth's does), the backend lets the user sign in
(``user_can_authenticate``: an active user) and the session's hash is the user's current one.
Every other case (no user in the session, a backend of another kind, an inactive or deleted
user, a hash that does not verify or verifies only with a fallback key, which Django answers by
flushing or rotating the session) answers ``None``: the request then goes down the full stack,
where Django decides as always. So the early path never accepts a session Django would refuse.

:func:`readers_cursor` is the cursor the per-request reads of a signed-in page view run on: a
prepared statement's cursor on PostgreSQL (``topicsite.postgresql``), Django's cursor on
another database.
"""

from __future__ import annotations

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

__all__ = ["any_of", "readers_cursor", "signed_in_user", "user_by_pk"]


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


def _reads_as_model_backend(backend) -> bool:
    """Whether ``backend`` reads a user as Django's ``ModelBackend.get_user`` does (the user
    model's default manager's ``get`` by primary key, then ``user_can_authenticate``)."""
    return isinstance(backend, ModelBackend) and type(backend).get_user is ModelBackend.get_user


def user_by_pk(pk, *, alias: str | None = None):
    """The user whose primary key is ``pk`` (the user model's concrete fields, as the ORM's
    ``get`` would give them), or ``None`` when there is none. One written-out statement on
    the database the routers give for reading users (``alias`` another), prepared once per
    connection on PostgreSQL. Where the user model's default manager filters its rows, or the
    database is not PostgreSQL (whose driver gives every value as the ORM's converters
    would), the ORM reads it instead."""
    model = get_user_model()
    alias = alias or router.db_for_read(model)
    connection = connections[alias]
    manager = model._default_manager
    if connection.vendor != "postgresql" or type(manager).get_queryset is not (
        models.Manager.get_queryset
    ):
        return manager.using(alias).filter(pk=pk).first()
    fields = model._meta.concrete_fields
    quote = connection.ops.quote_name
    sql = (
        f"SELECT {', '.join(quote(field.column) for field in fields)} "  # noqa: S608 - names
        f"FROM {quote(model._meta.db_table)} WHERE {quote(model._meta.pk.column)} = %s"
    )
    with readers_cursor(alias) as cursor:
        cursor.execute(sql, [pk])
        row = cursor.fetchone()
    if row is None:
        return None
    return model.from_db(alias, [field.attname for field in fields], row)


def signed_in_user(session):
    """The user Django's authentication would give a request with ``session`` (a session
    store), when it would give one without touching the session, else ``None`` (see the
    module docstring): the session names a user and a configured backend that reads users
    as ``ModelBackend`` does, the user exists and may sign in, and the session's hash
    matches the user's under the current secret key. Reads the session (when not read yet)
    and the user: two statements at most."""
    try:
        backend_path = session[BACKEND_SESSION_KEY]
        user_key = session[SESSION_KEY]
    except KeyError:
        return None
    session_hash = session.get(HASH_SESSION_KEY)
    if not session_hash or not isinstance(session_hash, str):
        return None
    from django.conf import settings

    if backend_path not in settings.AUTHENTICATION_BACKENDS:
        return None
    backend = load_backend(backend_path)
    if not _reads_as_model_backend(backend):
        return None
    model = get_user_model()
    try:
        pk = model._meta.pk.to_python(user_key)
    except Exception:  # noqa: BLE001 - a key Django's own read would refuse too: not early
        return None
    user = user_by_pk(pk)
    if user is None or not backend.user_can_authenticate(user):
        return None
    if not constant_time_compare(session_hash, user.get_session_auth_hash()):
        return None
    return user
