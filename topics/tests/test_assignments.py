"""Assignment writes (``topics.assignments``): one curator decision, a curator placing a paper,
bulk decisions and moving papers between topics, each with its history."""

import pytest

from papers.tests.factories import CategoryFactory, PaperFactory
from topics.assignments import (
    assignment_add,
    assignment_decide,
    assignments_bulk_decide,
    assignments_move,
)
from topics.models import Assignment, Topic, TopicRedirect
from topics.services import topic_create
from topics.tagging.engine import papers_tag
from topics.tests.factories import AssignmentFactory, TopicFactory, UserFactory

pytestmark = pytest.mark.django_db

ACCEPTED, PENDING, REJECTED = "accepted", "pending", "rejected"
RULE, CLASSIFIER, CURATOR, IMPORT = "rule", "classifier", "curator", "import"


@pytest.fixture
def curator():
    return UserFactory(username="ada", is_staff=True)


@pytest.fixture
def tree():
    """Agents(Tool use, Planning(Search)) and a separate root Language."""
    agents = topic_create(name="Agents", slug="agents")
    tool_use = topic_create(name="Tool use", slug="tool-use", parent=agents)
    planning = topic_create(name="Planning", slug="planning", parent=agents)
    search = topic_create(name="Search", slug="search", parent=planning)
    language = topic_create(name="Language", slug="language")
    return {t.slug: t for t in (agents, tool_use, planning, search, language)}


def database_state():
    """Every row the assignment writes may touch, to prove a refusal wrote nothing."""
    return {
        "topics": list(Topic.objects.order_by("pk").values()),
        "assignments": list(Assignment.objects.order_by("pk").values()),
        "redirects": list(TopicRedirect.objects.order_by("pk").values("old_slug", "topic_id")),
        "topic_history": Topic.history.count(),
        "assignment_history": Assignment.history.count(),
    }


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


# --- bulk decisions and moves --------------------------------------------------------------


def test_bulk_decide_records_the_decision_and_its_history(tree, curator):
    rows = [
        AssignmentFactory(topic=tree["agents"], source=CLASSIFIER, state=PENDING, score=s)
        for s in (0.4, 0.6)
    ]
    untouched = AssignmentFactory(topic=tree["agents"])

    count = assignments_bulk_decide(
        assignments=Assignment.objects.filter(pk__in=[r.pk for r in rows]),
        state=ACCEPTED,
        user=curator,
    )

    assert count == 2
    for row in rows:
        row.refresh_from_db()
        assert (row.state, row.source, row.decided_by) == (ACCEPTED, CLASSIFIER, curator)
        assert row.decided_at is not None
        latest = row.history.latest()
        assert (latest.state, latest.decided_by, latest.history_user) == (
            ACCEPTED,
            curator,
            curator,
        )
    untouched.refresh_from_db()
    assert untouched.decided_by is None
    # pks are accepted too; unknown ones are ignored.
    assert (
        assignments_bulk_decide(assignments=[rows[0].pk, 999_999], state=REJECTED, user=curator)
        == 1
    )


@pytest.mark.parametrize(
    ("state", "user"), [("pending", "curator"), ("maybe", "curator"), ("accepted", None)]
)
def test_bulk_decide_refuses_and_writes_nothing(tree, curator, state, user):
    row = AssignmentFactory(topic=tree["agents"], source=CLASSIFIER, state=PENDING)
    before = database_state()
    with pytest.raises(ValueError):
        assignments_bulk_decide(assignments=[row], state=state, user=curator if user else None)
    assert database_state() == before


def test_move_rejects_here_accepts_there_and_re_tagging_keeps_both(tree, curator):
    category = CategoryFactory(code="cs.AI")
    source = tree["tool-use"]
    Topic.objects.filter(pk=source.pk).update(rule_query="agents")
    target = tree["language"]
    first = PaperFactory(title="Language agents", primary_category=category)
    second = PaperFactory(title="Agents that talk", primary_category=category)
    papers_tag(paper_ids=[first.pk, second.pk])
    leaving = list(Assignment.objects.filter(topic=source))
    # The second paper is already in the target, by the classifier.
    there = AssignmentFactory(
        paper=second, topic=target, source=CLASSIFIER, state=PENDING, score=0.55
    )
    already = AssignmentFactory(topic=target, source=RULE)

    result = assignments_move(assignments=[*leaving, already], topic=target, user=curator)
    papers_tag(paper_ids=[first.pk, second.pk])

    assert (result.moved, result.unchanged) == (2, 1)
    assert set(
        Assignment.objects.filter(topic=source).values_list("paper_id", "state", "decided_by")
    ) == {(first.pk, REJECTED, curator.pk), (second.pk, REJECTED, curator.pk)}
    created = Assignment.objects.get(paper=first, topic=target)
    assert (created.source, created.state, created.score, created.decided_by) == (
        CURATOR,
        ACCEPTED,
        None,
        curator,
    )
    assert created.history.latest().history_type == "+"
    there.refresh_from_db()
    assert (there.source, there.state, there.score, there.decided_by) == (
        CLASSIFIER,
        ACCEPTED,
        0.55,
        curator,
    )
    assert there.history.latest().history_user == curator
    already.refresh_from_db()
    assert already.decided_by is None


def test_move_to_an_inactive_topic_is_refused(tree, curator):
    row = AssignmentFactory(topic=tree["agents"])
    inactive = topic_create(name="Old", active=False)
    before = database_state()
    with pytest.raises(ValueError, match="'Old': it is inactive"):
        assignments_move(assignments=[row], topic=inactive, user=curator)
    assert database_state() == before
