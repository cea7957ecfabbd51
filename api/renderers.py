"""The API's JSON renderer: Django REST framework's ``JSONRenderer``, its bytes made by orjson.

A page of 100 papers is about 150 KB of JSON: ``json.dumps`` with DRF's encoder took about 1
ms of it at 1M papers (``bench/bench_api.py``), orjson a tenth. The output is the one DRF's
renderer gives (``api/tests/test_renderers.py`` compares them): compact, UTF-8 (the
``UNICODE_JSON`` and ``COMPACT_JSON`` defaults), U+2028 and U+2029 escaped, and every value
orjson does not write itself the way DRF's encoder writes it (dates and times as DRF formats
them, decimals, lazy strings, UUIDs, query sets; ``rest_framework.encoders.JSONEncoder``).
The differences: a float may be written in another, equal, form (``1e-05`` as ``1e-5``); NaN
or an infinity, which DRF's strict JSON refused with an error (a 500), is ``null``;
dataclasses, plain enums and date keys, which DRF refused, are written; a subclass of ``dict``
or ``list`` is written from what it holds, whatever methods it overrides (Django's
``QueryDict`` and ``ErrorList`` would differ; the API's views and errors hand the renderer
plain dicts and lists, and DRF's ``ReturnDict``/``ReturnList``, which override nothing).
Anything else orjson refuses (an integer beyond 64 bits, a key of a type it cannot write)
and every request for indented JSON (``Accept: application/json; indent=4``) goes to DRF's own
renderer, given what orjson already drew from one-shot iterators.
"""

from __future__ import annotations

import copy

import orjson
from rest_framework import renderers

__all__ = ["JSONRenderer"]

_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME


class JSONRenderer(renderers.JSONRenderer):
    """``rest_framework.renderers.JSONRenderer`` rendering with orjson (see the module
    docstring): ``render(data) -> bytes``."""

    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        if data is None:
            return b""
        context = renderer_context or {}
        if (
            self.ensure_ascii
            or not self.compact
            or self.get_indent(accepted_media_type, context) is not None
        ):
            return super().render(data, accepted_media_type, renderer_context)
        encoder = self.encoder_class()
        written: dict[int, tuple] = {}  # id -> (object, what the encoder made of it)

        def default(obj):
            value = encoder.default(obj)
            written[id(obj)] = (obj, value)
            return value

        try:
            body = orjson.dumps(data, default=default, option=_OPTIONS)
        except orjson.JSONEncodeError:
            return self._drf_render(data, written, accepted_media_type, renderer_context)
        # As DRF's renderer: JSON that is also a strict subset of JavaScript.
        return body.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")

    def _drf_render(self, data, written, accepted_media_type, renderer_context) -> bytes:
        """DRF's rendering of ``data``, where each object orjson already handed to the
        encoder (``written``: a generator it used up, say) is what the encoder made of it."""
        base = self.encoder_class

        class Replaying(base):
            def default(self, obj):
                found = written.get(id(obj))
                if found is not None and found[0] is obj:
                    return found[1]
                return super().default(obj)

        fallback = copy.copy(self)
        fallback.encoder_class = Replaying
        return renderers.JSONRenderer.render(fallback, data, accepted_media_type, renderer_context)
