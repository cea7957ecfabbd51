"""The curator admin, used as a member of the "Curators" group: the topic tree with counts, the
rule check and preview, rename / merge / move, the assignment filters, bulk decisions, the
review queue, re-tagging, history per topic and per paper; and what curators may not touch."""

import datetime as dt

import pytest
from django.contrib.auth.models import Group, Permission
from django.contrib.messages import get_messages
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from papers.tests.factories import CategoryFactory, PaperFactory
from topics.models import Assignment, ClassifierModel, Topic, TopicRedirect
from topics.services import topic_create
from topics.tagging.training import classifier_train
from topics.tests.factories import AssignmentFactory, UserFactory

pytestmark = pytest.mark.django_db

ACCEPTED, PENDING, REJECTED = "accepted", "pending", "rejected"
TOPICS = "admin:topics_topic_changelist"
ASSIGNMENTS = "admin:topics_assignment_changelist"
PAPERS = "admin:papers_paper_changelist"

CURATOR_PERMISSIONS = {
    "papers.view_paper",
    "papers.view_category",
    "papers.view_author",
    "papers.view_paperversion",
    "papers.view_authorship",
    "topics.view_topic",
    "topics.add_topic",
    "topics.change_topic",
    "topics.view_assignment",
    "topics.add_assignment",
    "topics.change_assignment",
    "topics.delete_assignment",
    "topics.view_historicaltopic",
    "topics.view_historicalassignment",
    "topics.view_classifiermodel",
    "topics.change_classifiermodel",
}


@pytest.fixture
def curator():
    user = UserFactory(username="ada", is_staff=True)
    user.groups.add(Group.objects.get(name="Curators"))
    return user


@pytest.fixture
def curator_client(client, curator):
    client.force_login(curator)
    return client


@pytest.fixture
def tree():
    """Agents(Tool use, Planning(Search)) and Language, created in an order where primary keys
    sort differently as text than as numbers once there are ten of them."""
    topics = {}
    for number in range(8):  # pks 1..8 taken by fillers, so the tree's pks reach two digits
        topic_create(name=f"Filler {number}", active=False)
    topics["agents"] = topic_create(name="Agents", slug="agents", short_name="AG")
    topics["language"] = topic_create(name="Language", slug="language")
    topics["planning"] = topic_create(name="Planning", slug="planning", parent=topics["agents"])
    topics["tool-use"] = topic_create(name="Tool use", slug="tool-use", parent=topics["agents"])
    topics["search"] = topic_create(name="Search", slug="search", parent=topics["planning"])
    return topics


def messages_of(response):
    return [str(message) for message in get_messages(response.wsgi_request)]


def action(client, url_name, action_name, selected, follow=True, **data):
    return client.post(
        reverse(url_name),
        {"action": action_name, "_selected_action": [obj.pk for obj in selected], **data},
        follow=follow,
    )


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


# --- the Curators group --------------------------------------------------------------------


def test_the_curators_group_has_exactly_the_permissions_curators_need():
    group = Group.objects.get(name="Curators")
    granted = {f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.all()}
    assert granted == CURATOR_PERMISSIONS
    assert not Permission.objects.filter(
        group=group, content_type__app_label__in=["auth", "django_celery_beat", "admin"]
    ).exists()


def test_a_curator_can_open_every_page_of_the_work(curator_client, curator, tree):
    paper = PaperFactory()
    paper.versions.create(number=1)
    assignment = AssignmentFactory(paper=paper, topic=tree["planning"])
    pages = [
        reverse(TOPICS),
        reverse("admin:topics_topic_add"),
        reverse("admin:topics_topic_change", args=[tree["planning"].pk]),
        reverse("admin:topics_topic_history", args=[tree["planning"].pk]),
        reverse(ASSIGNMENTS),
        reverse(ASSIGNMENTS) + "?review=queue",
        reverse("admin:topics_assignment_add"),
        reverse("admin:topics_assignment_change", args=[assignment.pk]),
        reverse("admin:topics_assignment_history", args=[assignment.pk]),
        reverse(PAPERS),
        reverse("admin:papers_paper_change", args=[paper.pk]),
        reverse("admin:papers_category_changelist"),
        reverse("admin:papers_author_changelist"),
    ]
    for url in pages:
        assert curator_client.get(url).status_code == 200, url


@pytest.mark.parametrize(
    "url_name",
    [
        "admin:auth_user_changelist",
        "admin:auth_user_add",
        "admin:auth_group_changelist",
        "admin:auth_group_add",
        "admin:django_celery_beat_periodictask_changelist",
        "admin:django_celery_beat_periodictask_add",
        "admin:django_celery_beat_crontabschedule_changelist",
        "admin:django_celery_beat_intervalschedule_changelist",
    ],
)
def test_a_curator_cannot_open_users_groups_or_site_settings(curator_client, url_name):
    assert curator_client.get(reverse(url_name)).status_code == 403


