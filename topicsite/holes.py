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

Templates call :func:`hole_html` (the ``{% personal %}`` tag): when the page is rendered to
be shared (:func:`holes_share`), it writes the hole; otherwise it fills it at once, so a page
rendered for one reader and a shared page filled for that reader are the same HTML.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

from django.contrib.messages import get_messages
from django.middleware.csrf import get_token
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

__all__ = [
    "HOLE",
    "csrf_token",
    "hole",
    "hole_filler",
    "hole_html",
    "holes_fill",
    "holes_fill_tagged",
    "holes_share",
    "holes_shared",
]

HOLE = re.compile(r"<!--([a-z][a-z-]*):([A-Za-z0-9_.-]*)-->")
Filler = Callable[..., dict[str, str]]
_FILLERS: dict[str, Filler] = {}
_SHARED_ATTRIBUTE = "_holes_shared"


def hole_filler(name: str) -> Callable[[Filler], Filler]:
    """Register the decorated ``filler(request, args: list[str]) -> {arg: html}`` for holes
    called ``name`` (lower-case letters and hyphens). Registering a name again replaces it."""

    def register(filler: Filler) -> Filler:
        _FILLERS[name] = filler
        return filler

    return register


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
    return mark_safe(_FILLERS[name](request, [str(arg)]).get(str(arg), ""))  # noqa: S308


def holes_fill(request, html: str) -> str:
    """``html`` with every registered hole filled for ``request`` (one filler call per name,
    with all that name's args); holes of unregistered names stay as they are."""
    return holes_fill_tagged(request, html)[0]


def holes_fill_tagged(request, html: str) -> tuple[str, str]:
    """``(html filled as by holes_fill, tag)``: ``tag`` is an MD5 hex digest of the fillings
    alone (empty when nothing was filled), so that ``(html's own tag, tag)`` tells filled pages
    apart as their bodies would, without hashing the whole page (``topicsite.pagecache``'s
    ``ETag`` of a signed-in reader's page)."""
    found: dict[str, list[str]] = {}
    for name, arg in HOLE.findall(html):
        if name in _FILLERS:
            args = found.setdefault(name, [])
            if arg not in args:
                args.append(arg)
    if not found:
        return html, ""
    filled = {name: _FILLERS[name](request, args) for name, args in found.items()}

    def fill(match: re.Match) -> str:
        name, arg = match.group(1), match.group(2)
        if name not in filled:
            return match.group(0)
        return filled[name].get(arg, "")

    fillings = repr(
        [(name, [(arg, filled[name].get(arg, "")) for arg in args]) for name, args in found.items()]
    )
    return HOLE.sub(fill, html), hashlib.md5(fillings.encode(), usedforsecurity=False).hexdigest()


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
        reverse("account_logout"),
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
