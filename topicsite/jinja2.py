"""The Jinja2 environment of the few hot fragments rendered with Jinja2
(``jinja_templates/``): the paper cards, drawn 30 to a topic page and a feed page, where
Django's template engine spent most of the page's time (see ``bench/README.md``). Everything
else is a Django template.

Django's Jinja2 backend autoescapes; the filters below return ``SafeString`` (which Jinja2
honours through ``__html__``) only for markup they built from escaped text.
"""

import datetime as dt

from django.templatetags.static import static
from django.urls import reverse
from django.utils.html import linebreaks as _linebreaks
from django.utils.text import Truncator
from jinja2 import Environment
from markupsafe import Markup

from .bidi import isolate


def short_date(value: dt.date) -> str:
    """``Nov 3, 2026``: as Django's ``date:"M j, Y"`` in English, without its format lookups."""
    return f"{value:%b} {value.day}, {value.year}"


def truncatewords(value: str, length: int) -> str:
    """The first ``length`` words of ``value`` and `` …`` when it had more (as Django's
    ``truncatewords`` filter); plain text, escaped on output."""
    return Truncator(value).words(length, truncate=" …")


def linebreaks(value: str) -> Markup:
    """``value`` escaped, its blank-line-separated paragraphs in ``<p>`` and single newlines as
    ``<br>`` (as Django's ``linebreaks`` filter), marked safe for Jinja2: the function returns
    a plain ``str`` with the text already escaped, which Jinja2 would escape again."""
    return Markup(_linebreaks(value, autoescape=True))  # noqa: S704 - escaped just above


def url(name: str, **kwargs) -> str:
    """``reverse(name, kwargs=kwargs)``."""
    return reverse(name, kwargs=kwargs or None)


def environment(**options) -> Environment:
    """The environment Django's ``Jinja2`` backend builds (``TEMPLATES[1]`` in settings)."""
    env = Environment(**options)
    env.globals.update({"static": static, "url": url})
    env.filters.update(
        {
            "short_date": short_date,
            "truncatewords": truncatewords,
            "linebreaks": linebreaks,
            "isolate": isolate,
        }
    )
    return env
