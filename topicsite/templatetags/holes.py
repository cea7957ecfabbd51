"""``{% personal "name" arg %}``: a personal part of a page (``topicsite.holes``): its hole
when the page is rendered to be shared, else its filling for the reader of the request."""

from django import template

from ..holes import hole_html

register = template.Library()


@register.simple_tag(takes_context=True)
def personal(context, name, arg=""):
    """The personal part ``name`` (with ``arg``, a pk or a slug) for this page's reader."""
    return hole_html(context.get("request"), name, arg)
