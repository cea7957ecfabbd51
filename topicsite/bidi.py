"""Bidirectional-text isolation for text from outside (titles, author and affiliation names).

A right-to-left override (U+202E) or an isolate left open (U+2067) in a stored title would
reorder what a page shows after it, and right-to-left letters next to the commas of an author
list can move those commas. :func:`isolate` puts such text in a ``<bdi>`` element, which the
Unicode bidi algorithm (UAX #9) treats as an isolate, so nothing outside it moves. Text with
only left-to-right and neutral characters, nearly all of it, is left as it is: a ``<bdi>`` there
changes nothing a reader sees and would split the text of every author list.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString

# Bidi classes (unicodedata.bidirectional) that can move text around them: right-to-left
# letters and every embedding, override and isolate control.
_MOVING = frozenset({"R", "AL", "RLE", "LRE", "RLO", "LRO", "PDF", "RLI", "LRI", "FSI", "PDI"})


@lru_cache(maxsize=4096)
def _moves(char: str) -> bool:
    return unicodedata.bidirectional(char) in _MOVING


def needs_isolation(text: str) -> bool:
    """True when ``text`` holds a right-to-left letter (or the right-to-left mark U+200F) or
    a bidi embedding, override or isolate control (U+202A–U+202E, U+2066–U+2069)."""
    # ASCII holds none of them (and str.isascii() reads a flag, not the characters).
    return not text.isascii() and any(_moves(char) for char in text)


def isolate(text: object) -> SafeString:
    """``text`` HTML-escaped, in ``<bdi>…</bdi>`` when :func:`needs_isolation`; safe markup
    for Django and Jinja2 templates alike. ``None`` gives an empty string."""
    if text is None:
        return SafeString("")
    value = str(text)
    if needs_isolation(value):
        return format_html("<bdi>{}</bdi>", value)
    return conditional_escape(value)
