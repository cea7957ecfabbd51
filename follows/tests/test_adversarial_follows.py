"""Hostile follows imports: a JSON file can spell characters PostgreSQL cannot store (NUL) or
UTF-8 cannot encode (unpaired surrogates); the import refuses them by entry, like any other
bad entry, instead of failing with a 500."""

import io
import json

import pytest

from follows.models import Follow

pytestmark = pytest.mark.django_db


def _upload(content: bytes):
    upload = io.BytesIO(content)
    upload.name = "follows.json"
    return upload


@pytest.mark.parametrize(
    "entry",
    [
        {"kind": "search", "query": "agents\u0000"},
        {"kind": "topic", "topic": "agents\u0000"},
        {"kind": "search", "query": "agents", "topics": ["agents\u0000"]},
        {"kind": "search", "query": "\ud800 agents"},
        {"kind": "topic", "topic": "\udfff"},
    ],
)
def test_import_refuses_unstorable_characters_and_writes_nothing(client, reader, taxonomy, entry):
    client.force_login(reader)
    good = {"kind": "topic", "topic": "vision"}
    # json.dumps escapes both as \u0000 / \ud800, as a hostile file would spell them.
    content = json.dumps({"version": 1, "follows": [good, entry]}).encode()

    response = client.post("/follows/import/", {"file": _upload(content)})

    assert response.status_code == 400
    assert "entry 2" in response.content.decode()
    assert "NUL or an unpaired surrogate" in response.content.decode()
    assert not Follow.objects.filter(user=reader).exists()
