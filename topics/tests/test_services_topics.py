"""Topic writes (``topics.services``): create and move with materialised paths, rename with
redirects (the old addresses answering 301), merge; and the admin pages that go through them."""

import datetime as dt

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone

from papers.tests.factories import (
    AffiliationFactory,
    AuthorshipFactory,
    CategoryFactory,
    PaperFactory,
)
from topics.assignments import assignments_bulk_decide
from topics.models import Assignment, Topic, TopicRedirect
from topics.services import topic_create, topic_merge, topic_move, topic_rename
from topics.signals import topics_merged
from topics.tagging.engine import papers_tag
from topics.tagging.rules import RuleSyntaxError
from topics.tests.factories import AssignmentFactory, TopicFactory, UserFactory

pytestmark = pytest.mark.django_db

ACCEPTED, PENDING, REJECTED = "accepted", "pending", "rejected"
RULE, CLASSIFIER, CURATOR, IMPORT = "rule", "classifier", "curator", "import"


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


@pytest.fixture
def curator():
    return UserFactory(username="ada", is_staff=True)


@pytest.fixture
def curated_tree():
    """Agents(Tool use, Planning(Search)) and a separate root Language, with slugs."""
    agents = topic_create(name="Agents", slug="agents")
    tool_use = topic_create(name="Tool use", slug="tool-use", parent=agents)
    planning = topic_create(name="Planning", slug="planning", parent=agents)
    search = topic_create(name="Search", slug="search", parent=planning)
    language = topic_create(name="Language", slug="language")
    return {t.slug: t for t in (agents, tool_use, planning, search, language)}


def database_state():
    """Every row rename and merge may write, to prove a refusal wrote nothing."""
    return {
        "topics": list(Topic.objects.order_by("pk").values()),
        "assignments": list(Assignment.objects.order_by("pk").values()),
        "redirects": list(TopicRedirect.objects.order_by("pk").values("old_slug", "topic_id")),
        "topic_history": Topic.history.count(),
        "assignment_history": Assignment.history.count(),
    }


def redirects():
    return dict(TopicRedirect.objects.values_list("old_slug", "topic__slug"))


# --- rename --------------------------------------------------------------------------------


def test_rename_keeps_the_old_slug_as_a_redirect_and_records_who(curated_tree, curator, client):
    topic = curated_tree["tool-use"]

    topic_rename(topic=topic, name="Tool learning", short_name="TL", user=curator)

    topic.refresh_from_db()
    assert (topic.name, topic.short_name, topic.slug) == ("Tool learning", "TL", "tool-learning")
    assert redirects() == {"tool-use": "tool-learning"}
    latest = topic.history.latest()
    assert (latest.history_user, latest.history_change_reason) == (
        curator,
        "renamed from 'tool-use'",
    )
    response = client.get("/topics/tool-use/?page=2")
    assert response.status_code == 301
    assert response["Location"] == "/topics/tool-learning/?page=2"
    assert client.get("/topics/tool-use/ask/").status_code == 301
    assert client.get("/topics/tool-use/ask/")["Location"] == "/topics/tool-learning/ask/"
    assert client.get("/topics/tool-learning/").status_code == 200


def test_renaming_twice_redirects_every_old_slug_straight_to_the_newest(
    curated_tree, curator, client
):
    topic = curated_tree["tool-use"]
    topic_rename(topic=topic, name="Tool learning", user=curator)
    topic_rename(topic=topic, name="Tools", slug="tools", user=curator)

    assert redirects() == {"tool-use": "tools", "tool-learning": "tools"}
    assert client.get("/topics/tool-use/")["Location"] == "/topics/tools/"


def test_renaming_back_makes_the_old_slug_live_again(curated_tree, curator, client):
    topic = curated_tree["tool-use"]
    topic_rename(topic=topic, name="Tools", user=curator)
    topic_rename(topic=topic, name="Tool use", user=curator)

    assert Topic.objects.get(pk=topic.pk).slug == "tool-use"
    assert redirects() == {"tools": "tool-use"}
    assert client.get("/topics/tool-use/").status_code == 200


