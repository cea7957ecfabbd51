"""Whole-page cache for anonymous readers of the public pages (topic pages, the topics index,
paper pages).

Most readers are not signed in and see the same page at the same address, so the rendered
page is kept in the shared cache (Redis) and served from there until the data behind it
changes: :func:`page_cache_invalidate` moves a site-wide version on. It is connected once,
here (:func:`connect_invalidation`): to one-by-one saves and deletes of the rows pages show
(admin edits, commands), and to ``topicsite.signals.content_changed``, which the bulk writers
send after their transaction commits (ingestion batches, tagging, curator decisions, topic
edits). The entry's own lifetime
(``PAGE_CACHE_SECONDS``) bounds what nothing reports, such as a follower count. After a
change, one request at a time rebuilds an entry (a ``cache.add`` lock) while the others keep
getting the previous page: a burst of readers after an ingest does not render it a hundred
times at once.

Only requests that cannot be personal are served from or written to the cache:

- ``GET`` or ``HEAD`` without a session cookie (a signed-in reader always has one) and
  without a pending flash message;
- a query string holding only the parameters the view names (``?page=3``), each once and
  short; anything else (``?utm_source=...``, a search) renders the page as usual, so a
  client cannot fill the cache with address variants;
- a 200 response that sets no cookie, rendered no CSRF token (a page with a form that posts
  is never shared) and was not marked with :func:`page_cache_skip`: views mark the answers
  to non-canonical spellings (``?page=01``, a page past the last, an unknown ``?sort=``),
  so one page is stored once, under its canonical address;
- the host in the key is the domain alone, lower case (``split_domain_port``): spellings of
  one host (a port, upper case, a trailing dot) share one copy.

With ``signed_in=True`` (topic and paper pages) signed-in readers share the page too, in a
copy of their own kind: rendered once with its personal parts left as holes
(``topicsite.holes``: who is signed in and the log-out form's CSRF token, flash messages, the
Follow button, the Save buttons, a paper's report forms), kept under the same address key with
the same version, lock and rules, and filled for each reader on every request (the holes'
reads as one statement, no template of the page). A page whose shared rendering still holds a
CSRF token or sets a cookie is not kept. Its lifetime is ``READER_PAGE_CACHE_SECONDS`` (0
turns it off); responses say ``Vary: Cookie`` and ``Cache-Control: private``.

With the cache down (django-redis skips a dead Redis) every request renders the page.

Each web process also keeps the copies it served last in its own memory (the ``pages``
cache, Django's local-memory backend, ``PAGE_CACHE_LOCAL_ENTRIES`` copies) with the version
they carry, for what is left of their lifetime in Redis: a hit asks Redis for the site-wide
version alone and, while that is the copy's, serves the copy from memory. An 80 KB page then
crosses no socket, and Redis spends a third of the CPU on the hit (``bench/README.md``), which
matters where one Redis serves many web hosts. A change still shows at once in every process
(the version is read on every request); without a version (Redis down) the memory is not
used, and after Redis lost its keys the next render starts a version again. An anonymous
reader is served such a copy by :class:`PageCacheMiddleware`, before sessions, CSRF,
authentication and URL resolution run: a cached page then costs about what Django's bare
request cycle costs (``bench/README.md``).
"""

from __future__ import annotations

import hashlib
import time
import uuid
from functools import wraps

from django.apps import apps
from django.conf import settings
from django.core.cache import DEFAULT_CACHE_ALIAS, cache, caches
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.http import HttpResponse
from django.http.request import split_domain_port
from django.middleware.csrf import InvalidTokenFormat, _check_token_format
from django.utils.cache import patch_cache_control, patch_vary_headers, quote_etag

from .holes import (
    holes_fill,
    holes_fill_found,
    holes_fill_tagged,
    holes_found,
    holes_read,
    holes_share,
    holes_split,
)
from .readers import session_user, user_accepted, user_by_pk, user_from_rows, user_statement

_PREFIX = "pagecache:v1"
# The site-wide version; other caches of rendered HTML read it too (topics.views' cards).
VERSION_KEY = f"{_PREFIX}:version"
_LOCK_SECONDS = 30
# A query parameter value longer than this is not a page number or a sort name.
_MAX_VALUE_LENGTH = 20
# The header that says whether the page came from the cache (for people and benchmarks).
CACHE_HEADER = "X-Page-Cache"


