"""``me/library/`` and ``me/for-you/``: the signed-in reader's saved papers and picks through
the API, by the same services as /library/ and /for-you/; never another user's."""

import pytest
from rest_framework.test import APIClient

from follows.models import LibraryItem
from papers.tests.factories import PaperFactory
from topics.tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def reader():
    client = APIClient()
    user = UserFactory()
    client.force_authenticate(user)
    return user, client


def test_save_list_mark_note_and_remove(reader):
    user, client = reader
    paper = PaperFactory(arxiv_id="2401.01234", title="Agents that use tools")
    created = client.post("/api/v1/me/library/", {"paper": "arXiv:2401.01234v1"}, format="json")
    assert created.status_code == 201, created.content
    item = created.json()
    assert item["paper"] == {
        "id": "2401.01234",
        "title": "Agents that use tools",
        "url": paper.get_absolute_url(),
    }
    assert item["read"] is False and item["note"] == ""
    again = client.post("/api/v1/me/library/", {"paper": "2401.01234"}, format="json")
    assert again.status_code == 200 and again.json()["id"] == item["id"]

    url = f"/api/v1/me/library/{item['id']}/"
    changed = client.patch(url, {"read": True, "note": "Read §3."}, format="json").json()
    assert changed["read"] is True and changed["note"] == "Read §3."
    assert [
        row["id"] for row in client.get("/api/v1/me/library/?status=read").json()["results"]
    ] == [item["id"]]
    assert client.get("/api/v1/me/library/?status=unread").json()["results"] == []
    assert client.get("/api/v1/me/library/?status=maybe").status_code == 400

    assert client.delete(url).status_code == 204
    assert not LibraryItem.objects.filter(user=user).exists()


def test_bad_input_is_a_400_naming_the_field(reader):
    _, client = reader
    PaperFactory(arxiv_id="2401.01234")
    missing = client.post("/api/v1/me/library/", {"paper": "2401.99999"}, format="json")
    assert missing.status_code == 400 and "paper" in missing.json()["error"]["details"]
    item = client.post("/api/v1/me/library/", {"paper": "2401.01234"}, format="json").json()
    url = f"/api/v1/me/library/{item['id']}/"
    nul = client.patch(url, {"note": "a\x00b"}, format="json")
    assert nul.status_code == 400 and "note" in nul.json()["error"]["details"]
    long = client.patch(url, {"note": "x" * 5001}, format="json")
    assert long.status_code == 400


def test_another_readers_items_are_404_and_never_listed(reader):
    _, client = reader
    other = UserFactory()
    theirs = LibraryItem.objects.create(user=other, paper=PaperFactory(), note="private")
    assert client.get("/api/v1/me/library/").json()["results"] == []
    url = f"/api/v1/me/library/{theirs.pk}/"
    assert client.patch(url, {"read": True}, format="json").status_code == 404
    assert client.delete(url).status_code == 404
    assert LibraryItem.objects.get(pk=theirs.pk).note == "private"


def test_anonymous_is_401():
    client = APIClient()
    assert client.get("/api/v1/me/library/").status_code == 401
    assert client.get("/api/v1/me/for-you/").status_code == 401


def test_for_you_of_a_reader_with_nothing_saved_or_followed_is_empty(reader):
    _, client = reader
    body = client.get("/api/v1/me/for-you/").json()
    assert body == {"since": None, "until": None, "results": []}