def test_a_new_name_with_the_same_slug_keeps_the_address(curated_tree, curator):
    topic = curated_tree["tool-use"]
    topic_rename(topic=topic, name="Tool Use", user=curator)
    assert (topic.name, topic.slug) == ("Tool Use", "tool-use")
    assert redirects() == {}


def test_a_derived_slug_avoids_other_topics_and_their_old_addresses(curated_tree, curator):
    topic_rename(topic=curated_tree["search"], name="Tree search", user=curator)  # frees "search"
    topic_rename(topic=curated_tree["planning"], name="Search", user=curator)

    # "search" is the old address of Tree search: Planning gets "search-2".
    assert Topic.objects.get(pk=curated_tree["planning"].pk).slug == "search-2"
    assert redirects() == {"search": "tree-search", "planning": "search-2"}


@pytest.mark.parametrize(
    ("values", "field", "message"),
    [
        ({"name": "  "}, "name", "A topic needs a name."),
        ({"name": "x" * 201}, "name", "at most 200 characters"),
        ({"slug": "agents"}, "slug", "The slug 'agents' is already the address of 'Agents'."),
        ({"slug": "no spaces"}, "slug", "Enter a valid “slug”"),
        ({"slug": "old-planning"}, "slug", "an old address of 'Planning'"),
    ],
)
def test_rename_refuses_bad_input_and_writes_nothing(curated_tree, curator, values, field, message):
    TopicRedirect.objects.create(old_slug="old-planning", topic=curated_tree["planning"])
    before = database_state()

    with pytest.raises(ValidationError) as error:
        topic_rename(topic=curated_tree["tool-use"], user=curator, **({"name": "Tools"} | values))

    assert message in " ".join(error.value.message_dict[field])
    assert database_state() == before


def test_unknown_slugs_and_redirects_to_inactive_topics_are_404(curated_tree, curator, client):
    topic_rename(topic=curated_tree["tool-use"], name="Tools", user=curator)
    Topic.objects.filter(slug="tools").update(active=False)

    assert client.get("/topics/tool-use/").status_code == 404
    assert client.get("/topics/never-was/").status_code == 404


# --- merge ---------------------------------------------------------------------------------


def test_merge_moves_assignments_children_redirects_and_keeps_the_source_inactive(
    curated_tree, curator, client
):
    source, target = curated_tree["planning"], curated_tree["language"]
    TopicRedirect.objects.create(old_slug="plans", topic=source)
    only_source = AssignmentFactory(topic=source, source=RULE, score=1.0)
    only_target = AssignmentFactory(topic=target, source=CLASSIFIER, state=PENDING, score=0.6)

    result = topic_merge(source=source, target=target, user=curator)

    assert (result.assignments_moved, result.assignments_dropped, result.children_moved) == (
        1,
        0,
        1,
    )
    assert set(target.assignments.values_list("pk", flat=True)) == {only_source.pk, only_target.pk}
    assert not source.assignments.exists()
    search = Topic.objects.get(slug="search")
    assert (search.parent_id, search.path) == (target.pk, f"{target.path}{search.pk}/")
    source.refresh_from_db()
    assert source.active is False
    assert redirects() == {"planning": "language", "plans": "language"}
    assert client.get("/topics/planning/")["Location"] == "/topics/language/"
    assert client.get("/topics/plans/")["Location"] == "/topics/language/"
    # History: the move of the assignment and of the child, and the source switched off.
    moved = only_source.history.latest()
    assert (moved.topic_id, moved.history_user, moved.history_type) == (target.pk, curator, "~")
    assert moved.history_change_reason == "merged 'planning' into 'language'"
    assert search.history.latest().history_user == curator
    assert (source.history.latest().active, source.history.latest().history_user) == (
        False,
        curator,
    )


DECIDER = object()  # stands for a user, created when the test runs


