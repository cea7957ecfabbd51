"""Topic and curator services (``topic_create``, ``topic_move``, ``assignment_decide``,
``assignment_add``) and the admin pages that go through them."""

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from papers.tests.factories import (
    AffiliationFactory,
    AuthorshipFactory,
    CategoryFactory,
    PaperFactory,
)
from topics.models import Assignment, Topic
from topics.rules import RuleSyntaxError
from topics.services import assignment_add, assignment_decide, topic_create, topic_move
from topics.tests.factories import AssignmentFactory, TopicFactory, UserFactory

pytestmark = pytest.mark.django_db


def topic_rows():
    return list(Topic.objects.order_by("pk").values())


def paths():
    return dict(Topic.objects.values_list("name", "path"))


@pytest.fixture
def tree():
    """A(B(C(D)), E) and a separate root F."""
    a = topic_create(name="A")
    b = topic_create(name="B", parent=a)
    c = topic_create(name="C", parent=b)
    d = topic_create(name="D", parent=c)
    e = topic_create(name="E", parent=a)
    f = topic_create(name="F")
    return {topic.name: topic for topic in (a, b, c, d, e, f)}


# --- topic_create ---------------------------------------------------------------------------


def test_topic_create_sets_the_materialised_path(tree):
    a, b, c, d = tree["A"], tree["B"], tree["C"], tree["D"]
    assert paths() == {
        "A": f"{a.pk}/",
        "B": f"{a.pk}/{b.pk}/",
        "C": f"{a.pk}/{b.pk}/{c.pk}/",
        "D": f"{a.pk}/{b.pk}/{c.pk}/{d.pk}/",
        "E": f"{a.pk}/{tree['E'].pk}/",
        "F": f"{tree['F'].pk}/",
    }
    assert set(Topic.objects.subtree(b).values_list("name", flat=True)) == {"B", "C", "D"}


def test_topic_create_stores_every_field():
    cl = CategoryFactory(code="cs.CL")
    lg = CategoryFactory(code="cs.LG")
    parent = topic_create(name="Large Language Model", slug="llm", short_name="LLM")
    topic = topic_create(
        name="  LLM Agent Training ",
        parent=parent,
        description="Training agents.",
        rule_query='"agent training" OR "agentic RL"',
        rule_categories=[cl, lg],
    )
    topic.refresh_from_db()
    assert (topic.name, topic.slug, topic.parent, topic.description) == (
        "LLM Agent Training",
        "llm-agent-training",
        parent,
        "Training agents.",
    )
    assert topic.rule_query == '"agent training" OR "agentic RL"'
    assert set(topic.rule_categories.all()) == {cl, lg}
    assert str(parent) == "LLM: Large Language Model"
    assert parent.slug == "llm"


def test_topic_create_makes_slugs_unique_unless_one_is_given():
    first = topic_create(name="Tool Use")
    second = topic_create(name="Tool use")
    third = topic_create(name="Tool-Use")
    assert [first.slug, second.slug, third.slug] == ["tool-use", "tool-use-2", "tool-use-3"]

    before = topic_rows()
    with pytest.raises(ValidationError) as caught:
        topic_create(name="Tools", slug="tool-use")
    assert "slug" in caught.value.message_dict
    assert topic_rows() == before


def test_topic_create_uses_the_stored_path_of_a_stale_parent(tree):
    stale_b = Topic.objects.get(name="B")
    topic_move(topic=tree["B"], parent=tree["F"])

    child = topic_create(name="G", parent=stale_b)

    assert child.path == f"{tree['F'].pk}/{tree['B'].pk}/{child.pk}/"


@pytest.mark.parametrize(
    ("rule_query", "position"),
    [('agents OR ("tool use"', 10), ("agents OR", 7), ('""', 0)],
)
def test_topic_create_refuses_a_malformed_rule_and_writes_nothing(rule_query, position):
    with pytest.raises(RuleSyntaxError) as caught:
        topic_create(name="Agents", rule_query=rule_query)
    assert caught.value.position == position
    assert not Topic.objects.exists()


def test_topic_create_refuses_a_blank_name():
    with pytest.raises(ValueError, match="needs a name"):
        topic_create(name="   ")
    assert not Topic.objects.exists()


# --- topic_move -----------------------------------------------------------------------------


