"""The follows app's personal holes (``topicsite.holes``) in pages readers share: a topic's
Follow button (``<!--follow-topic:<topic pk>-->``) and the Save button at the end of every
paper card (``<!--card-actions:<paper pk>-->``, ``jinja_templates/topics/_paper_card.html``).
Registered from ``FollowsConfig.ready``; each filler reads all its holes of a page at once.
"""

from __future__ import annotations

from urllib.parse import quote

from django.middleware.csrf import get_token
from django.template.loader import get_template
from django.templatetags.static import static
from django.urls import reverse
from django.utils.html import escape

from topicsite.holes import hole_filler

from .library_selectors import library_states
from .selectors import topic_follow_states

__all__ = ["follow_topic_buttons", "save_buttons"]

# A number no paper id is near: the save address is reversed once and the id put in its place.
_ID_MARK = "9070605040302010"
_READ_BADGE = ' <span class="read-badge">Read</span>'


@hole_filler("follow-topic")
def follow_topic_buttons(request, args: list[str]) -> dict[str, str]:
    """``{topic pk: its Follow button}`` (``follows/_follow_button.html``: the follower count,
    "Follow" / "Unfollow" for a signed-in reader, a log-in link for anyone else) for the
    topics of ``args`` (pks as text). One query, whatever the number of topics."""
    user = request.user
    states = topic_follow_states(user=user, topic_ids=[arg for arg in args if arg.isdigit()])
    template = get_template("follows/_follow_button.html")
    return {
        str(pk): template.render(
            {
                "topic": {"slug": slug},
                "follower_count": count,
                "following": following,
                "signed_in": user.is_authenticated,
                "request_path": request.path,
            },
            request,
        )
        for pk, (slug, count, following) in states.items()
    }


@hole_filler("card-actions")
def save_buttons(request, args: list[str]) -> dict[str, str]:
    """``{paper pk: its Save / Saved toggle}`` for the papers of ``args`` (pks as text): for
    a signed-in reader a POST form (``static/js/library.js`` submits it in place; the script
    once, after the first), for anyone else a "Save" link to the log-in page that comes back
    here (no form, so an anonymous page holds no CSRF token). One query signed in, none
    otherwise; no template rendered per card."""
    ids = [int(arg) for arg in args if arg.isdigit()]
    user = request.user
    here = request.get_full_path()
    if not user.is_authenticated:
        link = (
            f'<p class="save-form"><a class="button-link save-button" '
            f'href="{escape(reverse("account_login"))}?next={escape(quote(here, safe="/"))}">'
            f'Save<span class="visually-hidden"> to your library (log in first)</span></a></p>'
        )
        return {str(pk): link for pk in ids}
    states = library_states(user=user, paper_ids=ids)
    head, tail = reverse("library:save", kwargs={"paper_id": int(_ID_MARK)}).split(_ID_MARK)
    token = escape(get_token(request))
    next_value = escape(here)
    script = f'\n<script src="{escape(static("js/library.js"))}" defer></script>'
    buttons = {}
    for pk in ids:
        state = states.get(pk)  # None: not saved; False: saved, unread; True: read
        saved = state is not None
        buttons[str(pk)] = (
            f'<form method="post" action="{escape(head)}{pk}{escape(tail)}" class="save-form">\n'
            f'  <input type="hidden" name="csrfmiddlewaretoken" value="{token}">\n'
            f'  <input type="hidden" name="next" value="{next_value}">\n'
            f'  <input type="hidden" name="action" value="{"remove" if saved else "save"}">\n'
            f'  <button type="submit" class="save-button" '
            f'aria-pressed="{"true" if saved else "false"}" '
            f'title="{"In your library: press to remove" if saved else "Save to your library"}">'
            f"{'Saved' if saved else 'Save'}</button>"
            f"{_READ_BADGE if state else ''}\n"
            f"</form>{script if not buttons else ''}"
        )
    return buttons