def page_cache_invalidate() -> None:
    """Make every cached page out of date (rebuilt on its next request, one at a time), and
    the cached topic cards, which read the same version. Touches only the cache; callers run
    it after their transaction commits."""
    cache.set(VERSION_KEY, uuid.uuid4().hex, timeout=None)


# What the shared pages and cached cards show, by model label: saves one by one (the admin, a
# management command) move the version on. Deletes are caught only for the models the admin
# deletes one by one: a receiver would cost Authorship and PaperAffiliation their fast bulk
# delete when ingestion rewrites a paper's authors. Bulk writers send ``content_changed``.
SHOWN_SAVED = (
    "topics.Topic",
    "papers.Paper",
    "papers.Author",
    "papers.Affiliation",
    "papers.Category",
    "papers.Authorship",
    "papers.PaperAffiliation",
)
SHOWN_DELETED = (
    "topics.Topic",
    "papers.Paper",
    "papers.Author",
    "papers.Affiliation",
    "papers.Category",
)


def _invalidate_after_edit(sender, **kwargs):
    """A shown row saved or deleted one by one: pages move on once the transaction commits."""
    transaction.on_commit(page_cache_invalidate)


def _invalidate_on_content_changed(sender, **kwargs):
    page_cache_invalidate()


def connect_invalidation() -> None:
    """Connect :func:`page_cache_invalidate` to everything that changes what pages show: the
    kernel's ``content_changed`` signal and the saves and deletes of ``SHOWN_SAVED`` /
    ``SHOWN_DELETED``. Models are looked up by label, so the kernel imports no app. Run once,
    from ``TopicsiteConfig.ready``; connecting again is a no-op (dispatch uids)."""
    from .signals import content_changed

    content_changed.connect(
        _invalidate_on_content_changed, dispatch_uid="pagecache.content_changed"
    )
    for label in SHOWN_SAVED:
        post_save.connect(
            _invalidate_after_edit,
            sender=apps.get_model(label),
            dispatch_uid=f"pagecache.after_save.{label}",
        )
    for label in SHOWN_DELETED:
        post_delete.connect(
            _invalidate_after_edit,
            sender=apps.get_model(label),
            dispatch_uid=f"pagecache.after_delete.{label}",
        )


def page_cache_skip(response):
    """Mark ``response`` as not to be stored (it still goes to the reader); returns it."""
    response.page_cache_skip = True
    return response


def _cache_key(request, query_params: tuple[str, ...] | None) -> str | None:
    """The entry's key for ``request``, or ``None`` when it must not be shared
    (``query_params``: as for :func:`_address_key`)."""
    if request.method not in ("GET", "HEAD"):
        return None
    cookies = request.COOKIES
    if settings.SESSION_COOKIE_NAME in cookies or "messages" in cookies:
        return None
    return _address_key(request, query_params, "page")


def _reader_cache_key(request, query_params: tuple[str, ...]) -> str | None:
    """The key of the copy signed-in readers share for ``request`` (one for all of them:
    their personal parts are holes), or ``None`` when the request is not a signed-in
    reader's plain ``GET`` or ``HEAD``. Reads the session and the user."""
    if request.method not in ("GET", "HEAD"):
        return None
    if settings.SESSION_COOKIE_NAME not in request.COOKIES:
        return None
    if not request.user.is_authenticated:
        return None
    return _address_key(request, query_params, "reader")


def _address_key(request, query_params: tuple[str, ...] | None, kind: str) -> str | None:
    """The key of ``kind``'s copy of the page at ``request``'s address, or ``None`` when its
    query string holds anything but ``query_params`` (``None``: any names), each once and
    short. A view's key and :class:`PageCacheMiddleware`'s, which knows no view, are the same
    string for the addresses the view keeps."""
    query = request.GET
    parts = []
    for name in sorted(query):
        values = query.getlist(name)
        if (
            (query_params is not None and name not in query_params)
            or len(values) != 1
            or len(values[0]) > _MAX_VALUE_LENGTH
        ):
            return None
        parts.append(f"{name}={values[0]}")
    # The host and scheme too: a site answering at two addresses never serves one's page
    # (its links, its "next" parameters) at the other.
    domain, _port = split_domain_port(request.get_host())
    address = f"{request.scheme}://{domain}{request.path}?{'&'.join(parts)}"
    return f"{_PREFIX}:{kind}:{hashlib.sha256(address.encode()).hexdigest()}"


