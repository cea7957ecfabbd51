"""Template tags of the reader's library that other apps' pages use (``papers`` and
``topics`` know nothing of follows; their templates load this library).

Paper cards are rendered once for every reader and cached (``topics.views``), so a card holds
no reader's state: it ends with an empty slot, ``<!--card-actions:<paper id>-->``
(``jinja_templates/topics/_paper_card.html``). ``{% librarycards %}…{% endlibrarycards %}``
fills the slots of the cards inside it with each paper's Save button, reading the saved
state of all of them in one query.
"""

from __future__ import annotations

import re

from django import template
from django.middleware.csrf import get_token
from django.template.loader import get_template
from django.utils.safestring import mark_safe

from ..library_selectors import library_states

register = template.Library()

CARD_SLOT = re.compile(r"<!--card-actions:(\d+)-->")
_BUTTON = "follows/_save_button.html"


def _button_context(
    request, paper_id: int, state: bool | None, *, with_script: bool = True
) -> dict:
    """What ``follows/_save_button.html`` needs: ``state`` None (not saved), False (saved,
    unread) or True (saved, read)."""
    user = request.user
    return {
        "paper_id": paper_id,
        "signed_in": user.is_authenticated,
        "saved": state is not None,
        "read": bool(state),
        "request_path": request.get_full_path(),
        "csrf_token": get_token(request) if user.is_authenticated else "",
        # static/js/library.js, once per page of cards rather than once per card.
        "with_script": with_script,
    }


@register.simple_tag(takes_context=True)
def save_button(context, paper):
    """``{% save_button paper %}``: the Save / Saved toggle of ``paper`` (a Paper or a
    card: anything with ``pk``) for a signed-in reader, a POST form (``static/js/library.js``
    submits it in place); for anyone else a "Save" link to the log-in page that comes back
    here (no form, so a cached anonymous page holds no CSRF token). One query signed in."""
    request = context["request"]
    state = library_states(user=request.user, paper_ids=[paper.pk]).get(paper.pk)
    return get_template(_BUTTON).render(_button_context(request, paper.pk, state))


class LibraryCardsNode(template.Node):
    def __init__(self, nodelist):
        self.nodelist = nodelist

    def render(self, context):
        html = self.nodelist.render(context)
        request = context.get("request")
        if request is None:
            return html
        ids = [int(found) for found in CARD_SLOT.findall(html)]
        if not ids:
            return html
        states = library_states(user=request.user, paper_ids=ids)
        button = get_template(_BUTTON)
        rendered: dict[int, str] = {}

        def fill(match: re.Match) -> str:
            paper_id = int(match.group(1))
            if paper_id not in rendered:
                rendered[paper_id] = button.render(
                    _button_context(
                        request, paper_id, states.get(paper_id), with_script=not rendered
                    )
                )
            return rendered[paper_id]

        return mark_safe(CARD_SLOT.sub(fill, html))  # noqa: S308 - our own templates' output


@register.tag("librarycards")
def librarycards(parser, token):
    """``{% librarycards %}…{% endlibrarycards %}``: the content with every card's actions
    slot filled with its Save button (see the module docstring); one query for all the
    cards of a signed-in reader, none otherwise."""
    nodelist = parser.parse(("endlibrarycards",))
    parser.delete_first_token()
    return LibraryCardsNode(nodelist)
