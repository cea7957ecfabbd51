"""Curator services (``topics.curation``): rename with redirects, merge, bulk decisions, moving
papers between topics, the rule preview; and the old addresses answering 301."""

import datetime as dt

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from papers.tests.factories import CategoryFactory, PaperFactory
from topics.curation import (
    assignments_bulk_decide,
    assignments_move,
    rule_preview,
    topic_merge,
    topic_rename,
)
from topics.models import Assignment, Topic, TopicRedirect
from topics.rules import RuleSyntaxError
from topics.services import papers_tag, topic_create
from topics.signals import topics_merged
from topics.tests.factories import AssignmentFactory, UserFactory

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
    """Every row the curation services may write, to prove a refusal wrote nothing."""
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


def test_rename_keeps_the_old_slug_as_a_redirect_and_records_who(tree, curator, client):
    topic = tree["tool-use"]

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


def test_renaming_twice_redirects_every_old_slug_straight_to_the_newest(tree, curator, client):
    topic = tree["tool-use"]
    topic_rename(topic=topic, name="Tool learning", user=curator)
    topic_rename(topic=topic, name="Tools", slug="tools", user=curator)

    assert redirects() == {"tool-use": "tools", "tool-learning": "tools"}
    assert client.get("/topics/tool-use/")["Location"] == "/topics/tools/"


def test_renaming_back_makes_the_old_slug_live_again(tree, curator, client):
    topic = tree["tool-use"]
    topic_rename(topic=topic, name="Tools", user=curator)
    topic_rename(topic=topic, name="Tool use", user=curator)

    assert Topic.objects.get(pk=topic.pk).slug == "tool-use"
    assert redirects() == {"tools": "tool-use"}
    assert client.get("/topics/tool-use/").status_code == 200


def test_a_new_name_with_the_same_slug_keeps_the_address(tree, curator):
    topic = tree["tool-use"]
    topic_rename(topic=topic, name="Tool Use", user=curator)
    assert (topic.name, topic.slug) == ("Tool Use", "tool-use")
    assert redirects() == {}


def test_a_derived_slug_avoids_other_topics_and_their_old_addresses(tree, curator):
    topic_rename(topic=tree["search"], name="Tree search", user=curator)  # frees "search"
    topic_rename(topic=tree["planning"], name="Search", user=curator)

    # "search" is the old address of Tree search: Planning gets "search-2".
    assert Topic.objects.get(pk=tree["planning"].pk).slug == "search-2"
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
def test_rename_refuses_bad_input_and_writes_nothing(tree, curator, values, field, message):
    TopicRedirect.objects.create(old_slug="old-planning", topic=tree["planning"])
    before = database_state()

    with pytest.raises(ValidationError) as error:
        topic_rename(topic=tree["tool-use"], user=curator, **({"name": "Tools"} | values))

    assert message in " ".join(error.value.message_dict[field])
    assert database_state() == before


def test_unknown_slugs_and_redirects_to_inactive_topics_are_404(tree, curator, client):
    topic_rename(topic=tree["tool-use"], name="Tools", user=curator)
    Topic.objects.filter(slug="tools").update(active=False)

    assert client.get("/topics/tool-use/").status_code == 404
    assert client.get("/topics/never-was/").status_code == 404


# --- merge ---------------------------------------------------------------------------------


def test_merge_moves_assignments_children_redirects_and_keeps_the_source_inactive(
    tree, curator, client
):
    source, target = tree["planning"], tree["language"]
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
def test_merge_keeps_one_assignment_per_paper(tree, curator, source_values, target_values, kept):
    source, target = tree["tool-use"], tree["language"]
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


def test_curator_decisions_survive_a_merge_and_re_tagging(tree, curator):
    category = CategoryFactory(code="cs.AI")
    source = tree["tool-use"]
    Topic.objects.filter(pk=source.pk).update(rule_query='"tool use"')
    target = tree["language"]
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


def test_merge_into_an_ancestor_moves_the_children_up(tree, curator):
    result = topic_merge(source=tree["planning"], target=tree["agents"], user=curator)
    search = Topic.objects.get(slug="search")
    assert result.children_moved == 1
    assert search.path == f"{tree['agents'].pk}/{search.pk}/"


@pytest.mark.parametrize(
    ("source", "target", "message"),
    [
        ("agents", "agents", "Cannot merge 'Agents' into itself."),
        ("agents", "search", "'Search' is inside 'Agents'"),
        ("planning", "inactive", "'Inactive' is inactive"),
        ("inactive", "planning", "'Inactive' is inactive"),
    ],
)
def test_merge_refuses_and_writes_nothing(tree, curator, source, target, message):
    tree["inactive"] = topic_create(name="Inactive", slug="inactive", active=False)
    AssignmentFactory(topic=tree["agents"])
    AssignmentFactory(topic=tree["planning"])
    before = database_state()

    with pytest.raises(ValueError, match=message):
        topic_merge(source=tree[source], target=tree[target], user=curator)

    assert database_state() == before