def _shareable(request, response) -> bool:
    return (
        response.status_code == 200
        and not response.streaming
        and not response.cookies
        and not request.META.get("CSRF_COOKIE_NEEDS_UPDATE")
        and not getattr(response, "page_cache_skip", False)
    )


def cache_anonymous_page(*, query_params: tuple[str, ...] = (), signed_in: bool = False):
    """Decorate a read-only view so that anonymous readers get its page from the cache (see the
    module docstring), and with ``signed_in`` signed-in readers too, from their shared copy with
    their personal holes filled. ``query_params``: the query parameters that may vary the page
    (others bypass the cache). Responses gain ``Vary: Cookie`` and ``X-Page-Cache: hit`` or
    ``miss`` (``bypass`` when the request could not be shared). A view decorated with
    ``signed_in`` must not stream its page (its holes could not be filled)."""

    def decorator(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            key = _cache_key(request, query_params) if settings.PAGE_CACHE_SECONDS else None
            if key is None:
                if signed_in and settings.READER_PAGE_CACHE_SECONDS:
                    reader_key = _reader_cache_key(request, query_params)
                    if reader_key is not None:
                        return _reader_page(view, reader_key, request, args, kwargs)
                response = view(request, *args, **kwargs)
                response[CACHE_HEADER] = "bypass"
                return response

            def render():
                response = view(request, *args, **kwargs)
                return response, response.content if _shareable(request, response) else None

            response, state = _through_cache(
                key, settings.PAGE_CACHE_SECONDS, render, lambda content: content, etag=True
            )
            response[CACHE_HEADER] = state
            patch_vary_headers(response, ("Cookie",))
            return response

        return wrapper

    return decorator


def _through_cache(key: str, timeout: int, render, shown, *, etag: bool = False):
    """``(response, "hit" | "miss")``: the copy kept under ``key`` while it carries the
    site-wide version (``shown(content)`` its body), else ``render()``'s page, kept for
    ``timeout`` seconds. ``render`` returns ``(response, content to keep or None)``; ``None``
    (a page that is not shareable) drops a kept copy, as does an exception (Http404
    included: the page went away). While one request rebuilds an outdated copy (a lock in
    the cache), the others are given that copy rather than rebuilding it too. With ``etag``
    (a body shown as kept), the copy keeps its ``ETag`` too, the one Django's
    ``set_response_etag`` gives it, and a hit carries it: the conditional-GET middleware
    then hashes nothing (an 80 KB topic page's MD5 was a fifth of a hit's CPU)."""
    local = caches["pages"] if "pages" in settings.CACHES else None
    copy = None if local is None else local.get(key)
    if copy is not None:
        version = cache.get(VERSION_KEY)
        if version is not None and copy[0] == version:
            return _kept_response(copy, shown, etag), "hit"
    # No copy of this process's that is current: the version and the shared copy together.
    found = cache.get_many([VERSION_KEY, key])
    version, entry = found.get(VERSION_KEY), found.get(key)
    if version is None:
        version = _version_started()
    locked = False
    if entry is not None:
        if entry[0] == version or not (
            locked := cache.add(f"{key}:lock", 1, timeout=_LOCK_SECONDS)
        ):
            if local is not None and version is not None and entry[0] == version:
                _keep_locally(local, key, entry)
            return _kept_response(entry, shown, etag), "hit"
    try:
        try:
            response, content = render()
        except Exception:
            if entry is not None or copy is not None:
                _forget(key, local)
            raise
        if content is not None:
            kept = (
                version,
                response["Content-Type"],
                content,
                _body_etag(content) if etag else None,
                time.time() + timeout,
            )
            cache.set(key, kept, timeout=timeout)
            if local is not None and version is not None:
                _keep_locally(local, key, kept)
        elif entry is not None:
            # The page is gone or no longer shareable (a topic deactivated, a redirect):
            # others must stop getting the previous copy meanwhile.
            _forget(key, local)
    finally:
        if locked:
            cache.delete(f"{key}:lock")
    return response, "miss"


def _version_started() -> str | None:
    """The site-wide version where the shared cache has none (a Redis restarted or flushed
    keeps nothing): one is set, or the one another process set first is read, so that copies
    carry a version again and processes may keep them. ``None`` with the cache down."""
    started = uuid.uuid4().hex
    if cache.add(VERSION_KEY, started, timeout=None):
        return started
    return cache.get(VERSION_KEY)


def _forget(key: str, local) -> None:
    """Drop the copy kept under ``key``: the shared one, and this process's (``local``)."""
    cache.delete(key)
    if local is not None:
        local.delete(key)


def _kept_response(entry: tuple, shown, etag: bool) -> HttpResponse:
    """The response of a kept copy ``(version, content type, content[, ETag or None[, expiry
    (Unix time, seconds)]])`` (copies kept before held the first three or four)."""
    _version, content_type, content, *rest = entry
    response = HttpResponse(shown(content), content_type=content_type)
    if etag and rest and rest[0]:
        response["ETag"] = rest[0]
    return response


def _keep_locally(local, key: str, entry: tuple) -> None:
    """Keep ``entry`` in this process (``local``) for what is left of its lifetime in the
    shared cache, so that no process serves a copy longer than the page's lifetime (the only
    bound on what nothing reports). A copy without its expiry is not kept."""
    left = entry[4] - time.time() if len(entry) > 4 else 0
    if left > 0:
        local.set(key, entry, timeout=left)


def _body_etag(content: bytes | str) -> str | None:
    """The ``ETag`` Django's ``set_response_etag`` gives a response with body ``content``
    (text as UTF-8; none for an empty body)."""
    if not content:
        return None
    if isinstance(content, str):
        content = content.encode()
    return quote_etag(hashlib.md5(content, usedforsecurity=False).hexdigest())


def _reader_page(view, key: str, request, args, kwargs):
    """The page of ``view`` for a signed-in reader: the copy signed-in readers share (rendered
    with holes, kept under ``key`` with the site-wide version; one rebuild at a time as for
    anonymous pages), its holes filled for this reader."""

    def render():
        holes_share(request)
        try:
            response = view(request, *args, **kwargs)
        finally:
            # Anything rendered from here on (an error page, the filling) is this reader's.
            holes_share(request, False)
        if response.streaming:
            return response, None
        shared = response.content.decode(response.charset)
        # Judged before the filling, which may give this reader a CSRF cookie.
        keep = _shareable(request, response)
        response.content = holes_fill(request, shared)
        return response, shared if keep else None

    fillings = []

    def show(shared: str) -> str:
        html, tag = holes_fill_tagged(request, shared)
        fillings.append(tag)
        return html

    response, state = _through_cache(
        key, settings.READER_PAGE_CACHE_SECONDS, render, show, etag=True
    )
    if fillings and response.has_header("ETag"):
        response["ETag"] = _filled_etag(response["ETag"], fillings[0])
    return _personal(response, state)


# The pieces (holes_split) of the kept copies signed-in readers were served from lately, by the
# copy's ETag (an MD5 of its body): the early path fills the same copy on every request.
_PIECES: dict[str, list[str]] = {}
_PIECES_KEPT = 64


def _pieces_of(copy: tuple) -> list[str]:
    """The pieces of the kept ``copy``'s body (``holes_split``), cut once per body."""
    etag = copy[3] if len(copy) > 3 else None
    pieces = _PIECES.get(etag) if etag else None
    if pieces is None:
        pieces = holes_split(copy[2])
        if etag:
            while len(_PIECES) >= _PIECES_KEPT:
                try:
                    del _PIECES[next(iter(_PIECES))]
                except (KeyError, RuntimeError, StopIteration):  # another thread's turn
                    break
            _PIECES[etag] = pieces
    return pieces


def _filled_etag(shared_tag: str, filled: str) -> str:
    """The ``ETag`` of a shared copy whose ``ETag`` is ``shared_tag`` filled for a reader
    (``filled``: the fillings' tag, ``holes_fill_tagged``): it tells their pages apart as the
    bodies would, and the 80 KB page is not hashed per request."""
    return quote_etag(
        hashlib.md5(f"{shared_tag}:{filled}".encode(), usedforsecurity=False).hexdigest()
    )


def _personal(response, state: str):
    response[CACHE_HEADER] = state
    patch_vary_headers(response, ("Cookie",))
    patch_cache_control(response, private=True)
    return response


# The message storages Django ships (cookie, session, and the first then the second).
_DJANGO_MESSAGE_STORAGES = frozenset(
    f"django.contrib.messages.storage.{name}"
    for name in ("fallback.FallbackStorage", "cookie.CookieStorage", "session.SessionStorage")
)

# Beyond these, a query string is none a view keeps (each keeps one or two short parameters).
_MAX_EARLY_QUERY = 100
_MAX_EARLY_PARAMETERS = 4


def _csrf_cookie_well_formed(request) -> bool:
    """Whether ``request`` has no CSRF cookie or one of the shape Django makes (a malformed
    one is replaced by ``CsrfViewMiddleware`` on the way out, which the early path skips)."""
    cookie = request.COOKIES.get(settings.CSRF_COOKIE_NAME)
    if cookie is None:
        return True
    try:
        _check_token_format(cookie)
    except InvalidTokenFormat:
        return False
    return True


class PageCacheMiddleware:
    """Serve an anonymous reader this process's copy of a shared page before the rest of the
    middleware stack runs (sessions, CSRF, authentication, messages, history, allauth) and
    before the URL is resolved: none of it can change a page that is shared.

    Goes after ``SecurityMiddleware``, django-csp's, the ETag middleware and WhiteNoise (their
    headers, 304s and static files still apply to every hit) and before
    ``SessionMiddleware``. A request is answered here only when :func:`cache_anonymous_page`
    would answer it from the cache too: ``GET`` or ``HEAD``, no session or message cookie (nor
    a malformed CSRF cookie, which the CSRF middleware replaces), a short query string, and
    a copy this process keeps (the ``pages`` cache) under the address's key, carrying the
    current site-wide version (read from Redis on every request, so a change shows at once).
    Only a view's canonical addresses are ever kept, so the address key needs no knowledge of
    the view (:func:`_address_key` with any parameter names). A signed-in reader is answered
    here from the copy signed-in readers share when Django's authentication would accept the
    session as it is (:meth:`_reader_hit`). Everything else (no copy here, an old version,
    Redis down, a session the early path cannot judge) goes on down the stack unchanged, to
    the view's decorator, which renders, shares and keeps copies as before.

    A hit carries what the stack below would have added to a shared page:
    ``X-Frame-Options`` (Django's clickjacking middleware, when installed),
    ``Content-Length`` (``CommonMiddleware``), ``Vary: Cookie`` and the kept ``ETag``
    (``tests/test_pagecache.py`` compares a hit's headers with the full stack's).
    """

    def __init__(self, get_response):
        from django.contrib.messages.middleware import MessageMiddleware
        from django.contrib.sessions.middleware import SessionMiddleware
        from django.middleware.clickjacking import XFrameOptionsMiddleware
        from django.middleware.csrf import CsrfViewMiddleware

        self.get_response = get_response
        installed = settings.MIDDLEWARE
        self._xframe = (
            XFrameOptionsMiddleware(get_response)
            if "django.middleware.clickjacking.XFrameOptionsMiddleware" in installed
            else None
        )
        # A signed-in reader's hit runs these middlewares' own hooks (the stack below them is
        # skipped); without any of them installed, signed-in readers take the full stack.
        self._reader_stack = (
            (
                SessionMiddleware(get_response),
                CsrfViewMiddleware(get_response),
                MessageMiddleware(get_response),
            )
            if all(
                path in installed
                for path in (
                    "django.contrib.sessions.middleware.SessionMiddleware",
                    "django.middleware.csrf.CsrfViewMiddleware",
                    "django.contrib.auth.middleware.AuthenticationMiddleware",
                    "django.contrib.messages.middleware.MessageMiddleware",
                )
            )
            else None
        )

    def __call__(self, request):
        response = self._hit(request)
        return self.get_response(request) if response is None else response

    def _hit(self, request):
        if "pages" not in settings.CACHES:
            return None
        query = request.META.get("QUERY_STRING", "")
        if len(query) > _MAX_EARLY_QUERY or query.count("&") >= _MAX_EARLY_PARAMETERS:
            # No view keeps such an address; parsing it is the view's business (Django's
            # limit on parameters answers 400 only where a view reads them).
            return None
        if not _csrf_cookie_well_formed(request):
            return None  # the CSRF middleware below replaces it
        if settings.SESSION_COOKIE_NAME in request.COOKIES:
            return self._reader_hit(request)
        if not settings.PAGE_CACHE_SECONDS:
            return None
        key = _cache_key(request, None)
        if key is None:
            return None
        copy = caches["pages"].get(key)
        if copy is None:
            return None
        version = cache.get(VERSION_KEY)
        if version is None or copy[0] != version:
            return None
        response = _kept_response(copy, lambda content: content, etag=True)
        response[CACHE_HEADER] = "hit"
        patch_vary_headers(response, ("Cookie",))
        response["Content-Length"] = str(len(response.content))
        if self._xframe is not None:
            response = self._xframe.process_response(request, response)
        return response

    def _reader_hit(self, request):
        """A signed-in reader's page from this process's copy of the page signed-in readers
        share, its holes filled, or ``None`` (the full stack then answers). Served only when
        the view's decorator would serve the same copy: a ``GET`` or ``HEAD`` with no message
        cookie, a copy kept here under the address's reader key with the current site-wide
        version, and a session whose user Django's authentication would give without doing
        anything else (``topicsite.readers``; with flash messages in the session the full
        stack shows them). The user and the holes' statements are read in one round trip.
        The request then goes through the hooks of the session, CSRF and messages
        middlewares as below, with the user set as the authentication middleware would set
        it; URL resolution, the rest of the stack and the view are skipped: none of them
        changes a shared copy's filling (a test compares a hit with the full stack's answer,
        headers and body)."""
        stack = self._reader_stack
        if (
            stack is None
            or not settings.READER_PAGE_CACHE_SECONDS
            or request.method not in ("GET", "HEAD")
            or "messages" in request.COOKIES
        ):
            return None
        key = _address_key(request, None, "reader")
        if key is None:
            return None
        copy = caches["pages"].get(key)
        if copy is None:
            return None
        sessions, csrf, messages = stack
        session = sessions.SessionStore(request.COOKIES[settings.SESSION_COOKIE_NAME])
        # The session's cached copy (topicsite.sessions) in the version's round trip.
        session_key = getattr(session, "cache_key_if_valid", None)
        if session_key is None or settings.SESSION_CACHE_ALIAS != DEFAULT_CACHE_ALIAS:
            version = cache.get(VERSION_KEY)
        else:
            session_key = session_key()
            found = cache.get_many(
                [VERSION_KEY] if session_key is None else [VERSION_KEY, session_key]
            )
            version = found.get(VERSION_KEY)
            if session_key is not None:
                session.take_cached(found.get(session_key))
        if version is None or copy[0] != version:
            return None
        if "_messages" in session:
            return None
        named = session_user(session)
        if named is None:
            return None
        pk, backend = named
        shared = _pieces_of(copy)
        found = holes_found(shared)
        # The user and the holes' statements in one round trip; the statements are for the
        # user the session names, and are thrown away unless Django would accept that user.
        # The session's row is confirmed in the same round trip: a copy that outlived it (a
        # log-out Redis did not hear of) is deleted and the request goes down the stack.
        user_read = user_statement(pk)
        live = getattr(session, "live_statement", lambda: None)()
        also = tuple(statement for statement in (live, user_read) if statement is not None)
        rows, also_rows = holes_read(found, pk, also)
        if live is not None and not also_rows[0]:
            session.forget_cached()
            return None
        user = user_by_pk(pk) if user_read is None else user_from_rows(user_read[0], also_rows[-1])
        if not user_accepted(user, session, backend):
            return None
        request.session = session
        request.user = user
        csrf.process_request(request)
        # Django's own message storages hold nothing for a request with no message cookie
        # and no messages in its session: their middleware's hooks would find none and write
        # nothing (the messages hole is then empty). Another storage gets its hooks.
        with_messages = settings.MESSAGE_STORAGE not in _DJANGO_MESSAGE_STORAGES
        if with_messages:
            messages.process_request(request)
        html, filled = holes_fill_found(request, shared, found, rows)
        response = HttpResponse(html, content_type=copy[1])
        if len(copy) > 3 and copy[3]:
            response["ETag"] = _filled_etag(copy[3], filled)
        response = _personal(response, "hit")
        response["Content-Length"] = str(len(response.content))
        if self._xframe is not None:
            response = self._xframe.process_response(request, response)
        if with_messages:
            response = messages.process_response(request, response)
        response = csrf.process_response(request, response)
        return sessions.process_response(request, response)
