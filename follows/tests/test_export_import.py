"""Export of a user's own follows as JSON and import back: idempotent, all or nothing, with
messages naming the bad entry."""

import json

import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile

from follows.models import Follow
from follows.selectors import follows_export
from follows.services import follow_create, follow_search_create, follows_import
from topics.models import TopicRedirect

pytestmark = pytest.mark.django_db


def state(user):
    """A user's follows as comparable tuples (scopes included)."""
    return sorted(
        (
            f.kind,
            f.topic.slug if f.topic else "",
            f.query,
            tuple(sorted(t.slug for t in f.topic_scope.all())),
            tuple(sorted(c.code for c in f.category_scope.all())),
            f.digest_frequency,
        )
        for f in Follow.objects.filter(user=user)
    )


def upload(data, name="follows.json"):
    content = data if isinstance(data, bytes) else json.dumps(data).encode()
    return SimpleUploadedFile(name, content, content_type="application/json")


@pytest.fixture
def exported(reader, other_reader, taxonomy, categories):
    follow_create(user=reader, topic=taxonomy["agents"], digest_frequency="daily")
    follow_search_create(
        user=reader,
        query="tool* OR planning",
        topics=["tool-use"],
        categories=["cs.LG", "cs.CL"],
        digest_frequency="off",
    )
    follow_create(user=other_reader, topic=taxonomy["vision"])
    return follows_export(user=reader)


def test_export_holds_the_users_own_follows(exported):
    assert exported["version"] == 1 and exported["exported_at"]
    assert exported["follows"] == [
        {"kind": "topic", "topic": "agents", "digest_frequency": "daily"},
        {
            "kind": "search",
            "query": "tool* OR planning",
            "topics": ["tool-use"],
            "categories": ["cs.CL", "cs.LG"],
            "digest_frequency": "off",
        },
    ]


def test_export_download(client, reader, exported):
    client.force_login(reader)
    response = client.get("/follows/export.json")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response["Content-Disposition"].startswith('attachment; filename="topicsite-follows-')
    data = json.loads(response.content)
    assert data["follows"] == exported["follows"]
    assert "vision" not in response.content.decode()


def test_import_round_trip_is_idempotent(client, reader, django_user_model, exported):
    newcomer = django_user_model.objects.create(username="newcomer")
    client.force_login(newcomer)

    response = client.post("/follows/import/", {"file": upload(exported)})
    assert response.status_code == 302
    assert state(newcomer) == state(reader)
    assert "Imported 2 new follows." in client.get("/follows/").content.decode()

    client.post("/follows/import/", {"file": upload(exported)})
    assert state(newcomer) == state(reader)
    assert "Imported 0 new follows." in client.get("/follows/").content.decode()


def test_import_keeps_existing_follows_and_follows_renamed_topics(reader, taxonomy, exported):
    TopicRedirect.objects.create(old_slug="old-vision", topic=taxonomy["vision"])
    data = {
        "version": 1,
        "follows": [
            {"kind": "topic", "topic": "agents", "digest_frequency": "weekly"},
            {"kind": "topic", "topic": "old-vision"},
            {"kind": "topic", "topic": "old-vision"},
        ],
    }
    assert follows_import(user=reader, content=json.dumps(data).encode()) == 1
    follows = dict(
        Follow.objects.filter(user=reader, kind="topic").values_list(
            "topic__slug", "digest_frequency"
        )
    )
    assert follows == {"agents": "daily", "vision": "weekly"}


GOOD_TOPIC = {"kind": "topic", "topic": "agents"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            b"{not json",
            "The file is not valid JSON: Expecting property name enclosed in double "
            "quotes at line 1, column 2.",
        ),
        (b"\xff\xfe", "The file is not UTF-8 text (byte 0)."),
        (b"[]", "The file must hold a JSON object with 'version' and 'follows'."),
        ({"version": 2, "follows": []}, "Unsupported export version 2; this site reads version 1."),
        ({"version": 1, "follows": {}}, "'follows' must be a list."),
        (
            {"version": 1, "follows": [GOOD_TOPIC, {"kind": "topic", "topic": "nope"}]},
            "entry 2 (topic 'nope'): unknown topic 'nope'.",
        ),
        (
            {"version": 1, "follows": [GOOD_TOPIC, {"kind": "search", "query": "a OR"}]},
            "entry 2 (search 'a OR'): The query does not parse: OR needs a term after it at "
            "position 2.",
        ),
        (
            {"version": 1, "follows": [{"kind": "search", "query": "a", "categories": ["x.Y"]}]},
            "entry 1 (search 'a'): Unknown arXiv category: x.Y.",
        ),
        (
            {"version": 1, "follows": [{"kind": "search", "query": "a", "topics": "agents"}]},
            "entry 1 (search 'a'): 'topics' must be a list of strings.",
        ),
        (
            {
                "version": 1,
                "follows": [{"kind": "topic", "topic": "agents", "digest_frequency": 1}],
            },
            "entry 1 (topic 'agents'): Digest frequency must be one of daily, weekly, off, not 1.",
        ),
        (
            {"version": 1, "follows": [{"kind": "person"}]},
            "entry 1: 'kind' must be 'topic', 'author' or 'search', not 'person'.",
        ),
        ({"version": 1, "follows": ["agents"]}, "entry 1: must be an object."),
    ],
)
def test_a_bad_file_is_refused_whole_naming_what_is_wrong(reader, taxonomy, content, message):
    content = content if isinstance(content, bytes) else json.dumps(content).encode()
    with pytest.raises(ValidationError) as caught:
        follows_import(user=reader, content=content)
    assert message in caught.value.messages
    assert not Follow.objects.exists()


def test_size_and_count_caps(reader, taxonomy, settings):
    settings.FOLLOWS_IMPORT_MAX_FOLLOWS = 3
    data = {"version": 1, "follows": [GOOD_TOPIC] * 4}
    with pytest.raises(ValidationError, match="lists 4 follows; at most 3 are accepted"):
        follows_import(user=reader, content=json.dumps(data).encode())
    settings.FOLLOWS_IMPORT_MAX_BYTES = 100
    with pytest.raises(
        ValidationError, match="The file is too large: at most 100 bytes are accepted"
    ):
        follows_import(user=reader, content=b" " * 101)
    assert not Follow.objects.exists()


def test_the_import_page_shows_every_bad_entry_and_writes_nothing(client, reader, taxonomy):
    client.force_login(reader)
    data = {
        "version": 1,
        "follows": [
            GOOD_TOPIC,
            {"kind": "topic", "topic": "gone"},
            {"kind": "search", "query": "("},
        ],
    }
    response = client.post("/follows/import/", {"file": upload(data)})
    assert response.status_code == 400
    page = response.content.decode()
    assert "entry 2 (topic &#x27;gone&#x27;): unknown topic &#x27;gone&#x27;." in page
    assert "entry 3 (search &#x27;(&#x27;): The query does not parse:" in page
    assert not Follow.objects.exists()


def test_an_oversized_upload_is_refused_without_reading_it_all(client, reader, settings):
    settings.FOLLOWS_IMPORT_MAX_BYTES = 50
    client.force_login(reader)
    response = client.post("/follows/import/", {"file": upload(b" " * 10_000)})
    assert response.status_code == 400
    assert "The file is too large: at most 50 bytes are accepted." in response.content.decode()