def decided(state, **kwargs):
    return {
        "state": state,
        "decided_by": DECIDER,
        "decided_at": timezone.now() - dt.timedelta(days=kwargs.pop("days_ago", 1)),
        **kwargs,
    }


def with_decider(values):
    return {k: UserFactory() if v is DECIDER else v for k, v in values.items()}


@pytest.mark.parametrize(
    ("source_values", "target_values", "kept"),
    [
        # A curator decision beats a machine-made assignment, whatever its state.
        (
            decided(REJECTED, source=RULE),
            {"source": RULE, "state": ACCEPTED, "score": 1.0},
            "source",
        ),
        (
            {"source": RULE, "state": ACCEPTED, "score": 1.0},
            decided(REJECTED, source=CURATOR),
            "target",
        ),
        # Two decisions: accepted beats rejected, then the newer.
        (decided(REJECTED, days_ago=0), decided(ACCEPTED, days_ago=5), "target"),
        (decided(ACCEPTED, days_ago=0), decided(ACCEPTED, days_ago=5), "source"),
        # Two machine-made: the higher state, then import over rule, then the higher score.
        (
            {"source": CLASSIFIER, "state": ACCEPTED, "score": 0.7},
            {"source": CLASSIFIER, "state": PENDING, "score": 0.9},
            "source",
        ),
        ({"source": IMPORT, "score": None}, {"source": RULE, "score": 1.0}, "source"),
        (
            {"source": CLASSIFIER, "state": PENDING, "score": 0.8},
            {"source": CLASSIFIER, "state": PENDING, "score": 0.6},
            "source",
        ),
        # A tie keeps the target's.
        ({"source": RULE, "score": 1.0}, {"source": RULE, "score": 1.0}, "target"),
    ],
)
def test_merge_keeps_one_assignment_per_paper(
    curated_tree, curator, source_values, target_values, kept
):
    source, target = curated_tree["tool-use"], curated_tree["language"]
    paper = PaperFactory()
    rows = {
        "source": AssignmentFactory(paper=paper, topic=source, **with_decider(source_values)),
        "target": AssignmentFactory(paper=paper, topic=target, **with_decider(target_values)),
    }
    winner = {
        key: value
        for key, value in Assignment.objects.filter(pk=rows[kept].pk).values().get().items()
        if key not in ("topic_id", "updated_at")
    }

    result = topic_merge(source=source, target=target, user=curator)

    survivor = Assignment.objects.get(paper=paper)
    assert survivor.topic_id == target.pk
    assert {
        key: value
        for key, value in Assignment.objects.filter(pk=survivor.pk).values().get().items()
        if key in winner
    } == winner
    assert result.assignments_dropped == 1
    loser = rows["target" if kept == "source" else "source"]
    deleted = Assignment.history.filter(id=loser.pk).latest()
    assert (deleted.history_type, deleted.history_user) == ("-", curator)


def test_curator_decisions_survive_a_merge_and_re_tagging(curated_tree, curator):
    category = CategoryFactory(code="cs.AI")
    source = curated_tree["tool-use"]
    Topic.objects.filter(pk=source.pk).update(rule_query='"tool use"')
    target = curated_tree["language"]
    Topic.objects.filter(pk=target.pk).update(rule_query="language")
    matching = PaperFactory(title="Tool use in language agents", primary_category=category)
    papers_tag(paper_ids=[matching.pk])
    rejected = Assignment.objects.get(paper=matching, topic=source)
    assignments_bulk_decide(assignments=[rejected], state=REJECTED, user=curator)

    topic_merge(source=source, target=Topic.objects.get(pk=target.pk), user=curator)
    papers_tag(paper_ids=[matching.pk])
    papers_tag(paper_ids=[matching.pk])

    # The rejection beat the target's rule assignment and re-tagging leaves it alone.
    row = Assignment.objects.get(paper=matching)
    assert (row.pk, row.topic_id, row.state, row.decided_by) == (
        rejected.pk,
        target.pk,
        REJECTED,
        curator,
    )