def test_topics_merged_is_sent_after_commit_only(tree, curator, django_capture_on_commit_callbacks):
    calls = []

    def receiver(sender, source_id, target_id, **kwargs):
        calls.append((source_id, target_id))

    topics_merged.connect(receiver, dispatch_uid="test-receiver")
    try:
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            topic_merge(source=tree["tool-use"], target=tree["language"], user=curator)
        assert calls == []
        for callback in callbacks:
            callback()
    finally:
        topics_merged.disconnect(dispatch_uid="test-receiver")
    assert calls == [(tree["tool-use"].pk, tree["language"].pk)]


def test_a_failing_receiver_is_logged_and_the_merge_stands(
    tree, curator, django_capture_on_commit_callbacks, caplog
):
    def receiver(sender, **kwargs):
        raise RuntimeError("receiver broke")

    topics_merged.connect(receiver, dispatch_uid="test-broken-receiver")
    try:
        with django_capture_on_commit_callbacks(execute=True):
            topic_merge(source=tree["tool-use"], target=tree["language"], user=curator)
    finally:
        topics_merged.disconnect(dispatch_uid="test-broken-receiver")
    assert "receiver broke" in caplog.text
    assert Topic.objects.get(pk=tree["tool-use"].pk).active is False


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


# --- rule preview --------------------------------------------------------------------------


@pytest.fixture
def library():
    ai, lg, th = (CategoryFactory(code=code) for code in ("cs.AI", "cs.LG", "hep-th"))
    papers = [
        PaperFactory(title="Agents that plan", primary_category=ai, submitted=dt.date(2026, 9, 1)),
        PaperFactory(title="Reagents in a lab", primary_category=ai, submitted=dt.date(2026, 9, 2)),
        PaperFactory(title="Learning agents", primary_category=lg, submitted=dt.date(2026, 9, 3)),
        PaperFactory(
            title="Holographic agents", primary_category=th, submitted=dt.date(2026, 9, 4)
        ),
        PaperFactory(title="Strings", primary_category=th, submitted=dt.date(2026, 9, 5)),
    ]
    papers[3].cross_lists.add(ai)
    for paper in papers:
        paper.abstract = "Nothing to see."
        paper.save()
    return {"categories": {"cs.AI": ai, "cs.LG": lg, "hep-th": th}, "papers": papers}


def titles(papers):
    return [paper.title for paper in papers]


def test_preview_counts_and_samples_newest_first_as_tagging_would(library):
    ai = library["categories"]["cs.AI"]
    preview = rule_preview(query="agents", categories=[ai], sample_size=1)

    # "Reagents" is not the word; the hep-th paper is cross-listed in cs.AI.
    assert (preview.count, preview.checked, preview.complete) == (2, 3, True)
    assert titles(preview.sample) == ["Holographic agents"]

    topic = topic_create(name="Agents", rule_query="agents", rule_categories=[ai])
    papers_tag(paper_ids=[paper.pk for paper in library["papers"]])
    full = rule_preview(query="agents", categories=[ai.pk], sample_size=10)
    assert {p.pk for p in full.sample} == set(topic.assignments.values_list("paper_id", flat=True))


def test_preview_of_categories_only_counts_in_the_database(library):
    th = library["categories"]["hep-th"]
    preview = rule_preview(query="", categories=[th])
    assert (preview.count, preview.complete) == (2, True)
    assert titles(preview.sample) == ["Strings", "Holographic agents"]


def test_preview_of_no_rule_matches_nothing(library):
    assert rule_preview(query="  ", categories=[]) == rule_preview(query="", categories=())
    assert rule_preview(query="", categories=[]).count == 0


def test_preview_stops_at_the_scan_limit_and_says_so(library):
    preview = rule_preview(query="agents OR strings", scan_limit=2)
    # The two newest: "Strings" and "Holographic agents".
    assert (preview.count, preview.checked, preview.complete) == (2, 2, False)
    exact = rule_preview(query="agents OR strings", scan_limit=5)
    assert (exact.count, exact.checked, exact.complete) == (4, 5, True)


def test_preview_of_a_malformed_rule_gives_the_position(library):
    with pytest.raises(RuleSyntaxError) as error:
        rule_preview(query='agents AND ("tool', categories=[])
    assert error.value.position == 12
