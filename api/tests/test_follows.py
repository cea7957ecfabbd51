"""``me/follows/``: each role on each action (anonymous, the owner, another user, a curator, a
revoked token, a bad token), and the bodies it takes (topics, saved searches, frequencies)."""

from __future__ import annotations

import pytest

from api.services import token_create
from api.tests.conftest import assert_error, expect, token_client
from follows.models import Follow
from follows.services import follow_create
from papers.tests.factories import AuthorFactory, CategoryFactory
from topics.tests.factories import TopicFactory, UserFactory

pytestmark = pytest.mark.django_db

FOLLOWS_URL = "/api/v1/me/follows/"


@pytest.mark.parametrize(
    ("role", "status"), expect(None, owner=200, other=200, curator=200).items()
)
def test_follow_list_by_role_shows_only_ones_own(access_world, role, status):
    response = token_client(access_world["keys"][role]).get(FOLLOWS_URL)

    assert response.status_code == status, response.content
    if status == 200:
        topics = [f["topic"] for f in response.json()["results"]]
        assert topics == (["owned"] if role == "owner" else [])


@pytest.mark.parametrize(
    ("role", "status"), expect(None, owner=201, other=201, curator=201).items()
)
def test_follow_create_by_role(access_world, role, status):
    response = token_client(access_world["keys"][role]).post(
        FOLLOWS_URL, {"topic": "agents"}, format="json"
    )

    assert response.status_code == status, response.content
    followers = set(
        Follow.objects.filter(topic=access_world["topic"]).values_list("user", flat=True)
    )
    assert followers == ({access_world[role].pk} if status == 201 else set())


@pytest.mark.parametrize(
    ("role", "status"), expect(None, owner=204, other=404, curator=404).items()
)
def test_follow_delete_by_role(access_world, role, status):
    follow = access_world["follow"]

    response = token_client(access_world["keys"][role]).delete(f"{FOLLOWS_URL}{follow.pk}/")

    assert response.status_code == status, response.content
    assert Follow.objects.filter(pk=follow.pk).exists() == (status != 204)
    if status == 404:
        assert_error(response, 404, code="not_found")


@pytest.mark.parametrize(
    ("role", "status"), expect(None, owner=200, other=404, curator=404).items()
)
def test_follow_retrieve_by_role(access_world, role, status):
    response = token_client(access_world["keys"][role]).get(
        f"{FOLLOWS_URL}{access_world['follow'].pk}/"
    )

    assert response.status_code == status, response.content


@pytest.mark.parametrize(
    ("role", "status"), expect(None, owner=200, other=404, curator=404).items()
)
def test_follow_frequency_change_by_role(access_world, role, status):
    follow = access_world["follow"]
    before = follow.digest_frequency
    wanted = "daily" if before != "daily" else "off"

    response = token_client(access_world["keys"][role]).patch(
        f"{FOLLOWS_URL}{follow.pk}/", {"digest_frequency": wanted}, format="json"
    )

    assert response.status_code == status, response.content
    follow.refresh_from_db()
    assert follow.digest_frequency == (wanted if status == 200 else before)
    if status == 200:
        assert response.json()["digest_frequency"] == wanted
        assert response.json()["id"] == follow.pk


def test_a_bad_frequency_is_a_400_naming_it_and_changes_nothing(access_world):
    follow = access_world["follow"]
    before = follow.digest_frequency
    client = token_client(access_world["keys"]["owner"])

    for body in ({"digest_frequency": "hourly"}, {}):
        response = client.patch(f"{FOLLOWS_URL}{follow.pk}/", body, format="json")
        assert_error(response, 400, code="invalid_request")
        assert "digest_frequency" in response.json()["error"]["details"]
    follow.refresh_from_db()
    assert follow.digest_frequency == before


def test_follow_topic_is_idempotent_and_resolves_an_old_slug():
    user = UserFactory()
    key = token_create(user=user, name="t").key
    topic = TopicFactory(slug="agents")

    first = token_client(key).post(
        FOLLOWS_URL, {"topic": "agents", "digest_frequency": "daily"}, format="json"
    )
    again = token_client(key).post(FOLLOWS_URL, {"topic": "agents"}, format="json")

    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json() == again.json()
    assert first.json()["kind"] == "topic"
    assert first.json()["digest_frequency"] == "daily"
    assert Follow.objects.get().topic == topic