@pytest.mark.parametrize(
    ("source_rule", "target_rule", "expected_rule", "outcome"),
    [
        (
            ("agent*", ["cs.AI"]),
            ("planning", ["cs.AI"]),
            ("(planning) OR (agent*)", ["cs.AI"]),
            "combined",
        ),
        (("agent*", ["cs.AI"]), ("", ["cs.AI"]), ("", ["cs.AI"]), "kept"),
        (("agent*", ["cs.AI"]), ("", []), ("agent*", ["cs.AI"]), "taken"),
        (("", []), ("planning", ["cs.LG"]), ("planning", ["cs.LG"]), "kept"),
        (("agent*", ["cs.AI"]), ("planning", ["cs.LG"]), ("planning", ["cs.LG"]), "differs"),
    ],
)
def test_merge_widens_the_target_rule_where_one_rule_can_say_both(
    curator, source_rule, target_rule, expected_rule, outcome
):
    categories = {code: CategoryFactory(code=code) for code in ("cs.AI", "cs.LG")}

    def create(name, rule):
        query, codes = rule
        return topic_create(
            name=name, rule_query=query, rule_categories=[categories[c] for c in codes]
        )

    source, target = create("Source", source_rule), create("Target", target_rule)

    result = topic_merge(source=source, target=target, user=curator)

    target.refresh_from_db()
    assert result.rule == outcome
    assert (target.rule_query, sorted(c.code for c in target.rule_categories.all())) == (
        expected_rule[0],
        expected_rule[1],
    )


def test_merge_into_an_ancestor_moves_the_children_up(curated_tree, curator):
    result = topic_merge(
        source=curated_tree["planning"], target=curated_tree["agents"], user=curator
    )
    search = Topic.objects.get(slug="search")
    assert result.children_moved == 1
    assert search.path == f"{curated_tree['agents'].pk}/{search.pk}/"


@pytest.mark.parametrize(
    ("source", "target", "message"),
    [
        ("agents", "agents", "Cannot merge 'Agents' into itself."),
        ("agents", "search", "'Search' is inside 'Agents'"),
        ("planning", "inactive", "'Inactive' is inactive"),
        ("inactive", "planning", "'Inactive' is inactive"),
    ],
)
def test_merge_refuses_and_writes_nothing(curated_tree, curator, source, target, message):
    curated_tree["inactive"] = topic_create(name="Inactive", slug="inactive", active=False)
    AssignmentFactory(topic=curated_tree["agents"])
    AssignmentFactory(topic=curated_tree["planning"])
    before = database_state()

    with pytest.raises(ValueError, match=message):
        topic_merge(source=curated_tree[source], target=curated_tree[target], user=curator)

    assert database_state() == before


def test_topics_merged_is_sent_after_commit_only(
    curated_tree, curator, django_capture_on_commit_callbacks
):
    calls = []

    def receiver(sender, source_id, target_id, **kwargs):
        calls.append((source_id, target_id))

    topics_merged.connect(receiver, dispatch_uid="test-receiver")
    try:
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            topic_merge(
                source=curated_tree["tool-use"], target=curated_tree["language"], user=curator
            )
        assert calls == []
        for callback in callbacks:
            callback()
    finally:
        topics_merged.disconnect(dispatch_uid="test-receiver")
    assert calls == [(curated_tree["tool-use"].pk, curated_tree["language"].pk)]


def test_a_failing_receiver_is_logged_and_the_merge_stands(
    curated_tree, curator, django_capture_on_commit_callbacks, caplog
):
    def receiver(sender, **kwargs):
        raise RuntimeError("receiver broke")

    topics_merged.connect(receiver, dispatch_uid="test-broken-receiver")
    try:
        with django_capture_on_commit_callbacks(execute=True):
            topic_merge(
                source=curated_tree["tool-use"], target=curated_tree["language"], user=curator
            )
    finally:
        topics_merged.disconnect(dispatch_uid="test-broken-receiver")
    assert "receiver broke" in caplog.text
    assert Topic.objects.get(pk=curated_tree["tool-use"].pk).active is False


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
