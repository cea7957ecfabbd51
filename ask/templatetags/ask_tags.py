"""Template tags ``ask`` lends to other apps' pages (the topic page's ask box)."""

from django import template

from ..forms import AskForm

register = template.Library()


@register.inclusion_tag("ask/_ask_box.html")
def ask_box(topic):
    """``{% ask_box topic %}``: the ask box, a GET form to the topic's ask page (works without
    JavaScript), and a place where ``static/js/ask.js`` shows progress and the answer. No
    queries."""
    return {"topic": topic, "form": AskForm(auto_id="ask-box-%s", topic=topic)}
