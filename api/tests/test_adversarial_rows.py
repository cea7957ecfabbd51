"""Trying to break what the API gained this session: ``PATCH me/follows/{id}/`` (other users'
follows, hostile bodies and content types, CSRF under session authentication, mass
assignment), the 400 for a cursor the API did not hand out (forged, truncated, mismatched with
the ordering), and the rows paper lists are built from (one JSON-aggregating query on
PostgreSQL) against the detail response and the prefetching path, with hostile stored text.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from rest_framework.test import APIClient

from api.selectors import paper_row, paper_rows, papers_for_api, rows_of
from api.services import token_create
from api.tests.conftest import assert_error, make_paper
from follows.models import Follow
from follows.services import follow_create
from topics.tests.factories import TopicFactory, UserFactory

pytestmark = pytest.mark.django_db

FOLLOWS_URL = "/api/v1/me/follows/"


def bearer(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token_create(user=user, name='t').key}")
    return client


@pytest.fixture
def owned():
    """``(owner, their follow of a topic, another user)``; the follow is weekly."""
    owner, other = UserFactory(), UserFactory()
    follow = follow_create(user=owner, topic=TopicFactory(slug="owned"), digest_frequency="weekly")
    return owner, follow, other


def unchanged(follow, *, user, frequency="weekly"):
    follow.refresh_from_db()
    assert (follow.user_id, follow.digest_frequency, follow.topic.slug) == (
        user.pk,
        frequency,
        "owned",
    )


# --- PATCH me/follows/{id}/ ---------------------------------------------------------------------


def test_another_users_follow_is_the_same_404_as_a_follow_that_does_not_exist(owned):
    owner, follow, other = owned
    client = bearer(other)
    theirs = client.patch(f"{FOLLOWS_URL}{follow.pk}/", {"digest_frequency": "off"}, format="json")
    missing = client.patch(
        f"{FOLLOWS_URL}{follow.pk + 1000}/", {"digest_frequency": "off"}, format="json"
    )
    assert_error(theirs, 404, code="not_found")
    assert theirs.json() == missing.json()  # nothing tells whether the id exists
    unchanged(follow, user=owner)


@pytest.mark.parametrize("pk", ["99999999999999999999", "9223372036854775808", "0"])
def test_ids_out_of_range_are_a_404_never_a_500(owned, pk):
    owner, _follow, _ = owned
    response = bearer(owner).patch(
        f"{FOLLOWS_URL}{pk}/", {"digest_frequency": "off"}, format="json"
    )
    assert response.status_code == 404, response.content


@pytest.mark.parametrize(
    "body",
    [
        {"digest_frequency": "DAILY"},
        {"digest_frequency": " daily"},
        {"digest_frequency": "daily\x00"},
        {"digest_frequency": ""},
        {"digest_frequency": None},
        {"digest_frequency": 1},
        {"digest_frequency": True},
        {"digest_frequency": ["daily"]},
        {"digest_frequency": {"value": "daily"}},
        {"frequency": "daily"},
        {},
    ],
    ids=repr,
)
def test_bad_values_are_a_400_naming_the_field_and_change_nothing(owned, body):
    owner, follow, _ = owned
    response = bearer(owner).patch(f"{FOLLOWS_URL}{follow.pk}/", body, format="json")
    assert_error(response, 400, param="digest_frequency")
    unchanged(follow, user=owner)


@pytest.mark.parametrize(
    "raw",
    ['["daily"]', '[{"digest_frequency": "daily"}]', "null", '"daily"', "42", "{", "", "[" * 5000],
)
def test_bodies_that_are_not_one_json_object_are_a_400_and_change_nothing(owned, raw):
    owner, follow, _ = owned
    response = bearer(owner).patch(
        f"{FOLLOWS_URL}{follow.pk}/", raw, content_type="application/json"
    )
    assert_error(response, 400)
    unchanged(follow, user=owner)


@pytest.mark.parametrize(
    ("data", "content_type"),
    [
        ("digest_frequency=daily", "application/x-www-form-urlencoded"),
        ('{"digest_frequency": "daily"}', "text/plain"),
        ('{"digest_frequency": "daily"}', "application/xml"),
        ('{"digest_frequency": "daily"}', "multipart/form-data; boundary=x"),
    ],
)
def test_other_content_types_are_a_415_and_change_nothing(owned, data, content_type):
    owner, follow, _ = owned
    response = bearer(owner).patch(f"{FOLLOWS_URL}{follow.pk}/", data, content_type=content_type)
    assert_error(response, 415)
    unchanged(follow, user=owner)


def test_fields_other_than_the_frequency_are_ignored_not_written(owned):
    owner, follow, other = owned
    elsewhere = TopicFactory(slug="elsewhere")
    body = {
        "digest_frequency": "daily",
        "user": other.pk,
        "user_id": other.pk,
        "topic": elsewhere.slug,
        "topic_id": elsewhere.pk,
        "id": follow.pk + 1,
        "kind": "search",
        "query": "hijacked",
    }
    response = bearer(owner).patch(f"{FOLLOWS_URL}{follow.pk}/", body, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["id"] == follow.pk and response.json()["topic"] == "owned"
    unchanged(follow, user=owner, frequency="daily")
    follow.refresh_from_db()
    assert follow.kind == Follow.Kind.TOPIC and not follow.query


def test_put_and_a_patch_of_the_list_are_not_allowed(owned):
    owner, follow, _ = owned
    client = bearer(owner)
    put = client.put(f"{FOLLOWS_URL}{follow.pk}/", {"digest_frequency": "daily"}, format="json")
    assert_error(put, 405)
    listed = client.patch(FOLLOWS_URL, {"digest_frequency": "daily"}, format="json")
    assert_error(listed, 405)
    unchanged(follow, user=owner)


def test_a_session_patch_needs_the_csrf_token(owned):
    owner, follow, _ = owned
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(owner)
    url = f"{FOLLOWS_URL}{follow.pk}/"

    refused = client.patch(url, {"digest_frequency": "daily"}, format="json")
    assert_error(refused, 403, code="permission_denied")
    assert "CSRF" in refused.json()["error"]["message"]
    # A token from another origin's form (no matching cookie) is refused too.
    forged = client.patch(
        url, {"digest_frequency": "daily"}, format="json", HTTP_X_CSRFTOKEN="a" * 64
    )
    assert forged.status_code == 403
    unchanged(follow, user=owner)

    client.get("/follows/")  # the site's own page hands out the CSRF cookie
    token = client.cookies["csrftoken"].value
    allowed = client.patch(
        url, {"digest_frequency": "daily"}, format="json", HTTP_X_CSRFTOKEN=token
    )
    assert allowed.status_code == 200, allowed.content
    unchanged(follow, user=owner, frequency="daily")


def test_anonymous_patch_is_a_401(owned):
    owner, follow, _ = owned
    response = APIClient().patch(
        f"{FOLLOWS_URL}{follow.pk}/", {"digest_frequency": "daily"}, format="json"
    )
    assert_error(response, 401)
    unchanged(follow, user=owner)


# --- cursors ------------------------------------------------------------------------------------


def cursor(**tokens) -> str:
    return base64.b64encode(urlencode(tokens, doseq=True).encode()).decode()


@pytest.fixture
def papers(db):
    topic = TopicFactory(slug="cursors")
    return [
        make_paper(submitted=dt.date(2026, 9, 1) + dt.timedelta(days=n), topics=[topic])
        for n in range(5)
    ]


FORGED = [
    "not base64 at all!",
    "é",
    cursor(o="-1"),
    cursor(o="x"),
    cursor(p="2026-13-45"),
    cursor(p="2026-02-30"),
    cursor(p="'; DROP TABLE papers_paper; --"),
    cursor(p="\x00"),
    cursor(p="9" * 40),
    cursor(o="1", r="1", p="1e5"),
    base64.b64encode(b"\xff\xfe\x00p=1").decode(),
]


def test_a_cursor_without_one_base64_character_is_a_400_not_the_first_page(api_client, papers):
    """base64 decoding drops what is not in its alphabet: ``%%%`` decodes to nothing, which
    DRF reads as the first page; the API promises a 400 for any cursor it did not hand out."""
    for value in ("%%%", "!", "...."):
        response = api_client.get("/api/v1/papers/", {"cursor": value})
        assert_error(response, 400, param="cursor")


@pytest.mark.parametrize("value", FORGED, ids=repr)
@pytest.mark.parametrize(
    "listing",
    [
        "/api/v1/papers/",
        "/api/v1/papers/?ordering=id",
        "/api/v1/papers/?ordering=-updated",
        "/api/v1/topics/cursors/papers/",
    ],
)
def test_a_forged_cursor_is_a_400_naming_cursor(api_client, papers, listing, value):
    separator = "&" if "?" in listing else "?"
    response = api_client.get(f"{listing}{separator}{urlencode({'cursor': value})}")
    assert_error(response, 400, param="cursor")


def test_a_cursor_handed_out_for_one_ordering_is_a_400_with_another(api_client, papers):
    by_id = api_client.get("/api/v1/papers/?ordering=id&page_size=2").json()["next"]
    by_date = api_client.get("/api/v1/papers/?page_size=2").json()["next"]
    id_cursor = parse_qs(urlsplit(by_id).query)["cursor"][0]
    date_cursor = parse_qs(urlsplit(by_date).query)["cursor"][0]
    assert_error(api_client.get("/api/v1/papers/", {"cursor": id_cursor}), 400, param="cursor")
    assert_error(
        api_client.get("/api/v1/papers/", {"cursor": date_cursor, "ordering": "id"}),
        400,
        param="cursor",
    )


@pytest.mark.parametrize("ordering", ["-submitted", "submitted", "id", "-updated", "updated"])
def test_following_next_links_visits_every_paper_once(api_client, papers, ordering):
    url = f"/api/v1/papers/?ordering={ordering}&page_size=2"
    seen = []
    while url:
        response = api_client.get(url)
        assert response.status_code == 200, response.content
        seen += [paper["id"] for paper in response.json()["results"]]
        url = response.json()["next"]
    assert sorted(seen) == sorted(p.arxiv_id for p in papers) and len(seen) == len(set(seen))


# --- rows against the detail response, with hostile stored text ---------------------------------

HOSTILE = (
    "<script>alert(1)</script> \"quoted\" 'single' \\back\\slash \\u0000 {{ 7*7 }} {% x %} "
    "\u202e\u2028\u2029 \x07\x1b tab\tnew\nline ü é 🙂 𝔘 \ufeff"
)


@pytest.fixture
def hostile(db):
    topic_a = TopicFactory(name=f"Topic {HOSTILE}", slug="hostile-a")
    topic_b = TopicFactory(name=f"topic {HOSTILE}", slug="hostile-b")  # sorts by the collation
    arxiv = make_paper(
        arxiv_id="2609.12345",
        title=f"Title {HOSTILE}",
        abstract=f"Abstract {HOSTILE}",
        journal_ref=f"J. {HOSTILE}",
        doi="10.1000/\"x'<y>",
        authors=[
            (f"Author {HOSTILE}", [f"Aff B {HOSTILE}", f"aff a {HOSTILE}", f"Äff c {HOSTILE}"]),
            ('O\'Brien "Jr"', []),
        ],
        affiliations=[f"Paper aff {HOSTILE}", 'École "Normale"'],
        topics=[topic_a, topic_b],
    )
    local = make_paper(
        arxiv_id=None,
        import_key="hostile-local-1",
        title=f"Local {HOSTILE}",
        authors=[(f"Local author {HOSTILE}", [f"Local aff {HOSTILE}"])],
        topics=[topic_a],
    )
    return arxiv, local


def test_the_rows_equal_the_prefetching_path_for_hostile_text(hostile):
    rows = {row["id"]: row for row in rows_of(paper_rows())}
    for paper in papers_for_api():
        assert rows[paper.pk] == paper_row(paper), paper.pk
    assert rows[hostile[0].pk]["authors"][0]["name"] == f"Author {HOSTILE}"


@pytest.mark.parametrize(
    "listing",
    ["/api/v1/papers/", "/api/v1/topics/hostile-a/papers/", "/api/v1/topics/hostile-b/papers/"],
)
def test_list_items_equal_the_detail_response_for_hostile_text(api_client, hostile, listing):
    response = api_client.get(listing)
    assert response.status_code == 200, response.content
    items = response.json()["results"]
    assert items
    for item in items:
        detail = api_client.get(f"/api/v1/papers/{item['id']}/")
        assert detail.status_code == 200, detail.content
        assert item == detail.json(), item["id"]
    titles = {item["title"] for item in items}
    assert f"Title {HOSTILE}" in titles or f"Local {HOSTILE}" in titles
    # The JSON carries the text as text: a parser gets back exactly what was stored.
    raw = response.content.decode()
    assert "<script>" not in raw or json.loads(raw) == response.json()


def test_selected_fields_of_a_list_equal_those_of_the_detail(api_client, hostile):
    fields = "id,title,authors,affiliations,topics"
    listed = api_client.get("/api/v1/papers/", {"fields": fields})
    assert listed.status_code == 200, listed.content
    for item in listed.json()["results"]:
        assert set(item) == set(fields.split(","))
        detail = api_client.get(f"/api/v1/papers/{item['id']}/", {"fields": fields}).json()
        assert item == detail
