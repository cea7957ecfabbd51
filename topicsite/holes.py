"""Personal holes: the few reader-specific parts of a page that signed-in readers otherwise
share (the user menu and its CSRF token, flash messages, a Follow button's state, the cards'
Save buttons), so that the rest of the page can be rendered once and kept
(``topicsite.pagecache.cache_anonymous_page(signed_in=True)``).

A hole is an HTML comment ``<!--name:arg-->`` (``arg`` a pk or a slug, possibly empty) that
a template writes where the personal part goes. Readers' text never produces one: templates
escape ``<``. Each name has one **filler**, registered by the app that owns the part
(:func:`hole_filler`, from its ``AppConfig.ready``): ``filler(request, args) -> {arg: html}``
for every ``arg`` of that name on the page at once, so a page of 30 cards costs one query, not
30. A filler must read nothing but ``request`` (its user, session, CSRF token) and the args.

A filler that reads the database may say so with its statement (``hole_filler(name,
read=...)``): ``read(user_id, args) -> (alias, sql, params) | None``, depending only on the
reader's primary key (``None`` when not signed in) and the args. The statements of every
filler on a page are then sent together, in one round trip (:func:`holes_read`,
``topicsite.readers.read_together``), and each such filler is called with its statement's rows
as a third argument (``None`` when ``read`` gave none): a signed-in page view of a Follow
button and thirty Save buttons waits for the database once, not once a filler.

Templates call :func:`hole_html` (the ``{% personal %}`` tag): when the page is rendered to
be shared (:func:`holes_share`), it writes the hole; otherwise it fills it at once, so a page
rendered for one reader and a shared page filled for that reader are the same HTML.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

from django.conf import settings
from django.contrib.messages import get_messages
from django.middleware.csrf import get_token
from django.templatetags.static import static
from django.urls import get_script_prefix, get_urlconf, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from .readers import read_together

__all__ = [
    "HOLE",
    "csrf_token",
    "hole",
    "hole_filler",
    "hole_html",
    "hole_static",
    "hole_url",
    "holes_fill",
    "holes_fill_found",
    "holes_fill_tagged",
    "holes_found",
    "holes_read",
    "holes_split",
    "holes_share",
    "holes_shared",
]

HOLE = re.compile(r"<!--([a-z][a-z-]*):([A-Za-z0-9_.-]*)-->")
Filler = Callable[..., dict[str, str]]
# A filler's statement: (database alias, SQL with %s placeholders, parameters).
Statement = tuple[str, str, list]
Read = Callable[[object, list[str]], Statement | None]
_FILLERS: dict[str, Filler] = {}
_READS: dict[str, Read] = {}
_SHARED_ATTRIBUTE = "_holes_shared"


def hole_filler(name: str, *, read: Read | None = None) -> Callable[[Filler], Filler]:
    """Register the decorated ``filler(request, args: list[str]) -> {arg: html}`` for holes
    called ``name`` (lower-case letters and hyphens); with ``read`` (see the module
    docstring), ``filler(request, args, rows)``. Registering a name again replaces it."""

    def register(filler: Filler) -> Filler:
        _FILLERS[name] = filler
        if read is None:
            _READS.pop(name, None)
        else:
            _READS[name] = read
        return filler

    return register


def _fill(request, name: str, args: list[str], rows: dict) -> dict[str, str]:
    """``name``'s filler called for ``args``, with its statement's rows if it reads."""
    if name in _READS:
        return _FILLERS[name](request, args, rows.get(name))
    return _FILLERS[name](request, args)


def holes_split(html: str) -> list[str]:
    """``html`` cut at its holes (any name): ``[text, name, arg, text, name, arg, ...,
    text]`` (``HOLE.split``). A page kept to be filled again and again is cut once and its
    pieces filled each time (:func:`holes_found`, :func:`holes_fill_found`), without
    searching its 80 KB for holes on every request."""
    return HOLE.split(html)


def holes_found(html: str | list[str]) -> dict[str, list[str]]:
    """``{name: [arg, ...]}`` of the registered holes in ``html`` (or in its pieces,
    :func:`holes_split`), each arg once, in order."""
    pieces = holes_split(html) if isinstance(html, str) else html
    found: dict[str, list[str]] = {}
    for index in range(1, len(pieces), 3):
        name = pieces[index]
        if name in _FILLERS:
            args = found.setdefault(name, [])
            arg = pieces[index + 1]
            if arg not in args:
                args.append(arg)
    return found


def holes_read(
    found: dict[str, list[str]], user_id, also: tuple[Statement, ...] = ()
) -> tuple[dict[str, list], list[list]]:
    """``({name: rows}, [rows of each of also])``: the statements of the fillers of
    ``found`` that read (for the reader whose primary key is ``user_id``) and the statements
    ``also``, sent together: one round trip a database (``topicsite.readers.read_together``).
    """
    named = []
    for name, args in found.items():
        read = _READS.get(name)
        statement = None if read is None else read(user_id, args)
        if statement is not None:
            named.append((name, statement))
    statements = [statement for _name, statement in named] + list(also)
    by_alias: dict[str, list[int]] = {}
    for index, (alias, _sql, _params) in enumerate(statements):
        by_alias.setdefault(alias, []).append(index)
    results: list = [None] * len(statements)
    for alias, indexes in by_alias.items():
        rows = read_together(alias, [statements[i][1:] for i in indexes])
        for index, found_rows in zip(indexes, rows, strict=True):
            results[index] = found_rows
    return (
        {name: results[index] for index, (name, _statement) in enumerate(named)},
        results[len(named) :],
    )


def csrf_token(request) -> str:
    """``django.middleware.csrf.get_token(request)``, masked once per request and CSRF
    secret: every form a page's holes fill (the log-out form, a Follow button, thirty Save
    buttons) carries the same token, where each ``get_token`` call would draw a new 32-character
    mask. A secret rotated during the request (log-in) gets a new token."""
    secret = request.META.get("CSRF_COOKIE")
    kept = getattr(request, "_holes_csrf_token", None)
    if kept is not None and secret is not None and kept[0] == secret:
        return kept[1]
    token = get_token(request)
    request._holes_csrf_token = (request.META.get("CSRF_COOKIE"), token)
    return token


# Addresses the fillers reverse on every signed-in page view, kept per process: Django's
# reverse and static cost 20-40 µs a call there, a fifth of a Follow button's filling.
_ADDRESSES: dict[tuple, str] = {}
_ADDRESSES_KEPT = 4096


def _kept_address(key: tuple, make: Callable[[], str]) -> str:
    address = _ADDRESSES.get(key)
    if address is None:
        address = make()
        if len(_ADDRESSES) >= _ADDRESSES_KEPT:
            _ADDRESSES.clear()
        _ADDRESSES[key] = address
    return address


def hole_url(name: str, **kwargs) -> str:
    """``reverse(name, kwargs=kwargs)``, kept per process for the URL configuration and
    script prefix in force (a filler's log-out, follow and save addresses). Raises
    ``NoReverseMatch`` as ``reverse`` does."""
    key = (
        settings.ROOT_URLCONF,
        get_urlconf(),
        get_script_prefix(),
        name,
        tuple(sorted(kwargs.items())),
    )
    return _kept_address(key, lambda: reverse(name, kwargs=kwargs or None))


def hole_static(path: str) -> str:
    """``static(path)`` (the static file's address), kept per process for the static
    settings in force."""
    key = ("static", settings.STATIC_URL, repr(settings.STORAGES.get("staticfiles")), path)
    return _kept_address(key, lambda: static(path))


def hole(name: str, arg: object = "") -> SafeString:
    """The hole ``<!--name:arg-->``."""
    return mark_safe(f"<!--{name}:{arg}-->")  # noqa: S308 - a name and a pk or slug


def holes_share(request, shared: bool = True) -> None:
    """Render the rest of ``request``'s page to be shared: personal parts become holes."""
    setattr(request, _SHARED_ATTRIBUTE, shared)


def holes_shared(request) -> bool:
    """Whether ``request``'s page is being rendered to be shared (see :func:`holes_share`)."""
    return getattr(request, _SHARED_ATTRIBUTE, False)


def hole_html(request, name: str, arg: object = "") -> SafeString:
    """The hole when ``request``'s page is shared, else its filling for ``request``."""
    if request is None or holes_shared(request):
        return hole(name, arg)
    args = [str(arg)]
    rows = holes_read({name: args}, _user_id(request))[0] if name in _READS else {}
    return mark_safe(_fill(request, name, args, rows).get(str(arg), ""))  # noqa: S308


def _user_id(request):
    """The primary key of ``request``'s reader, or ``None`` when not signed in."""
    user = getattr(request, "user", None)
    return user.pk if user is not None and user.is_authenticated else None


def holes_fill(request, html: str) -> str:
    """``html`` with every registered hole filled for ``request`` (one filler call per name,
    with all that name's args); holes of unregistered names stay as they are."""
    return holes_fill_tagged(request, html)[0]


def holes_fill_tagged(request, html: str) -> tuple[str, str]:
    """``(html filled as by holes_fill, tag)``: ``tag`` is an MD5 hex digest of the fillings
    alone (empty when nothing was filled), so that ``(html's own tag, tag)`` tells filled pages
    apart as their bodies would, without hashing the whole page (``topicsite.pagecache``'s
    ``ETag`` of a signed-in reader's page)."""
    found = holes_found(html)
    if not found:
        return html, ""
    return holes_fill_found(request, html, found, holes_read(found, _user_id(request))[0])


def holes_fill_found(
    request, html: str | list[str], found: dict[str, list[str]], rows: dict[str, list]
) -> tuple[str, str]:
    """:func:`holes_fill_tagged` for the holes ``found`` in ``html`` (or in its pieces,
    :func:`holes_split`; :func:`holes_found`), whose statements' rows (:func:`holes_read`,
    for ``request``'s reader) are ``rows``."""
    pieces = holes_split(html) if isinstance(html, str) else html
    if not found:
        return "".join(_unfilled(pieces)), ""
    filled = {name: _fill(request, name, args, rows) for name, args in found.items()}
    out = [pieces[0]]
    for index in range(1, len(pieces), 3):
        name, arg = pieces[index], pieces[index + 1]
        fillings = filled.get(name)
        out.append(f"<!--{name}:{arg}-->" if fillings is None else fillings.get(arg, ""))
        out.append(pieces[index + 2])
    tag = hashlib.md5(usedforsecurity=False)
    for name, args in found.items():
        fillings = filled[name]
        for arg in args:
            tag.update(f"{name}\0{arg}\0{fillings.get(arg, '')}\0".encode())
    return "".join(out), tag.hexdigest()


def _unfilled(pieces: list[str]):
    """The text of ``pieces`` (:func:`holes_split`) with every hole as it was."""
    yield pieces[0]
    for index in range(1, len(pieces), 3):
        yield f"<!--{pieces[index]}:{pieces[index + 1]}-->"
        yield pieces[index + 2]


@hole_filler("user-menu")
def _user_menu(request, args: list[str]) -> dict[str, str]:
    """Who is signed in and the log-out form (its CSRF token; back to this page, except from
    the account pages); nothing for a reader not signed in (``base.html`` links to log in)."""
    user = request.user
    if not user.is_authenticated:
        return dict.fromkeys(args, "")
    path = request.path
    next_field = (
        ""
        if path.startswith("/accounts/")
        else format_html('<input type="hidden" name="next" value="{}">', path)
    )
    html = format_html(
        '<span class="signed-in-as">{}</span>\n'
        '        <form method="post" action="{}" class="inline-form">\n'
        '          <input type="hidden" name="csrfmiddlewaretoken" value="{}">\n'
        "          {}\n"
        '          <button type="submit" class="link-button">Log out</button>\n'
        "        </form>",
        user.email or user.get_username(),
        hole_url("account_logout"),
        csrf_token(request),
        next_field,
    )
    return dict.fromkeys(args, html)


@hole_filler("messages")
def _messages(request, args: list[str]) -> dict[str, str]:
    """The reader's flash messages (read, so shown once), or nothing."""
    shown = list(get_messages(request))
    if not shown:
        return dict.fromkeys(args, "")
    html = format_html(
        '<ul class="messages" role="status">\n        {}\n      </ul>',
        format_html_join("", "<li>{}</li>", ((message,) for message in shown)),
    )
    return dict.fromkeys(args, html)
