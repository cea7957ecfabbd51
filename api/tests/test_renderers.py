"""api.renderers.JSONRenderer: DRF's JSONRenderer's output, written by orjson."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import uuid
from collections import OrderedDict

import pytest
from django.utils.functional import lazy
from rest_framework.renderers import JSONRenderer as DRFJSONRenderer
from rest_framework.utils.serializer_helpers import ReturnDict, ReturnList

from api.renderers import JSONRenderer

UTC = dt.UTC


def _values():
    return {
        "when": dt.datetime(2026, 12, 7, 3, 25, 21, 123456, tzinfo=UTC),
        "naive": dt.datetime(2026, 1, 2, 3, 4, 5),
        "local": dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone(dt.timedelta(hours=2))),
        "day": dt.date(2026, 12, 7),
        "time": dt.time(12, 30, 1, 500),
        "span": dt.timedelta(days=1, seconds=3),
        "decimal": decimal.Decimal("1.50"),
        "uuid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
        "lazy": lazy(lambda: "Grüße", str)(),
        "text": 'line\u2028separator\u2029paragraph é 漢字 \\ " </script>',
        "ints": {1: "one", 2: [True, False, None]},
        "nested": ReturnDict({"list": ReturnList([1, 2], serializer=None)}, serializer=None),
        "ordered": OrderedDict([("b", 1), ("a", 2)]),
        "tuple": (1, "two"),
        "bytes": b"raw",
        "big": 2**63 - 1,
    }


def test_the_output_is_drfs_byte_for_byte():
    data = _values()
    assert JSONRenderer().render(data) == DRFJSONRenderer().render(data)
    assert JSONRenderer().render([data, data]) == DRFJSONRenderer().render([data, data])


def test_floats_are_equal_values_and_special_floats_are_null():
    data = {"floats": [0.1, 1e-05, 1e16, -2.5, 1 / 3]}
    assert json.loads(JSONRenderer().render(data)) == json.loads(DRFJSONRenderer().render(data))
    assert json.loads(JSONRenderer().render({"nan": float("nan")})) == {"nan": None}


@pytest.mark.parametrize("media_type", ["application/json; indent=4", "application/json; indent=2"])
def test_indented_json_is_drfs(media_type):
    data = _values()
    ours = JSONRenderer().render(data, media_type)
    assert ours == DRFJSONRenderer().render(data, media_type) and b"\n" in ours


def test_what_orjson_refuses_goes_to_drfs_renderer():
    data = {"huge": 2**70, "list": [2**64]}
    assert JSONRenderer().render(data) == DRFJSONRenderer().render(data)
    assert JSONRenderer().render(None) == b""


@pytest.mark.django_db
def test_the_api_answers_with_this_renderer(api_client):
    response = api_client.get("/api/v1/categories/")
    assert response.status_code == 200
    assert type(response.accepted_renderer) is JSONRenderer
    assert response["Content-Type"] == "application/json"


def test_the_fallback_gets_what_orjson_drew_from_one_shot_iterators():
    """orjson fails on the integer after it used the generator up: DRF's renderer is given
    what the encoder made of it (found by a breaker helper)."""
    when = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    ours = JSONRenderer().render({"gen": (x for x in (1, when, "z")), "huge": 2**70})
    expected = DRFJSONRenderer().render({"gen": (x for x in (1, when, "z")), "huge": 2**70})
    assert (
        ours == expected == b'{"gen":[1,"2026-01-02T03:04:05Z","z"],"huge":1180591620717411303424}'
    )
