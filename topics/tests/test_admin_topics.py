"""The topic admin (``topics.admin.topics``) as a curator: the tree with counts, the rule
check and preview, the form's slug and parent changes, rename / merge / move, and the topic's
recent assignment changes."""

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from papers.tests.factories import CategoryFactory, PaperFactory
from topics.models import Assignment, Topic, TopicRedirect
from topics.services import topic_create
from topics.tests.conftest import (
    ACCEPTED,
    PENDING,
    REJECTED,
    TOPICS,
    action,
    messages_of,
)
from topics.tests.factories import AssignmentFactory

pytestmark = pytest.mark.django_db


def topic_form(topic, **values):
    form = {
        "name": topic.name,
        "short_name": topic.short_name,
        "slug": topic.slug,
        "parent": topic.parent_id or "",
        "description": topic.description,
        "active": "on" if topic.active else "",
        "rule_query": topic.rule_query,
        "rule_categories": [c.pk for c in topic.rule_categories.all()],
    }
    form.update(values)
    return form


def table_state():
    return {
        "topics": list(Topic.objects.order_by("pk").values()),
        "rule_categories": sorted(
            Topic.rule_categories.through.objects.values_list("topic_id", "category_id")
        ),
        "assignments": list(Assignment.objects.order_by("pk").values()),
        "redirects": list(TopicRedirect.objects.values_list("old_slug", "topic_id")),
    }


def test_topics_are_listed_as_a_tree_with_counts_per_state(curator_client, tree):
    for state, count in ((ACCEPTED, 3), (PENDING, 2), (REJECTED, 1)):
        for _ in range(count):
            AssignmentFactory(topic=tree["planning"], state=state)
    AssignmentFactory(topic=tree["search"], state=ACCEPTED)

    response = curator_client.get(reverse(TOPICS), {"active__exact": "1"})

    rows = list(response.context["cl"].result_list)
    assert [t.name for t in rows] == ["Agents", "Planning", "Search", "Tool use", "Language"]
    counts = {t.name: (t.accepted_count, t.pending_count, t.rejected_count) for t in rows}
    assert counts["Planning"] == (3, 2, 1)
    assert counts["Search"] == (1, 0, 0)
    assert counts["Agents"] == (0, 0, 0)
    page = response.content.decode()
    assert ">\u2003\u2002\u2003\u2002└ Search<" in page
    assert f'?topic={tree["planning"].pk}&amp;state__exact=pending">2</a>' in page


def test_the_topic_list_runs_the_same_queries_for_5_or_50_topics(curator_client, tree):
    def queries():
        with CaptureQueriesContext(connection) as ctx:
            assert curator_client.get(reverse(TOPICS)).status_code == 200
        return len(ctx.captured_queries)

    few = queries()
    for number in range(45):
        topic = topic_create(name=f"More {number}", parent=tree["agents"], rule_query="x")
        AssignmentFactory(topic=topic, state=PENDING)
    assert queries() == few


@pytest.mark.parametrize(
    ("rule_query", "message"),
    [
        ('"tool use', "unclosed quote at position 0"),
        ("agents AND (planning", "'(' is never closed at position 11"),
        ("agents OR", "OR needs a term after it at position 7"),
    ],
)
def test_a_rule_that_does_not_parse_is_refused_with_its_position(
    curator_client, tree, rule_query, message
):
    before = table_state()
    add = curator_client.post(
        reverse("admin:topics_topic_add"),
        {"name": "New", "slug": "new", "active": "on", "rule_query": rule_query},
    )
    change = curator_client.post(
        reverse("admin:topics_topic_change", args=[tree["planning"].pk]),
        topic_form(tree["planning"], rule_query=rule_query),
    )
    for response in (add, change):
        assert response.status_code == 200
        assert message in " ".join(response.context["adminform"].form.errors["rule_query"])
    assert table_state() == before


