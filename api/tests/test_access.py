"""API access: tokens (stored hashed, Bearer authentication, the token page), and each role on
each access-controlled endpoint (anonymous, a user with a token, another user, a curator, a
revoked token, a bad token)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission
from django.contrib.sessions.models import Session
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from api.models import ApiToken
from api.services import TokenLimitReached, key_hash, token_create, token_revoke
from follows.models import Follow
from follows.services import follow_create
from papers.tests.factories import CategoryFactory, PaperFactory
from topics.models import Assignment
from topics.tests.factories import AssignmentFactory, TopicFactory, UserFactory

pytestmark = pytest.mark.django_db

READ_URL = "/api/v1/categories/"
FOLLOWS_URL = "/api/v1/me/follows/"
ASSIGNMENTS_URL = "/api/v1/assignments/"
TOKENS_PAGE = "/api/v1/tokens/"


def api_client(key: str | None = None, *, scheme: str = "Bearer") -> APIClient:
    client = APIClient()
    if key is not None:
        client.credentials(HTTP_AUTHORIZATION=f"{scheme} {key}")
    return client


def curator_user(**kwargs):
    user = UserFactory(**kwargs)
    user.groups.add(Group.objects.get(name="Curators"))
    return user


def assert_error(response, status: int, code: str):
    """The uniform error JSON of api/errors.py."""
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]["status"] == status
    assert body["error"]["code"] == code
    assert body["error"]["message"]


# --- tokens: stored hashed, authentication ---------------------------------------------------


def test_token_is_stored_as_its_sha256_and_prefix_only():
    user = UserFactory()

    created = token_create(user=user, name="  laptop  ")

    token = ApiToken.objects.get()
    assert token.name == "laptop"
    assert token.key_prefix == created.key[:8]
    assert token.key_hash == key_hash(created.key) != created.key
    assert len(created.key) >= 40
    # No column of any row holds the key.
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM api_apitoken")
        rows = cursor.fetchall()
    assert rows and not any(created.key in str(value) for row in rows for value in row)


def test_token_create_refuses_a_blank_name_and_too_many_tokens(settings):
    user = UserFactory()
    with pytest.raises(ValueError, match="needs a name"):
        token_create(user=user, name="   ")
    settings.API_TOKENS_PER_USER = 2
    token_create(user=user, name="one")
    second = token_create(user=user, name="two")

    with pytest.raises(TokenLimitReached, match="already have 2 active tokens"):
        token_create(user=user, name="three")
    assert ApiToken.objects.count() == 2

    # A revoked token no longer counts.
    token_revoke(token=second.token)
    token_create(user=user, name="three")
    assert ApiToken.objects.active().count() == 2


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "Token"])
def test_bearer_and_token_schemes_authenticate_and_mark_the_token_used(scheme):
    user = UserFactory()
    created = token_create(user=user, name="script")
    follow_create(user=user, topic=TopicFactory())

    response = api_client(created.key, scheme=scheme).get(FOLLOWS_URL)

    assert response.status_code == 200
    assert response.json()["count"] == 1
    created.token.refresh_from_db()
    assert created.token.last_used_at is not None


def test_the_key_is_found_among_tokens_sharing_its_prefix():
    user, other = UserFactory(), UserFactory()
    created = token_create(user=user, name="mine")
    # Another token with the same first 8 characters (different key): the digest decides.
    ApiToken.objects.create(
        user=other, name="twin", key_prefix=created.key[:8], key_hash=key_hash("x" * 43)
    )
    follow_create(user=user, topic=TopicFactory(slug="mine"))

    response = api_client(created.key).get(FOLLOWS_URL)

    assert response.status_code == 200
    assert [f["topic"] for f in response.json()["results"]] == ["mine"]


@pytest.mark.parametrize(
    "header",
    [
        "Bearer not-a-key-at-all",
        "Bearer",
        "Bearer two parts",
        "Token ",
    ],
)
def test_bad_authorization_headers_get_401_with_the_error_json(header):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)

    response = client.get(FOLLOWS_URL)

    assert_error(response, 401, "authentication_failed")
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_revoked_token_and_inactive_user_get_401():
    user = UserFactory()
    revoked = token_create(user=user, name="old")
    token_revoke(token=revoked.token)
    first_revocation = ApiToken.objects.get(pk=revoked.token.pk).revoked_at
    token_revoke(token=revoked.token)  # idempotent, keeps the first time
    assert ApiToken.objects.get(pk=revoked.token.pk).revoked_at == first_revocation

    response = api_client(revoked.key).get(FOLLOWS_URL)
    assert_error(response, 401, "authentication_failed")
    assert "revoked" in response.json()["error"]["message"]

    live = token_create(user=user, name="new")
    user.is_active = False
    user.save()
    assert_error(api_client(live.key).get(FOLLOWS_URL), 401, "authentication_failed")


def test_anonymous_on_a_signed_in_resource_gets_401_not_403():
    response = APIClient().get(FOLLOWS_URL)

    assert_error(response, 401, "not_authenticated")
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_session_writes_need_the_csrf_token():
    user, topic = UserFactory(), TopicFactory()
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(user)

    assert client.get(FOLLOWS_URL).status_code == 200
    response = client.post(FOLLOWS_URL, {"topic": topic.slug}, format="json")

    assert_error(response, 403, "permission_denied")
    assert "CSRF" in response.json()["error"]["message"]
    assert not Follow.objects.exists()


# --- the role matrix -------------------------------------------------------------------------

ROLES = ["anonymous", "owner", "other", "curator", "revoked", "bad"]


@pytest.fixture
def world():
    """An owner with a token, a follow and a revoked token; another user and a curator, each
    with a token; a topic, a paper and a machine-made assignment."""
    owner, other, curator = UserFactory(), UserFactory(), curator_user()
    topic = TopicFactory(slug="agents")
    keys = {
        "anonymous": None,
        "owner": token_create(user=owner, name="owner").key,
        "other": token_create(user=other, name="other").key,
        "curator": token_create(user=curator, name="curator").key,
        "bad": "x" * 43,
    }
    revoked = token_create(user=owner, name="revoked")
    token_revoke(token=revoked.token)
    keys["revoked"] = revoked.key
    follow = follow_create(user=owner, topic=TopicFactory(slug="owned"))
    assignment = AssignmentFactory(
        topic=topic, source=Assignment.Source.CLASSIFIER, score=0.4, state="pending"
    )
    return {
        "owner": owner,
        "other": other,
        "curator": curator,
        "topic": topic,
        "keys": keys,
        "follow": follow,
        "assignment": assignment,
        "paper": PaperFactory(arxiv_id="2609.99999"),
    }


def expect(status, *, anonymous=401, revoked=401, bad=401, **others):
    return {"anonymous": anonymous, "revoked": revoked, "bad": bad, **others}


@pytest.mark.parametrize(
    ("role", "status"),
    expect(None, anonymous=200, owner=200, other=200, curator=200).items(),
)
def test_read_endpoint_is_open_but_bad_credentials_are_refused(world, role, status):
    CategoryFactory(code="cs.CL")

    response = api_client(world["keys"][role]).get(READ_URL)

    assert response.status_code == status, response.content


@pytest.mark.parametrize(
    ("role", "status"), expect(None, owner=200, other=200, curator=200).items()
)
def test_follow_list_by_role_shows_only_ones_own(world, role, status):
    response = api_client(world["keys"][role]).get(FOLLOWS_URL)

    assert response.status_code == status, response.content
    if status == 200:
        topics = [f["topic"] for f in response.json()["results"]]
        assert topics == (["owned"] if role == "owner" else [])


@pytest.mark.parametrize(
    ("role", "status"), expect(None, owner=201, other=201, curator=201).items()
)
def test_follow_create_by_role(world, role, status):
    response = api_client(world["keys"][role]).post(FOLLOWS_URL, {"topic": "agents"}, format="json")

    assert response.status_code == status, response.content
    followers = set(Follow.objects.filter(topic=world["topic"]).values_list("user", flat=True))
    assert followers == ({world[role].pk} if status == 201 else set())


@pytest.mark.parametrize(
    ("role", "status"), expect(None, owner=204, other=404, curator=404).items()
)
def test_follow_delete_by_role(world, role, status):
    follow = world["follow"]

    response = api_client(world["keys"][role]).delete(f"{FOLLOWS_URL}{follow.pk}/")

    assert response.status_code == status, response.content
    assert Follow.objects.filter(pk=follow.pk).exists() == (status != 204)
    if status == 404:
        assert_error(response, 404, "not_found")


@pytest.mark.parametrize(
    ("role", "status"), expect(None, owner=200, other=404, curator=404).items()
)
def test_follow_retrieve_by_role(world, role, status):
    response = api_client(world["keys"][role]).get(f"{FOLLOWS_URL}{world['follow'].pk}/")

    assert response.status_code == status, response.content


@pytest.mark.parametrize(
    ("role", "status"), expect(None, owner=200, other=404, curator=404).items()
)
def test_follow_frequency_change_by_role(world, role, status):
    follow = world["follow"]
    before = follow.digest_frequency
    wanted = "daily" if before != "daily" else "off"

    response = api_client(world["keys"][role]).patch(
        f"{FOLLOWS_URL}{follow.pk}/", {"digest_frequency": wanted}, format="json"
    )

    assert response.status_code == status, response.content
    follow.refresh_from_db()
    assert follow.digest_frequency == (wanted if status == 200 else before)
    if status == 200:
        assert response.json()["digest_frequency"] == wanted
        assert response.json()["id"] == follow.pk


def test_a_bad_frequency_is_a_400_naming_it_and_changes_nothing(world):
    follow = world["follow"]
    before = follow.digest_frequency
    client = api_client(world["keys"]["owner"])

    for body in ({"digest_frequency": "hourly"}, {}):
        response = client.patch(f"{FOLLOWS_URL}{follow.pk}/", body, format="json")
        assert_error(response, 400, "invalid_request")
        assert "digest_frequency" in response.json()["error"]["details"]
    follow.refresh_from_db()
    assert follow.digest_frequency == before


@pytest.mark.parametrize(
    ("role", "status"), expect(None, owner=403, other=403, curator=200).items()
)
def test_assignment_list_by_role(world, role, status):
    response = api_client(world["keys"][role]).get(ASSIGNMENTS_URL)

    assert response.status_code == status, response.content
    if status == 403:
        assert_error(response, 403, "permission_denied")
    if status == 200:
        assert [a["id"] for a in response.json()["results"]] == [world["assignment"].pk]


@pytest.mark.parametrize(
    ("role", "status"), expect(None, owner=403, other=403, curator=200).items()
)
def test_assignment_retrieve_by_role(world, role, status):
    assignment = world["assignment"]

    response = api_client(world["keys"][role]).get(f"{ASSIGNMENTS_URL}{assignment.pk}/")

    assert response.status_code == status, response.content
    if status == 200:
        assert response.json() == {
            "id": assignment.pk,
            "paper": assignment.paper.arxiv_id,
            "topic": "agents",
            "source": "classifier",
            "state": "pending",
            "score": 0.4,
            "decided_by": None,
            "decided_at": None,
            "created_at": response.json()["created_at"],
            "updated_at": response.json()["updated_at"],
        }


@pytest.mark.parametrize(
    ("role", "status"), expect(None, owner=403, other=403, curator=201).items()
)
def test_assignment_create_by_role(world, role, status):
    response = api_client(world["keys"][role]).post(
        ASSIGNMENTS_URL, {"paper": "2609.99999v2", "topic": "agents"}, format="json"
    )

    assert response.status_code == status, response.content
    created = Assignment.objects.filter(paper=world["paper"], topic=world["topic"]).first()
    if status == 201:
        assert (created.source, created.state, created.decided_by) == (
            "curator",
            "accepted",
            world["curator"],
        )
        assert response.json()["paper"] == "2609.99999"
        assert response.json()["decided_by"] == world["curator"].username
    else:
        assert created is None


@pytest.mark.parametrize("decision", ["accept", "reject"])
@pytest.mark.parametrize(
    ("role", "status"), expect(None, owner=403, other=403, curator=200).items()
)
def test_assignment_decision_by_role(world, role, status, decision):
    assignment = world["assignment"]

    response = api_client(world["keys"][role]).post(f"{ASSIGNMENTS_URL}{assignment.pk}/{decision}/")

    assert response.status_code == status, response.content
    assignment.refresh_from_db()
    if status == 200:
        state = "accepted" if decision == "accept" else "rejected"
        assert (assignment.state, assignment.decided_by) == (state, world["curator"])
        # Source and score are kept; the decision is in the history, by the curator.
        assert (assignment.source, assignment.score) == ("classifier", 0.4)
        latest = assignment.history.first()
        assert (latest.state, latest.history_user) == (state, world["curator"])
        assert response.json()["state"] == state
    else:
        assert (assignment.state, assignment.decided_by) == ("pending", None)


def test_staff_need_the_assignment_permissions_not_just_staff_status():
    staff = UserFactory(is_staff=True)
    key = token_create(user=staff, name="staff").key
    assert api_client(key).get(ASSIGNMENTS_URL).status_code == 403

    staff.user_permissions.add(Permission.objects.get(codename="view_assignment"))
    assert api_client(key).get(ASSIGNMENTS_URL).status_code == 200
    # Viewing is not deciding.
    assignment = AssignmentFactory()
    response = api_client(key).post(f"{ASSIGNMENTS_URL}{assignment.pk}/accept/")
    assert_error(response, 403, "permission_denied")


# --- me/follows: bodies ----------------------------------------------------------------------


def test_follow_topic_is_idempotent_and_resolves_an_old_slug():
    user = UserFactory()
    key = token_create(user=user, name="t").key
    topic = TopicFactory(slug="agents")

    first = api_client(key).post(
        FOLLOWS_URL, {"topic": "agents", "digest_frequency": "daily"}, format="json"
    )
    again = api_client(key).post(FOLLOWS_URL, {"topic": "agents"}, format="json")

    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json() == again.json()
    assert first.json()["kind"] == "topic"
    assert first.json()["digest_frequency"] == "daily"
    assert Follow.objects.get().topic == topic


def test_saved_search_follow_through_the_service():
    user = UserFactory()
    key = token_create(user=user, name="t").key
    TopicFactory(slug="agents")
    CategoryFactory(code="cs.LG")

    response = api_client(key).post(
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
    assert api_client(key).delete(f"{FOLLOWS_URL}{follow.pk}/").status_code == 204
    assert not Follow.objects.exists()


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({}, "non_field_errors", "Send 'topic'"),
        ({"topic": "agents", "query": "x"}, "non_field_errors", "not both"),
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

    response = api_client(key).post(FOLLOWS_URL, body, format="json")

    assert_error(response, 400, "invalid_request")
    details = response.json()["error"]["details"]
    assert says in " ".join(details[field]), details
    assert not Follow.objects.exists()


def test_follow_list_queries_do_not_grow_with_follows(django_assert_max_num_queries):
    user = UserFactory()
    key = token_create(user=user, name="t").key
    for _ in range(3):
        follow_create(user=user, topic=TopicFactory())
    with django_assert_max_num_queries(8) as few:
        api_client(key).get(FOLLOWS_URL)
    for _ in range(20):
        follow_create(user=user, topic=TopicFactory())
    with django_assert_max_num_queries(len(few.captured_queries)):
        response = api_client(key).get(FOLLOWS_URL)
    assert response.json()["count"] == 23


# --- assignments: filters and bodies ---------------------------------------------------------


def test_assignment_filters_and_queries_do_not_grow(django_assert_max_num_queries):
    curator = curator_user()
    key = token_create(user=curator, name="c").key
    agents, other = TopicFactory(slug="agents"), TopicFactory(slug="other")
    paper = PaperFactory(arxiv_id="2609.00042")
    wanted = AssignmentFactory(paper=paper, topic=agents, state="pending", source="classifier")
    AssignmentFactory(paper=paper, topic=other)
    AssignmentFactory(topic=agents, source="rule")

    def ids(**params):
        response = api_client(key).get(ASSIGNMENTS_URL, params)
        assert response.status_code == 200, response.content
        return [a["id"] for a in response.json()["results"]]

    assert ids(topic="agents", paper="arXiv:2609.00042v3") == [wanted.pk]
    assert ids(state="pending") == [wanted.pk]
    assert ids(source="classifier", topic="agents") == [wanted.pk]
    assert len(ids()) == 3

    with django_assert_max_num_queries(8) as few:
        ids()
    for _ in range(15):
        AssignmentFactory(topic=agents)
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert len(ids()) == 18


@pytest.mark.parametrize(
    ("params", "name"),
    [({"state": "maybe"}, "state"), ({"topic": "nope"}, "topic"), ({"paper": "1234"}, "paper")],
)
def test_bad_assignment_filters_get_400_naming_the_parameter(params, name):
    key = token_create(user=curator_user(), name="c").key

    response = api_client(key).get(ASSIGNMENTS_URL, params)

    assert_error(response, 400, "invalid_parameter")
    assert name in response.json()["error"]["details"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"paper": "2609.12345", "topic": "agents"}, "paper"),
        ({"paper": "not an id", "topic": "agents"}, "paper"),
        ({"paper": "2609.00042", "topic": "nope"}, "topic"),
        ({"topic": "agents"}, "paper"),
    ],
)
def test_bad_assignment_bodies_get_400_and_write_nothing(body, field):
    key = token_create(user=curator_user(), name="c").key
    TopicFactory(slug="agents")
    PaperFactory(arxiv_id="2609.00042")

    response = api_client(key).post(ASSIGNMENTS_URL, body, format="json")

    assert_error(response, 400, "invalid_request")
    assert field in response.json()["error"]["details"]
    assert not Assignment.objects.exists()


def test_deciding_an_unknown_assignment_is_404():
    key = token_create(user=curator_user(), name="c").key

    assert_error(api_client(key).post(f"{ASSIGNMENTS_URL}999999/accept/"), 404, "not_found")


def test_curator_decision_is_kept_by_retagging_like_an_admin_decision():
    """The API records the same curator decision as the admin: tagging leaves it alone."""
    from topics.tagging.engine import papers_tag

    curator = curator_user()
    key = token_create(user=curator, name="c").key
    topic = TopicFactory(slug="agents", rule_query="agents")
    paper = PaperFactory(title="Agents that learn", abstract="Agents.")
    assignment = AssignmentFactory(paper=paper, topic=topic, source="rule")

    assert api_client(key).post(f"{ASSIGNMENTS_URL}{assignment.pk}/reject/").status_code == 200
    papers_tag(paper_ids=[paper.pk])

    assignment.refresh_from_db()
    assert (assignment.state, assignment.decided_by) == ("rejected", curator)


# --- the token page --------------------------------------------------------------------------


def test_token_page_needs_a_login(client):
    response = client.get(TOKENS_PAGE)

    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_token_page_creates_a_token_and_shows_the_key_once(client):
    user = UserFactory()
    client.force_login(user)

    response = client.post(TOKENS_PAGE, {"name": "dashboard <script>"})

    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    token = ApiToken.objects.get(user=user)
    page = response.content.decode()
    key = response.context["created"].key
    assert key_hash(key) == token.key_hash
    assert f'value="{key}"' in page
    assert "shown only this once" in page
    assert "dashboard &lt;script&gt;" in page and "<script>" not in page

    # Reloading the page does not show it again; neither the sessions nor the token row hold it.
    again = client.get(TOKENS_PAGE).content.decode()
    assert key not in again
    assert token.key_prefix in again
    assert not any(key in str(s.get_decoded()) for s in Session.objects.all())
    assert not any(key in str(v) for v in ApiToken.objects.values_list().get())
    # And the key works.
    assert api_client(key).get(FOLLOWS_URL).status_code == 200


def test_token_page_refuses_a_blank_name_and_the_limit(client, settings):
    user = UserFactory()
    client.force_login(user)

    response = client.post(TOKENS_PAGE, {"name": "   "})
    assert response.status_code == 200
    assert "This field is required." in response.content.decode()
    assert not ApiToken.objects.exists()

    settings.API_TOKENS_PER_USER = 1
    client.post(TOKENS_PAGE, {"name": "one"})
    response = client.post(TOKENS_PAGE, {"name": "two"})
    assert "revoke one before creating another" in response.content.decode()
    assert list(ApiToken.objects.values_list("name", flat=True)) == ["one"]


def test_token_page_lists_only_ones_own_tokens(client):
    user, other = UserFactory(), UserFactory()
    token_create(user=user, name="my laptop")
    token_create(user=other, name="their server")
    client.force_login(user)

    page = client.get(TOKENS_PAGE).content.decode()

    assert "my laptop" in page
    assert "their server" not in page


def test_revoke_own_token_then_it_stops_working(client):
    user = UserFactory()
    created = token_create(user=user, name="old script")
    client.force_login(user)

    response = client.post(f"{TOKENS_PAGE}{created.token.pk}/revoke/")

    assert response.status_code == 302
    assert response["Location"] == TOKENS_PAGE
    created.token.refresh_from_db()
    assert created.token.revoked_at is not None
    assert created.token.revoked_at <= timezone.now()
    assert "revoked" in client.get(TOKENS_PAGE).content.decode()
    assert_error(api_client(created.key).get(FOLLOWS_URL), 401, "authentication_failed")


def test_another_users_token_cannot_be_revoked(client):
    owner, intruder = UserFactory(), UserFactory()
    created = token_create(user=owner, name="owner's")
    client.force_login(intruder)

    assert client.post(f"{TOKENS_PAGE}{created.token.pk}/revoke/").status_code == 404
    assert client.get(f"{TOKENS_PAGE}{created.token.pk}/revoke/").status_code == 405

    created.token.refresh_from_db()
    assert created.token.revoked_at is None
    assert api_client(created.key).get(FOLLOWS_URL).status_code == 200


# --- the schema ------------------------------------------------------------------------------


def test_schema_describes_the_bearer_token_and_the_access_endpoints():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)

    assert schema["components"]["securitySchemes"]["tokenAuth"]["scheme"] == "bearer"
    follows = schema["paths"]["/api/v1/me/follows/"]
    assert {"tokenAuth": []} in follows["post"]["security"]
    assert {} not in follows["get"]["security"]
    assert set(follows["post"]["responses"]) >= {"200", "201", "400", "401"}
    decide = schema["paths"]["/api/v1/assignments/{id}/accept/"]["post"]
    assert set(decide["responses"]) >= {"200", "401", "403", "404"}


# --- the admin -------------------------------------------------------------------------------


def test_admin_lists_tokens_without_keys_and_revokes_them(client):
    admin = UserFactory(is_staff=True, is_superuser=True)
    created = token_create(user=UserFactory(), name="leaked script")
    client.force_login(admin)

    changelist = client.get("/admin/api/apitoken/")
    assert changelist.status_code == 200
    assert "leaked script" in changelist.content.decode()
    assert client.get("/admin/api/apitoken/add/").status_code == 403

    response = client.post(
        "/admin/api/apitoken/",
        {"action": "revoke", "_selected_action": [created.token.pk]},
    )

    assert response.status_code == 302
    created.token.refresh_from_db()
    assert created.token.revoked_at is not None
    assert_error(api_client(created.key).get(FOLLOWS_URL), 401, "authentication_failed")


@pytest.mark.parametrize("url", [FOLLOWS_URL, ASSIGNMENTS_URL])
def test_answers_about_a_user_are_private_to_caches(url):
    key = token_create(user=curator_user(), name="c").key

    response = api_client(key).get(url)

    assert response.status_code == 200
    assert {"private", "no-store"} <= {
        part.strip() for part in response["Cache-Control"].split(",")
    }
    assert "Authorization" in response["Vary"]


def test_resending_the_token_form_creates_no_second_token(client):
    """A reload of the page that answered the POST sends the same form id again."""
    import re

    user = UserFactory()
    client.force_login(user)
    page = client.get(TOKENS_PAGE).content.decode()
    once = re.search(r'name="once" value="([0-9a-f-]+)"', page).group(1)

    first = client.post(TOKENS_PAGE, {"name": "script", "once": once})
    again = client.post(TOKENS_PAGE, {"name": "script", "once": once})

    assert ApiToken.objects.filter(user=user).count() == 1
    key = re.search(r'id="token-key"[^>]*value="([^"]+)"', first.content.decode()).group(1)
    assert "already sent" in again.content.decode() and key not in again.content.decode()
    # A fresh form (a new id) creates another.
    client.post(TOKENS_PAGE, {"name": "second", "once": "5f0c7e8a-1111-4b2c-9d3e-000000000001"})
    assert ApiToken.objects.filter(user=user).count() == 2
