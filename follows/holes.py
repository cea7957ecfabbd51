"""The follows app's personal holes (``topicsite.holes``) in pages readers share: a topic's
Follow button (``<!--follow-topic:<topic pk>-->``) and the Save button at the end of every
paper card (``<!--card-actions:<paper pk>-->``, ``jinja_templates/topics/_paper_card.html``).
Registered from ``FollowsConfig.ready``; each filler reads all its holes of a page at once.
"""

from __future__ import annotations

from html import escape as escape_text
from urllib.parse import quote

from django.utils.html import escape

from topicsite.holes import csrf_token, hole_filler, hole_static, hole_url
from topicsite.readers import read_statement

from .library_selectors import library_states_from_rows, library_states_statement
from .selectors import topic_follow_states_from_rows, topic_follow_states_statement

__all__ = ["follow_topic_buttons", "save_buttons"]

# A number no paper id is near: the save address is reversed once and the id put in its place.
_ID_MARK = "9070605040302010"
_READ_BADGE = ' <span class="read-badge">Read</span>'


def _save_end(state) -> str:
    """The end of a Save button's form for a paper's library state (``None``: not saved;
    ``False``: saved, unread; ``True``: read)."""
    saved = state is not None
    return (
        f'  <input type="hidden" name="action" value="{"remove" if saved else "save"}">\n'
        f'  <button type="submit" class="save-button" '
        f'aria-pressed="{"true" if saved else "false"}" '
        f'title="{"In your library: press to remove" if saved else "Save to your library"}">'
        f"{'Saved' if saved else 'Save'}</button>"
        f"{_READ_BADGE if state else ''}\n"
        f"</form>"
    )


_SAVE_ENDS = {state: _save_end(state) for state in (None, False, True)}


def _follow_read(user_id, args: list[str]):
    return topic_follow_states_statement(user_id, [arg for arg in args if arg.isdigit()])


def _save_read(user_id, args: list[str]):
    return library_states_statement(user_id, [arg for arg in args if arg.isdigit()])


@hole_filler("follow-topic", read=_follow_read)
def follow_topic_buttons(request, args: list[str], rows=None) -> dict[str, str]:
    """``{topic pk: its Follow button}`` for the topics of ``args`` (pks as text): the
    follower count ("12 followers", never who they are) and, for a signed-in reader, a POST
    form whose button reads "Follow this topic", or "Unfollow this topic" when they follow it
    (``static/js/follow.js`` submits it in place); for anyone else a "Follow this topic" link
    to the log-in page that continues to the topic's follow confirmation page (no form, so an
    anonymous page holds no CSRF token). One query, whatever the number of topics (its
    ``rows`` when given, sent with the page's other holes' statements); built in Python, not by
    a template: it is on every signed-in topic page view."""
    user = request.user
    if rows is None:
        statement = _follow_read(user.pk if user.is_authenticated else None, args)
        rows = read_statement(statement)
    states = topic_follow_states_from_rows(rows)
    buttons = {}
    for pk, (slug, count, following) in states.items():
        followers = f"{count} follower{'' if count == 1 else 's'}"
        if not user.is_authenticated:
            confirm = quote(hole_url("follows:confirm", slug=slug), safe="/")
            login = f"{hole_url('account_login')}?next={confirm}"
            buttons[str(pk)] = (
                f'<p class="follow-form">\n  <a class="button-link" href="{escape(login)}">'
                f'Follow this topic<span class="visually-hidden"> (log in first)</span></a>\n'
                f'  <span class="followers">{followers}</span>\n</p>'
            )
            continue
        action, label = ("unfollow", "Unfollow") if following else ("follow", "Follow")
        toggle = hole_url("follows:toggle", slug=slug)
        token = csrf_token(request)
        buttons[str(pk)] = (
            f'<form method="post" action="{escape(toggle)}" class="follow-form">\n'
            f'  <input type="hidden" name="csrfmiddlewaretoken" value="{escape(token)}">\n'
            f'  <input type="hidden" name="action" value="{action}">\n'
            f'  <button type="submit" aria-pressed="{"true" if following else "false"}">'
            f"{label} this topic</button>\n"
            f'  <span class="followers" aria-live="polite">{followers}</span>\n'
            f"</form>\n"
            f'<script src="{escape(hole_static("js/follow.js"))}" defer></script>'
        )
    return buttons


@hole_filler("card-actions", read=_save_read)
def save_buttons(request, args: list[str], rows=None) -> dict[str, str]:
    """``{paper pk: its Save / Saved toggle}`` for the papers of ``args`` (pks as text): for
    a signed-in reader a POST form (``static/js/library.js`` submits it in place; the script
    once, after the first), for anyone else a "Save" link to the log-in page that comes back
    here (no form, so an anonymous page holds no CSRF token). One query signed in (its
    ``rows`` when given), none otherwise; no template rendered per card."""
    ids = [int(arg) for arg in args if arg.isdigit()]
    user = request.user
    here = request.get_full_path()
    if not user.is_authenticated:
        link = (
            f'<p class="save-form"><a class="button-link save-button" '
            f'href="{escape(hole_url("account_login"))}?next={escape(quote(here, safe="/"))}">'
            f'Save<span class="visually-hidden"> to your library (log in first)</span></a></p>'
        )
        return {str(pk): link for pk in ids}
    if rows is None:
        statement = _save_read(user.pk, args)
        rows = read_statement(statement)
    states = library_states_from_rows(rows)
    # Plain text (the stdlib's escape, Django's without the safe-string mark): thirty cards
    # format it without a Python-level __str__ call each time.
    head, tail = (
        escape_text(part)
        for part in hole_url("library:save", paper_id=int(_ID_MARK)).split(_ID_MARK)
    )
    start = f'<form method="post" action="{head}'
    token = escape_text(csrf_token(request))
    middle = (
        f'{tail}" class="save-form">\n'
        f'  <input type="hidden" name="csrfmiddlewaretoken" value="{token}">\n'
        f'  <input type="hidden" name="next" value="{escape_text(here)}">\n'
    )
    script = f'\n<script src="{escape_text(hole_static("js/library.js"))}" defer></script>'
    buttons = {}
    for pk in ids:
        state = states.get(pk)  # None: not saved; False: saved, unread; True: read
        buttons[str(pk)] = f"{start}{pk}{middle}{_SAVE_ENDS[state]}{script if not buttons else ''}"
    return buttons