@pytest.fixture
def library():
    ai, th = CategoryFactory(code="cs.AI"), CategoryFactory(code="hep-th")
    for day, title, category in [
        (1, "Agents that plan", ai),
        (2, "Reagents in a lab", ai),
        (3, "Holographic agents", th),
        (4, "Planning agents at scale", ai),
    ]:
        PaperFactory(
            title=title,
            abstract="Nothing to see.",
            primary_category=category,
            submitted=dt.date(2026, 9, day),
        )
    return {"cs.AI": ai, "hep-th": th}


def test_the_rule_preview_counts_and_samples_without_saving(curator_client, tree, library):
    before = table_state()
    url = reverse("admin:topics_topic_change", args=[tree["planning"].pk])

    response = curator_client.post(
        url,
        topic_form(
            tree["planning"], rule_query="agents", rule_categories=[library["cs.AI"].pk], name="X"
        )
        | {"_preview_rule": "Preview rule"},
    )

    assert response.status_code == 200
    preview = response.context["rule_preview"]
    assert (preview.count, preview.complete) == (2, True)
    assert [p.title for p in preview.sample] == ["Planning agents at scale", "Agents that plan"]
    page = response.content.decode()
    assert "This rule matches <strong>2</strong> stored papers." in page
    assert "Planning agents at scale" in page
    # What was typed is still in the form, and nothing was saved.
    assert response.context["adminform"].form["name"].value() == "X"
    assert table_state() == before


def test_the_rule_preview_on_the_add_page_and_with_a_bad_rule(curator_client, library):
    url = reverse("admin:topics_topic_add")
    good = curator_client.post(
        url, {"name": "Agents", "slug": "agents", "rule_query": "agents", "_preview_rule": "1"}
    )
    bad = curator_client.post(
        url, {"name": "Agents", "slug": "agents", "rule_query": "agents OR", "_preview_rule": "1"}
    )
    assert good.context["rule_preview"].count == 3
    assert bad.context["rule_preview"] is None
    assert "at position 7" in " ".join(bad.context["adminform"].form.errors["rule_query"])
    assert not Topic.objects.exists()


def test_changing_the_slug_in_the_form_keeps_the_old_address(curator_client, curator, tree, client):
    response = curator_client.post(
        reverse("admin:topics_topic_change", args=[tree["planning"].pk]),
        topic_form(tree["planning"], name="Plans", slug="plans", description="Now with history"),
    )
    assert response.status_code == 302
    topic = Topic.objects.get(pk=tree["planning"].pk)
    assert (topic.name, topic.slug, topic.description) == ("Plans", "plans", "Now with history")
    assert client.get("/topics/planning/")["Location"] == "/topics/plans/"
    assert {h.history_user for h in topic.history.all()[:2]} == {curator}


def test_a_slug_that_is_another_topics_old_address_is_refused(curator_client, tree):
    TopicRedirect.objects.create(old_slug="plans", topic=tree["planning"])
    response = curator_client.post(
        reverse("admin:topics_topic_change", args=[tree["search"].pk]),
        topic_form(tree["search"], slug="plans"),
    )
    assert "an old address of 'Planning'" in " ".join(
        response.context["adminform"].form.errors["slug"]
    )


def test_moving_a_topic_in_the_form_is_in_its_history(curator_client, curator, tree):
    response = curator_client.post(
        reverse("admin:topics_topic_change", args=[tree["search"].pk]),
        topic_form(tree["search"], parent=tree["language"].pk),
    )
    assert response.status_code == 302
    latest = Topic.objects.get(pk=tree["search"].pk).history.latest()
    assert (latest.parent_id, latest.history_user, latest.history_change_reason) == (
        tree["language"].pk,
        curator,
        "moved",
    )
    history = curator_client.get(reverse("admin:topics_topic_history", args=[tree["search"].pk]))
    assert "ada" in history.content.decode()


