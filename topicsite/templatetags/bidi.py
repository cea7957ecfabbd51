"""``{% load bidi %}``: the ``isolate`` filter (``topicsite.bidi.isolate``)."""

from django import template

from topicsite.bidi import isolate as _isolate

register = template.Library()


@register.filter(is_safe=True)
def isolate(value):
    """``{{ paper.title|isolate }}``: escaped, and in a ``<bdi>`` when it holds text that could
    reorder what follows it."""
    return _isolate(value)
