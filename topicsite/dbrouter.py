"""Reads from a PostgreSQL read replica, writes to the primary, and read-your-writes.

Active only when ``DATABASE_REPLICA_URL`` is set (``settings.DATABASES["replica"]`` exists and
``DATABASE_ROUTERS`` names :class:`PrimaryReplicaRouter`); without it every query goes to
``default`` as before. The way django-multidb-router (Mozilla's ``PinningReplicaRouter`` and
its middleware) does it, kept to what this site needs:

- **Only a reader's GET or HEAD goes to the replica.** :class:`ReplicaReadsMiddleware` allows
  it for the request; everything else (POST and the other unsafe methods, Celery tasks,
  management commands, the shell) reads from the primary, because they read in order to
  write (a harvest's checkpoint, tagging's existing assignments, a claim) and a replica may lag.
- **The request that wrote reads its writes.** Any write (``db_for_write``: a save, an update,
  ``select_for_update``) sends the rest of that request's reads to the primary.
- **The next requests too.** A response to a request that wrote sets the cookie
  :data:`PIN_COOKIE` for ``settings.DATABASE_REPLICA_PIN_SECONDS`` (longer than the replica's
  lag); requests carrying it read from the primary, so a reader who followed a topic sees the
  follow on the page the redirect shows, and a log-in's new session is found.

State lives in a :mod:`contextvars` variable, so each thread (gunicorn's gthread workers) and
each task has its own.
"""

from __future__ import annotations

from contextvars import ContextVar

from django.conf import settings

PRIMARY = "default"
REPLICA = "replica"
PIN_COOKIE = "topicsite_primary"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

# True while the current request may read from the replica; False everywhere else.
_replica_allowed: ContextVar[bool] = ContextVar("replica_allowed", default=False)
# True once the current request wrote (its response sets the pin cookie).
_wrote: ContextVar[bool] = ContextVar("wrote", default=False)


class PrimaryReplicaRouter:
    """``DATABASE_ROUTERS`` entry: reads to :data:`REPLICA` when the current request allows it,
    else to :data:`PRIMARY`; writes, migrations and relations on :data:`PRIMARY` only."""

    def db_for_read(self, model, **hints) -> str:
        return REPLICA if _replica_allowed.get() else PRIMARY

    def db_for_write(self, model, **hints) -> str:
        # Read-your-writes: from now on this request reads what it wrote.
        _replica_allowed.set(False)
        _wrote.set(True)
        return PRIMARY

    def allow_relation(self, obj1, obj2, **hints) -> bool:
        return True  # one database: the replica is a physical copy of the primary

    def allow_migrate(self, db, app_label, model_name=None, **hints) -> bool:
        return db == PRIMARY


class ReplicaReadsMiddleware:
    """Let a GET or HEAD without :data:`PIN_COOKIE` read from the replica; set the cookie on the
    response of a request that wrote (or used an unsafe method). First in ``MIDDLEWARE``, so
    the session and the user are read under the same rule."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        allowed = request.method in SAFE_METHODS and PIN_COOKIE not in request.COOKIES
        allowed_token = _replica_allowed.set(allowed)
        wrote_token = _wrote.set(False)
        try:
            response = self.get_response(request)
            if _wrote.get() or request.method not in SAFE_METHODS:
                response.set_cookie(
                    PIN_COOKIE,
                    "1",
                    max_age=settings.DATABASE_REPLICA_PIN_SECONDS,
                    httponly=True,
                    samesite="Lax",
                    secure=settings.SESSION_COOKIE_SECURE,
                )
            return response
        finally:
            _replica_allowed.reset(allowed_token)
            _wrote.reset(wrote_token)
