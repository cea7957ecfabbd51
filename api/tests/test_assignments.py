"""``assignments/`` (curators): each role on each action, the curator permissions, the filters
and bodies, and curator decisions kept by re-tagging."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from api.services import token_create
from api.tests.conftest import assert_error, curator_user, expect, token_client
from papers.tests.factories import PaperFactory
from topics.models import Assignment
from topics.tests.factories import AssignmentFactory, TopicFactory, UserFactory

pytestmark = pytest.mark.django_db

ASSIGNMENTS_URL = "/api/v1/assignments/"


@pytest.mark.parametrize(
    ("role", "status"), expect(None, owner=403, other=403, curator=200).items()
)
def test_assignment_list_by_role(access_world, role, status):
    response = token_client(access_world["keys"][role]).get(ASSIGNMENTS_URL)

    assert response.status_code == status, response.content
    if status == 403:
        assert_error(response, 403, code="permission_denied")
    if status == 200:
        assert [a["id"] for a in response.json()["results"]] == [access_world["assignment"].pk]


@pytest.mark.parametrize(
    ("role", "status"), expect(None, owner=403, other=403, curator=200).items()
)
def test_assignment_retrieve_by_role(access_world, role, status):
    assignment = access_world["assignment"]

    response = token_client(access_world["keys"][role]).get(f"{ASSIGNMENTS_URL}{assignment.pk}/")

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
def test_assignment_create_by_role(access_world, role, status):
    response = token_client(access_world["keys"][role]).post(
        ASSIGNMENTS_URL, {"paper": "2609.99999v2", "topic": "agents"}, format="json"
    )

    assert response.status_code == status, response.content
    created = Assignment.objects.filter(
        paper=access_world["paper"], topic=access_world["topic"]
    ).first()
    if status == 201:
        assert (created.source, created.state, created.decided_by) == (
            "curator",
            "accepted",
            access_world["curator"],
        )
        assert response.json()["paper"] == "2609.99999"
        assert response.json()["decided_by"] == access_world["curator"].username
    else:
        assert created is None


@pytest.mark.parametrize("decision", ["accept", "reject"])
@pytest.mark.parametrize(
    ("role", "status"), expect(None, owner=403, other=403, curator=200).items()
)
def test_assignment_decision_by_role(access_world, role, status, decision):
    assignment = access_world["assignment"]

    response = token_client(access_world["keys"][role]).post(
        f"{ASSIGNMENTS_URL}{assignment.pk}/{decision}/"
    )

    assert response.status_code == status, response.content
    assignment.refresh_from_db()
    if status == 200:
        state = "accepted" if decision == "accept" else "rejected"
        assert (assignment.state, assignment.decided_by) == (state, access_world["curator"])
        # Source and score are kept; the decision is in the history, by the curator.
        assert (assignment.source, assignment.score) == ("classifier", 0.4)
        latest = assignment.history.first()
        assert (latest.state, latest.history_user) == (state, access_world["curator"])
        assert response.json()["state"] == state
    else:
        assert (assignment.state, assignment.decided_by) == ("pending", None)


def test_staff_need_the_assignment_permissions_not_just_staff_status():
    staff = UserFactory(is_staff=True)
    key = token_create(user=staff, name="staff").key
    assert token_client(key).get(ASSIGNMENTS_URL).status_code == 403

    staff.user_permissions.add(Permission.objects.get(codename="view_assignment"))
    assert token_client(key).get(ASSIGNMENTS_URL).status_code == 200
    # Viewing is not deciding.
    assignment = AssignmentFactory()
    response = token_client(key).post(f"{ASSIGNMENTS_URL}{assignment.pk}/accept/")
    assert_error(response, 403, code="permission_denied")


def test_assignment_filters_and_queries_do_not_grow(django_assert_max_num_queries):
    curator = curator_user()
    key = token_create(user=curator, name="c").key
    agents, other = TopicFactory(slug="agents"), TopicFactory(slug="other")
    paper = PaperFactory(arxiv_id="2609.00042")
    wanted = AssignmentFactory(paper=paper, topic=agents, state="pending", source="classifier")
    AssignmentFactory(paper=paper, topic=other)
    AssignmentFactory(topic=agents, source="rule")

    def ids(**params):
        response = token_client(key).get(ASSIGNMENTS_URL, params)
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
    "spelling",
    [
        "https://arxiv.org/abs/2609.00042v3/",
        "10.48550/arXiv.2609.00042",
        "arXiv:2609.00042v1 [cs.CL]",
    ],
)
def test_the_paper_filter_and_body_take_pasted_spellings(spelling):
    key = token_create(user=curator_user(), name="c").key
    agents = TopicFactory(slug="agents")
    paper = PaperFactory(arxiv_id="2609.00042")
    AssignmentFactory(topic=agents)

    created = token_client(key).post(
        ASSIGNMENTS_URL, {"paper": spelling, "topic": "agents"}, format="json"
    )
    listed = token_client(key).get(ASSIGNMENTS_URL, {"paper": spelling})

    assert created.status_code == 201, created.content
    assert created.json()["paper"] == "2609.00042"
    assert [a["paper"] for a in listed.json()["results"]] == ["2609.00042"]
    assert Assignment.objects.get(pk=created.json()["id"]).paper == paper


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"state": "maybe"}, "state"),
        ({"topic": "nope"}, "topic"),
        ({"paper": "1234"}, "paper"),
        ({"paper": "https://evil.example/abs/2609.00042"}, "paper"),
        ({"paper": "arXiv:2609.00042 [cs.XX]"}, "paper"),
    ],
)
def test_bad_assignment_filters_get_400_naming_the_parameter(params, name):
    key = token_create(user=curator_user(), name="c").key

    response = token_client(key).get(ASSIGNMENTS_URL, params)

    assert_error(response, 400, code="invalid_parameter")
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

    response = token_client(key).post(ASSIGNMENTS_URL, body, format="json")

    assert_error(response, 400, code="invalid_request")
    assert field in response.json()["error"]["details"]
    assert not Assignment.objects.exists()


def test_deciding_an_unknown_assignment_is_404():
    key = token_create(user=curator_user(), name="c").key

    assert_error(token_client(key).post(f"{ASSIGNMENTS_URL}999999/accept/"), 404, code="not_found")


def test_curator_decision_is_kept_by_retagging_like_an_admin_decision():
    """The API records the same curator decision as the admin: tagging leaves it alone."""
    from topics.tagging.engine import papers_tag

    curator = curator_user()
    key = token_create(user=curator, name="c").key
    topic = TopicFactory(slug="agents", rule_query="agents")
    paper = PaperFactory(title="Agents that learn", abstract="Agents.")
    assignment = AssignmentFactory(paper=paper, topic=topic, source="rule")

    assert token_client(key).post(f"{ASSIGNMENTS_URL}{assignment.pk}/reject/").status_code == 200
    papers_tag(paper_ids=[paper.pk])

    assignment.refresh_from_db()
    assert (assignment.state, assignment.decided_by) == ("rejected", curator)