def test_follow_author_is_idempotent_and_follows_the_survivor_of_a_merge():
    user = UserFactory()
    key = token_create(user=user, name="t").key
    survivor = AuthorFactory(name="Ada Lovelace")
    variant = AuthorFactory(name="A. Lovelace", merged_into=survivor)

    first = token_client(key).post(FOLLOWS_URL, {"author": survivor.pk}, format="json")
    again = token_client(key).post(FOLLOWS_URL, {"author": variant.pk}, format="json")

    assert (first.status_code, again.status_code) == (201, 200), again.content
    assert first.json() == again.json()
    body = first.json()
    assert (body["kind"], body["topic"], body["query"]) == ("author", None, "")
    assert body["author"] == {"id": survivor.pk, "name": "Ada Lovelace"}
    assert Follow.objects.get().author == survivor
    listed = token_client(key).get(FOLLOWS_URL).json()["results"]
    assert [item["author"] for item in listed] == [{"id": survivor.pk, "name": "Ada Lovelace"}]

    TopicFactory(slug="agents")
    both = token_client(key).post(
        FOLLOWS_URL, {"topic": "agents", "author": survivor.pk}, format="json"
    )
    assert_error(both, 400, code="invalid_request")
    assert "not 'topic' and 'author'" in str(both.json()["error"]["details"])
    assert Follow.objects.count() == 1


def test_saved_search_follow_through_the_service():
    user = UserFactory()
    key = token_create(user=user, name="t").key
    TopicFactory(slug="agents")
    CategoryFactory(code="cs.LG")

    response = token_client(key).post(
        FOLLOWS_URL,
        {
            "query": ' "tool use"   OR  agents ',
            "topics": ["agents"],
            "categories": ["cs.LG"],
            "digest_frequency": "off",
        },
        format="json",
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["kind"], body["query"], body["topic"]) == ("search", '"tool use" OR agents', None)
    assert (body["topics"], body["categories"]) == (["agents"], ["cs.LG"])
    assert body["digest_frequency"] == "off"
    follow = Follow.objects.get()
    assert (follow.user, follow.kind) == (user, "search")

    # Deleting a saved search by id.
    assert token_client(key).delete(f"{FOLLOWS_URL}{follow.pk}/").status_code == 204
    assert not Follow.objects.exists()


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({}, "non_field_errors", "Send 'topic'"),
        ({"topic": "agents", "query": "x"}, "non_field_errors", "not 'topic' and 'query'"),
        ({"author": 999_999}, "author", "Invalid pk"),
        ({"author": "x"}, "author", "Incorrect type"),
        ({"topic": "nope"}, "topic", "No active topic has the slug 'nope'"),
        ({"topic": "agents", "topics": ["agents"]}, "topics", "Only a saved search"),
        ({"query": "(unclosed"}, "query", "does not parse"),
        ({"query": "agents", "topics": ["nope"]}, "topics", "Unknown topic: nope"),
        ({"query": "agents", "categories": ["xx.YY"]}, "categories", "xx.YY"),
        ({"topic": "agents", "digest_frequency": "hourly"}, "digest_frequency", "hourly"),
    ],
)
def test_bad_follow_bodies_get_400_naming_the_field_and_write_nothing(body, field, says):
    key = token_create(user=UserFactory(), name="t").key
    TopicFactory(slug="agents")

    response = token_client(key).post(FOLLOWS_URL, body, format="json")

    assert_error(response, 400, code="invalid_request")
    details = response.json()["error"]["details"]
    assert says in " ".join(details[field]), details
    assert not Follow.objects.exists()


def test_follow_list_queries_do_not_grow_with_follows(django_assert_max_num_queries):
    user = UserFactory()
    key = token_create(user=user, name="t").key
    for _ in range(3):
        follow_create(user=user, topic=TopicFactory())
    with django_assert_max_num_queries(8) as few:
        token_client(key).get(FOLLOWS_URL)
    for _ in range(20):
        follow_create(user=user, topic=TopicFactory())
    with django_assert_max_num_queries(len(few.captured_queries)):
        response = token_client(key).get(FOLLOWS_URL)
    assert response.json()["count"] == 23