def test_rename_shows_a_form_then_renames(curator_client, tree, client):
    first = action(curator_client, TOPICS, "rename_topic", [tree["planning"]])
    assert first.status_code == 200
    assert first.templates[0].name == "admin/topics/action_form.html"
    assert first.context["form"]["name"].value() == "Planning"

    done = action(
        curator_client, TOPICS, "rename_topic", [tree["planning"]], apply="1", name="Plans", slug=""
    )

    assert done.redirect_chain[-1][0].startswith(reverse(TOPICS))
    assert Topic.objects.get(pk=tree["planning"].pk).slug == "plans"
    assert messages_of(done) == [
        "Renamed to 'Plans'; /topics/planning/ now redirects to /topics/plans/."
    ]
    assert client.get("/topics/planning/").status_code == 301


def test_rename_wants_exactly_one_topic_and_shows_errors_on_its_form(curator_client, tree):
    two = action(curator_client, TOPICS, "rename_topic", [tree["planning"], tree["search"]])
    assert messages_of(two) == ["Select exactly one topic to rename."]
    before = table_state()
    taken = action(
        curator_client,
        TOPICS,
        "rename_topic",
        [tree["planning"]],
        apply="1",
        name="X",
        slug="agents",
    )
    assert "already the address of 'AG: Agents'" in " ".join(taken.context["form"].errors["slug"])
    assert table_state() == before


def test_merge_two_selected_topics_into_one_of_them(curator_client, tree, client):
    moving = AssignmentFactory(topic=tree["tool-use"], state=PENDING)

    response = action(
        curator_client,
        TOPICS,
        "merge_topics",
        [tree["tool-use"], tree["planning"]],
        apply="1",
        target=tree["planning"].pk,
    )

    moving.refresh_from_db()
    assert moving.topic_id == tree["planning"].pk
    assert Topic.objects.get(pk=tree["tool-use"].pk).active is False
    assert messages_of(response) == [
        "Merged 'Tool use' into 'Planning': 1 assignment(s) moved, 0 duplicate(s) dropped, "
        "0 child topic(s) moved."
    ]
    assert client.get("/topics/tool-use/")["Location"] == "/topics/planning/"


def test_a_refused_merge_is_shown_on_its_form_and_writes_nothing(curator_client, tree):
    AssignmentFactory(topic=tree["planning"])
    before = table_state()
    response = action(
        curator_client,
        TOPICS,
        "merge_topics",
        [tree["tool-use"], tree["agents"]],
        apply="1",
        target=tree["search"].pk,
    )
    assert response.status_code == 200
    assert "&#x27;Search&#x27; is inside &#x27;Agents&#x27;" in response.content.decode()
    assert table_state() == before


def test_move_topics_under_another_parent(curator_client, tree):
    response = action(
        curator_client,
        TOPICS,
        "move_topics",
        [tree["planning"], tree["tool-use"]],
        apply="1",
        parent=tree["language"].pk,
    )
    assert messages_of(response) == ["Moved 2 topic(s) under 'Language'."]
    search = Topic.objects.get(slug="search")
    assert search.path == f"{tree['language'].pk}/{tree['planning'].pk}/{search.pk}/"

    to_top = action(curator_client, TOPICS, "move_topics", [tree["planning"]], apply="1", parent="")
    assert messages_of(to_top) == ["Moved 1 topic(s) to the top level."]
    assert Topic.objects.get(pk=tree["planning"].pk).parent is None


def test_moving_a_topic_under_its_descendant_is_refused(curator_client, tree):
    before = table_state()
    response = action(
        curator_client, TOPICS, "move_topics", [tree["agents"]], apply="1", parent=tree["search"].pk
    )
    assert "would make a cycle" in response.content.decode()
    assert table_state() == before


def test_the_topic_page_shows_recent_assignment_changes(curator_client, tree):
    AssignmentFactory(paper=PaperFactory(arxiv_id="2609.12345"), topic=tree["search"])
    page = curator_client.get(
        reverse("admin:topics_topic_change", args=[tree["search"].pk])
    ).content.decode()
    assert "2609.12345" in page[page.index('class="assignment-history"') :]