def test_a_curator_cannot_change_users_groups_or_topics_deletion(curator_client, curator, tree):
    group = Group.objects.get(name="Curators")
    forbidden = [
        reverse("admin:auth_user_change", args=[curator.pk]),
        reverse("admin:auth_user_password_change", args=[curator.pk]),
        reverse("admin:auth_group_change", args=[group.pk]),
        reverse("admin:topics_topic_delete", args=[tree["search"].pk]),
    ]
    for url in forbidden:
        assert curator_client.get(url).status_code == 403, url
        assert curator_client.post(url, {"is_superuser": "on", "name": "x"}).status_code == 403, url
    curator.refresh_from_db()
    assert (curator.is_superuser, list(curator.user_permissions.all())) == (False, [])
    assert Topic.objects.filter(pk=tree["search"].pk).exists()
    # Not offered on the index either.
    index = curator_client.get(reverse("admin:index")).content.decode()
    assert "/admin/auth/user/" not in index
    assert "/admin/django_celery_beat/" not in index
    assert "/admin/topics/topic/" in index


# --- the topic tree ------------------------------------------------------------------------


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


# --- rules: refused with the position, previewed before saving -----------------------------


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


# --- rename, merge, move -------------------------------------------------------------------


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


# --- assignments ---------------------------------------------------------------------------


@pytest.fixture
def assignments(tree, curator):
    other = UserFactory(username="grace", is_staff=True)
    planning, search = tree["planning"], tree["search"]
    return {
        "high": AssignmentFactory(topic=planning, source="classifier", state=PENDING, score=0.81),
        "low": AssignmentFactory(topic=planning, source="classifier", state=PENDING, score=0.52),
        "mid": AssignmentFactory(topic=search, source="classifier", state=PENDING, score=0.66),
        "rule": AssignmentFactory(topic=planning, source="rule", score=1.0),
        "mine": AssignmentFactory(
            topic=planning, source="classifier", state=PENDING, score=0.7, decided_by=curator
        ),
        "grace": AssignmentFactory(topic=search, source="curator", score=None, decided_by=other),
    }


def listed(client, **params):
    response = client.get(reverse(ASSIGNMENTS), params)
    assert response.status_code == 200, response.get("Location")
    return list(response.context["cl"].result_list)


def test_the_review_queue_lists_undecided_pending_classifier_work_highest_score_first(
    curator_client, assignments
):
    rows = listed(curator_client, review="queue")
    assert rows == [assignments["high"], assignments["mid"], assignments["low"]]


def test_assignment_filters(curator_client, tree, assignments):
    a = assignments
    by = {
        "topic": ({"topic": tree["search"].pk}, {a["mid"], a["grace"]}),
        "source": ({"source__exact": "rule"}, {a["rule"]}),
        "state": ({"state__exact": "accepted"}, {a["rule"], a["grace"]}),
        "score": ({"score": "0.7-0.9"}, {a["high"], a["mine"]}),
        "no score": ({"score": "none"}, {a["grace"]}),
        "me": ({"decider": "me"}, {a["mine"]}),
        "anyone": ({"decider": "anyone"}, {a["mine"], a["grace"]}),
        "nobody": ({"decider": "nobody"}, {a["high"], a["low"], a["mid"], a["rule"]}),
        "grace": ({"decider": str(a["grace"].decided_by_id)}, {a["grace"]}),
    }
    for name, (params, expected) in by.items():
        assert set(listed(curator_client, **params)) == expected, name


def test_the_topic_filter_walks_down_the_tree(curator_client, tree, assignments):
    page = curator_client.get(reverse(ASSIGNMENTS)).content.decode()
    assert f"?topic={tree['agents'].pk}" in page
    assert f"?topic={tree['search'].pk}" not in page  # not a root
    page = curator_client.get(reverse(ASSIGNMENTS), {"topic": tree["planning"].pk}).content
    assert f"topic={tree['search'].pk}" in page.decode()  # a child of the chosen topic
    assert curator_client.get(reverse(ASSIGNMENTS), {"topic": "nope"}).status_code == 302