def test_topic_move_rewrites_the_paths_of_the_topic_and_its_descendants(tree):
    a, b, c, d, e, f = (tree[name] for name in "ABCDEF")
    untouched = {row["id"]: row for row in topic_rows() if row["name"] in {"A", "C", "D", "E", "F"}}

    moved = topic_move(topic=b, parent=e)

    assert moved is b
    assert (b.parent, b.path) == (e, f"{a.pk}/{e.pk}/{b.pk}/")
    assert paths() == {
        "A": f"{a.pk}/",
        "B": f"{a.pk}/{e.pk}/{b.pk}/",
        "C": f"{a.pk}/{e.pk}/{b.pk}/{c.pk}/",
        "D": f"{a.pk}/{e.pk}/{b.pk}/{c.pk}/{d.pk}/",
        "E": f"{a.pk}/{e.pk}/",
        "F": f"{f.pk}/",
    }
    assert set(Topic.objects.subtree(e).values_list("name", flat=True)) == {"E", "B", "C", "D"}
    assert Topic.objects.get(pk=c.pk).parent == b
    # Only paths moved for the descendants; the other topics were not written at all.
    for row in topic_rows():
        if row["name"] in {"A", "E", "F"}:
            assert row == untouched[row["id"]]


def test_topic_move_to_the_root_and_back(tree):
    b, c = tree["B"], tree["C"]
    topic_move(topic=c, parent=None)
    assert Topic.objects.get(pk=c.pk).parent is None
    assert paths()["D"] == f"{c.pk}/{tree['D'].pk}/"

    topic_move(topic=c, parent=b)
    assert paths()["D"] == f"{tree['A'].pk}/{b.pk}/{c.pk}/{tree['D'].pk}/"


def test_topic_move_to_the_same_parent_writes_nothing(tree):
    before = topic_rows()
    topic_move(topic=tree["C"], parent=tree["B"])
    assert topic_rows() == before


@pytest.mark.parametrize("target", ["B", "C", "D"])
def test_topic_move_refuses_a_cycle_and_writes_nothing(tree, target):
    before = topic_rows()
    with pytest.raises(ValueError) as caught:
        topic_move(topic=tree["B"], parent=tree[target])
    assert "'B'" in str(caught.value) and f"'{target}'" in str(caught.value)
    assert "cycle" in str(caught.value)
    assert topic_rows() == before


def test_topic_move_refuses_a_topic_without_a_path():
    broken = Topic.objects.create(name="Broken", slug="broken")
    other = topic_create(name="Other")
    with pytest.raises(ValueError, match="no path"):
        topic_move(topic=broken, parent=other)
    assert Topic.objects.get(pk=broken.pk).parent is None


# --- assignment_decide / assignment_add -----------------------------------------------------


@pytest.mark.parametrize("state", [Assignment.State.ACCEPTED, Assignment.State.REJECTED])
def test_assignment_decide_records_the_curator_decision(state):
    curator = UserFactory()
    assignment = AssignmentFactory(source=Assignment.Source.RULE, score=1.0)

    assignment_decide(assignment=assignment, state=state, user=curator)

    assignment.refresh_from_db()
    assert (assignment.state, assignment.decided_by) == (state, curator)
    assert assignment.decided_at is not None
    assert assignment.is_curator_decision
    # The source stays, so one can still see where the assignment came from.
    assert (assignment.source, assignment.score) == (Assignment.Source.RULE, 1.0)


def test_assignment_decide_refuses_an_unknown_state():
    assignment = AssignmentFactory()
    before = list(Assignment.objects.values())
    with pytest.raises(ValueError, match="maybe"):
        assignment_decide(assignment=assignment, state="maybe", user=UserFactory())
    assert list(Assignment.objects.values()) == before


def test_assignment_add_creates_an_accepted_curator_assignment():
    curator = UserFactory()
    paper, topic = PaperFactory(), TopicFactory()

    assignment = assignment_add(paper=paper, topic=topic, user=curator)

    row = Assignment.objects.get()
    assert row.pk == assignment.pk
    assert (row.paper, row.topic, row.source, row.state, row.score) == (
        paper,
        topic,
        Assignment.Source.CURATOR,
        Assignment.State.ACCEPTED,
        None,
    )
    assert (row.decided_by, row.decided_at is not None) == (curator, True)


def test_assignment_add_takes_over_an_existing_assignment():
    rejected = AssignmentFactory(
        source=Assignment.Source.CLASSIFIER, state=Assignment.State.REJECTED, score=0.3
    )
    curator = UserFactory()

    assignment_add(paper=rejected.paper, topic=rejected.topic, user=curator)

    row = Assignment.objects.get()
    assert row.pk == rejected.pk
    assert (row.source, row.state, row.decided_by) == ("curator", "accepted", curator)


# --- the admin, which writes through these services -----------------------------------------


@pytest.fixture
def curator_client(client):
    client.force_login(UserFactory(username="curator", is_staff=True, is_superuser=True))
    return client


def topic_form(**values):
    form = {
        "name": "",
        "short_name": "",
        "slug": "",
        "parent": "",
        "description": "",
        "active": "on",
        "rule_query": "",
        "rule_categories": [],
    }
    form.update(values)
    return form


