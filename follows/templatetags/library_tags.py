"""Template tags of the reader's library that other apps' pages use (``papers`` and
``topics`` know nothing of follows; their templates load this library).

Paper cards are rendered once for every reader and cached (``topics.views``), so a card holds
no reader's state: it ends with an empty slot, ``<!--card-actions:<paper id>-->``
(``jinja_templates/topics/_paper_card.html``), a personal hole (``topicsite.holes``).
``{% librarycards %}…{% endlibrarycards %}`` fills the slots of the cards inside it with each
paper's Save button (``follows.holes.save_buttons``: the saved state of all of them in one
query), or leaves them for the page cache to fill when the page is rendered to be shared.
"""

from __future__ import annotations

from django import template
from django.utils.safestring import mark_safe

from topicsite.holes import HOLE, hole_html, holes_shared

from ..holes import save_buttons

register = template.Library()


@register.simple_tag(takes_context=True)
def save_button(context, paper):
    """``{% save_button paper %}``: the Save / Saved toggle of ``paper`` (a Paper or a
    card: anything with ``pk``; see ``follows.holes.save_buttons``), a personal hole left as
    it is when the page is rendered to be shared. One query signed in."""
    return hole_html(context.get("request"), "card-actions", paper.pk)


class LibraryCardsNode(template.Node):
    def __init__(self, nodelist):
        self.nodelist = nodelist

    def render(self, context):
        html = self.nodelist.render(context)
        request = context.get("request")
        if request is None or holes_shared(request):
            return html
        ids = [arg for name, arg in HOLE.findall(html) if name == "card-actions"]
        if not ids:
            return html
        buttons = save_buttons(request, ids)

        def fill(match):
            if match.group(1) != "card-actions":
                return match.group(0)
            return buttons.get(match.group(2), "")

        return mark_safe(HOLE.sub(fill, html))  # noqa: S308 - our own templates' output


@register.tag("librarycards")
def librarycards(parser, token):
    """``{% librarycards %}…{% endlibrarycards %}``: the content with every card's actions
    slot filled with its Save button (see the module docstring); one query for all the
    cards of a signed-in reader, none otherwise."""
    nodelist = parser.parse(("endlibrarycards",))
    parser.delete_first_token()
    return LibraryCardsNode(nodelist)