def test_bulk_accept_and_reject_are_curator_decisions_with_history(
    curator_client, curator, assignments
):
    chosen = [assignments["high"], assignments["low"]]
    response = action(curator_client, ASSIGNMENTS, "accept", chosen)
    assert messages_of(response) == ["2 assignment(s) marked accepted by you."]
    for row in chosen:
        row.refresh_from_db()
        assert (row.state, row.decided_by, row.source) == (ACCEPTED, curator, "classifier")
        assert row.history.latest().history_user == curator
    # Decided, they leave the review queue.
    assert listed(curator_client, review="queue") == [assignments["mid"]]

    action(curator_client, ASSIGNMENTS, "reject", [assignments["mid"]])
    assignments["mid"].refresh_from_db()
    assert (assignments["mid"].state, assignments["mid"].decided_by) == (REJECTED, curator)


def test_move_assignments_to_another_topic(curator_client, curator, tree, assignments):
    first = action(curator_client, ASSIGNMENTS, "move_to_topic", [assignments["high"]])
    assert first.status_code == 200 and "Move to" in first.content.decode()

    response = action(
        curator_client,
        ASSIGNMENTS,
        "move_to_topic",
        [assignments["high"]],
        apply="1",
        topic=tree["language"].pk,
    )

    assert messages_of(response) == ["Moved 1 paper(s) to 'Language'."]
    moved = Assignment.objects.get(paper=assignments["high"].paper, topic=tree["language"])
    assert (moved.state, moved.decided_by) == (ACCEPTED, curator)
    assignments["high"].refresh_from_db()
    assert (assignments["high"].state, assignments["high"].decided_by) == (REJECTED, curator)


def test_move_of_every_matching_assignment_keeps_the_selection_across_pages(
    curator_client, curator, tree, assignments
):
    url = reverse(ASSIGNMENTS) + f"?topic={tree['search'].pk}"
    form = curator_client.post(
        url,
        {
            "action": "move_to_topic",
            "select_across": "1",
            "_selected_action": [assignments["mid"].pk],
        },
    )
    page = form.content.decode()
    assert 'name="select_across" value="1"' in page
    curator_client.post(
        url,
        {
            "action": "move_to_topic",
            "select_across": "1",
            "_selected_action": [assignments["mid"].pk],
            "apply": "1",
            "topic": tree["language"].pk,
        },
    )
    assert set(tree["language"].assignments.values_list("paper_id", flat=True)) == {
        assignments["mid"].paper_id,
        assignments["grace"].paper_id,
    }


def test_re_tag_these_papers_queues_tag_tasks_and_reports(
    curator_client, tree, django_capture_on_commit_callbacks, monkeypatch
):
    category = CategoryFactory(code="cs.AI")
    Topic.objects.filter(pk=tree["language"].pk).update(rule_query="language")
    papers = [
        PaperFactory(title=f"Language agents {n}", primary_category=category) for n in range(3)
    ]
    chosen = [AssignmentFactory(paper=paper, topic=tree["planning"]) for paper in papers]
    chosen.append(AssignmentFactory(paper=papers[0], topic=tree["search"]))
    sent = []
    from topics.tasks import tag_papers

    real_delay = tag_papers.delay
    monkeypatch.setattr(tag_papers, "delay", lambda ids: sent.append(list(ids)) or real_delay(ids))

    with django_capture_on_commit_callbacks(execute=True):
        response = curator_client.post(
            reverse(ASSIGNMENTS),
            {"action": "retag_papers", "_selected_action": [a.pk for a in chosen]},
            follow=True,
        )

    assert messages_of(response) == [
        "Queued re-tagging of 3 paper(s) in 1 task(s) on the tag queue; their assignments "
        "update as the tasks finish."
    ]
    assert sent == [sorted(p.pk for p in papers)]  # each paper once, in id order
    # The eager tasks ran: the language rule tagged the three papers.
    assert tree["language"].assignments.count() == 3


def test_adding_and_changing_an_assignment_in_the_admin_are_curator_decisions(
    curator_client, curator, tree
):
    paper = PaperFactory()
    add = curator_client.post(
        reverse("admin:topics_assignment_add"), {"paper": paper.pk, "topic": tree["search"].pk}
    )
    assert add.status_code == 302
    row = Assignment.objects.get()
    assert (row.source, row.state, row.decided_by) == ("curator", ACCEPTED, curator)
    change = curator_client.post(
        reverse("admin:topics_assignment_change", args=[row.pk]), {"state": REJECTED}
    )
    assert change.status_code == 302
    row.refresh_from_db()
    assert (row.state, row.decided_by) == (REJECTED, curator)
    assert [h.history_user for h in row.history.all()] == [curator, curator]


# --- the paper page and the topic filter on papers -----------------------------------------