def test_admin_add_topic_sets_path_and_rule_categories(curator_client, tree):
    category = CategoryFactory(code="cs.CL")
    response = curator_client.post(
        reverse("admin:topics_topic_add"),
        topic_form(
            name="Agents",
            slug="agents",
            parent=tree["C"].pk,
            rule_query='"language agents"',
            rule_categories=[category.pk],
            active="",
        ),
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    topic = Topic.objects.get(slug="agents")
    assert topic.path == f"{tree['C'].path}{topic.pk}/"
    assert list(topic.rule_categories.all()) == [category]
    assert topic.rule_query == '"language agents"'
    assert topic.active is False


def test_admin_change_parent_moves_the_subtree(curator_client, tree):
    b = tree["B"]
    response = curator_client.post(
        reverse("admin:topics_topic_change", args=[b.pk]),
        topic_form(name="B renamed", slug=b.slug, parent=tree["F"].pk),
    )
    assert response.status_code == 302
    assert paths()["B renamed"] == f"{tree['F'].pk}/{b.pk}/"
    assert paths()["D"] == f"{tree['F'].pk}/{b.pk}/{tree['C'].pk}/{tree['D'].pk}/"


@pytest.mark.parametrize(
    ("values", "field", "message"),
    [
        ({"rule_query": "agents OR"}, "rule_query", "OR needs a term after it at position 7"),
        ({"parent": "D"}, "parent", "is this topic or one of its descendants"),
    ],
)
def test_admin_refuses_a_bad_rule_or_a_cycle(curator_client, tree, values, field, message):
    b = tree["B"]
    if "parent" in values:
        values = {"parent": tree[values["parent"]].pk}
    before = topic_rows()
    response = curator_client.post(
        reverse("admin:topics_topic_change", args=[b.pk]),
        topic_form(name="B", slug=b.slug, parent=tree["A"].pk) | values,
    )
    assert response.status_code == 200
    assert message in " ".join(response.context["adminform"].form.errors[field])
    assert topic_rows() == before


def test_admin_accept_and_reject_actions_record_curator_decisions(curator_client):
    first, second = AssignmentFactory(), AssignmentFactory()
    url = reverse("admin:topics_assignment_changelist")

    response = curator_client.post(
        url, {"action": "reject", "_selected_action": [first.pk, second.pk]}, follow=True
    )

    assert response.status_code == 200
    assert "2 assignment(s) marked rejected by you." in response.content.decode()
    assert set(Assignment.objects.values_list("state", "decided_by__username")) == {
        ("rejected", "curator")
    }


def test_admin_add_assignment_is_a_curator_assignment(curator_client):
    paper, topic = PaperFactory(), TopicFactory()
    response = curator_client.post(
        reverse("admin:topics_assignment_add"), {"paper": paper.pk, "topic": topic.pk}
    )
    assert response.status_code == 302
    row = Assignment.objects.get()
    assert (row.source, row.state, row.decided_by.username) == ("curator", "accepted", "curator")


def test_admin_pages_load(curator_client):
    paper = PaperFactory(title="Holographic agents")
    AuthorshipFactory(paper=paper, position=0)
    paper.versions.create(number=1)
    AffiliationFactory()
    assignment = AssignmentFactory(paper=paper)
    for name in (
        "papers_paper",
        "papers_category",
        "papers_author",
        "papers_affiliation",
        "topics_topic",
        "topics_assignment",
    ):
        assert curator_client.get(reverse(f"admin:{name}_changelist")).status_code == 200, name
    assert (
        curator_client.get(reverse("admin:papers_paper_change", args=[paper.pk])).status_code == 200
    )
    assert (
        curator_client.get(
            reverse("admin:topics_assignment_change", args=[assignment.pk])
        ).status_code
        == 200
    )
    assert curator_client.get(reverse("admin:topics_topic_add")).status_code == 200


def test_admin_paper_search_finds_authors(curator_client):
    paper = PaperFactory(title="Holographic agents")
    AuthorshipFactory(paper=paper, author__name="Juan Maldacena", position=0)
    PaperFactory(title="Something else")

    response = curator_client.get(reverse("admin:papers_paper_changelist"), {"q": "Maldacena"})

    assert list(response.context["cl"].result_list) == [paper]


def test_admin_retag_action_tags_every_paper(curator_client, django_capture_on_commit_callbacks):
    category = CategoryFactory(code="cs.CL")
    topic = topic_create(name="CL", rule_categories=[category])
    papers = [PaperFactory(primary_category=category) for _ in range(3)]

    with django_capture_on_commit_callbacks(execute=True):
        response = curator_client.post(
            reverse("admin:topics_topic_changelist"),
            {"action": "retag_all_papers", "_selected_action": [topic.pk]},
            follow=True,
        )

    assert "Queued tagging of 3 papers in 1 tasks." in response.content.decode()
    assert set(topic.assignments.values_list("paper", flat=True)) == {p.pk for p in papers}