def test_the_paper_page_shows_its_assignments_and_their_history(curator_client, curator, tree):
    paper = PaperFactory(arxiv_id="2609.99999")
    machine = AssignmentFactory(
        paper=paper, topic=tree["planning"], source="classifier", score=0.42, state=PENDING
    )
    action(curator_client, ASSIGNMENTS, "reject", [machine])

    page = curator_client.get(
        reverse("admin:papers_paper_change", args=[paper.pk])
    ).content.decode()

    inline = page[page.index('id="assignments-group"') :]
    for text in ("Planning", "Classifier", "Rejected", "0.42"):
        assert text in inline
    history = page[page.index('class="assignment-history"') :]
    assert history.index("ada") < history.index("(system)")  # newest first: the decision
    assert "Changed" in history and "Created" in history
    assert f"{reverse('admin:topics_assignment_add')}?paper={paper.pk}" in page


def test_the_topic_page_shows_recent_assignment_changes(curator_client, tree):
    AssignmentFactory(paper=PaperFactory(arxiv_id="2609.12345"), topic=tree["search"])
    page = curator_client.get(
        reverse("admin:topics_topic_change", args=[tree["search"].pk])
    ).content.decode()
    assert "2609.12345" in page[page.index('class="assignment-history"') :]


def test_papers_filter_by_topic_subtree_without_rejected(curator_client, tree):
    in_search = PaperFactory(title="in search")
    in_planning = PaperFactory(title="pending in planning")
    rejected = PaperFactory(title="rejected")
    PaperFactory(title="nowhere")
    AssignmentFactory(paper=in_search, topic=tree["search"])
    AssignmentFactory(paper=in_planning, topic=tree["planning"], state=PENDING)
    AssignmentFactory(paper=in_search, topic=tree["planning"])  # once, though twice in it
    AssignmentFactory(paper=rejected, topic=tree["planning"], state=REJECTED)

    response = curator_client.get(reverse(PAPERS), {"topic": tree["planning"].pk})

    assert {p.title for p in response.context["cl"].result_list} == {
        "in search",
        "pending in planning",
    }
    assert response.context["cl"].result_count == 2


# --- the classifier: versions, retraining on demand, why a score ---------------------------


@pytest.fixture
def labelled(tree):
    """Twelve accepted papers in each of two topics with distinct vocabularies."""
    vocabulary = {
        "planning": "Monte Carlo tree search planning for long-horizon agents",
        "language": "Syntax and morphology of low-resource languages",
    }
    for slug, text in vocabulary.items():
        for number in range(12):
            paper = PaperFactory(title=f"{text} {number}", abstract=f"{text}, study {number}.")
            AssignmentFactory(paper=paper, topic=tree[slug], source="rule", score=1.0)
    return tree


def test_retrain_now_trains_a_new_version_a_curator_can_read(
    curator_client, labelled, settings, django_capture_on_commit_callbacks
):
    settings.TOPICS_CLASSIFIER_MIN_POSITIVES = 5
    changelist = reverse("admin:topics_classifiermodel_changelist")
    assert 'value="Retrain now"' in curator_client.get(changelist).content.decode()

    with django_capture_on_commit_callbacks(execute=True):
        response = curator_client.post(reverse("admin:topics_classifiermodel_retrain"), follow=True)

    assert messages_of(response)[0].startswith("Queued a retraining of the classifier")
    version = ClassifierModel.objects.get(active=True)
    page = curator_client.get(
        reverse("admin:topics_classifiermodel_change", args=[version.pk])
    ).content.decode()
    assert "Planning" in page and "trained" in page
    assert curator_client.get(reverse("admin:topics_classifiermodel_retrain")).status_code == 405


def test_staff_without_the_change_permission_cannot_retrain(client, tree):
    viewer = UserFactory(username="viewer", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_classifiermodel"))
    client.force_login(viewer)
    changelist = reverse("admin:topics_classifiermodel_changelist")
    assert 'value="Retrain now"' not in client.get(changelist).content.decode()
    assert client.post(reverse("admin:topics_classifiermodel_retrain")).status_code == 403
    assert not ClassifierModel.objects.exists()


def test_an_assignment_page_shows_the_words_that_raised_its_score(
    curator_client, labelled, settings, monkeypatch
):
    settings.TOPICS_CLASSIFIER_MIN_POSITIVES = 5
    # Each process keeps the last loaded version by number, and every test's v1 is another
    # model (the database rolls back between tests): forget any loaded one.
    monkeypatch.setattr("topics.tagging.classifier._loaded", None)
    assignment = Assignment.objects.filter(topic=labelled["planning"]).first()
    url = reverse("admin:topics_assignment_change", args=[assignment.pk])
    assert "No classifier model for this topic" in curator_client.get(url).content.decode()

    classifier_train(apply=False)

    why = curator_client.get(url).content.decode()
    why = why[why.index("Words that raised the classifier score") :]
    assert any(word in why[:2000] for word in ("carlo", "monte", "planning", "horizon"))
