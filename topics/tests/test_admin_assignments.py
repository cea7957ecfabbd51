"""The assignment admin (``topics.admin.assignments``) as a curator: the filters, the review
queue, bulk decisions, moving papers to another topic, re-tagging, and adding or changing one
assignment as a curator decision."""

import re

import pytest
from django.urls import reverse

from papers.tests.factories import CategoryFactory, PaperFactory
from topics.models import Assignment, Topic
from topics.tests.conftest import (
    ACCEPTED,
    ASSIGNMENTS,
    PENDING,
    REJECTED,
    action,
    messages_of,
)
from topics.tests.factories import AssignmentFactory, UserFactory

pytestmark = pytest.mark.django_db


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


@pytest.mark.parametrize(
    "term", ["2409.01234", "arXiv:2409.01234v2", "https://arxiv.org/abs/2409.01234v1/"]
)
def test_search_finds_a_papers_assignments_by_any_spelling_of_its_id(
    curator_client, tree, assignments, term
):
    paper = PaperFactory(arxiv_id="2409.01234")
    wanted = AssignmentFactory(paper=paper, topic=tree["search"])

    assert listed(curator_client, q=term) == [wanted]


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


@pytest.mark.parametrize("decider", ["nope", "\u00b2", "\u0663"])
def test_an_unknown_decider_is_the_admins_invalid_filter_redirect(
    curator_client, assignments, decider
):
    """Not a 500 for digits int() refuses ("²"), nor another user for "٣" read as 3."""
    response = curator_client.get(reverse(ASSIGNMENTS), {"decider": decider})
    assert response.status_code == 302 and "e=1" in response["Location"]


def test_the_topic_filter_lists_every_topic_as_a_tree_by_name(curator_client, tree, assignments):
    page = curator_client.get(reverse(ASSIGNMENTS)).content.decode()
    filter_html = page[page.index('id="changelist-filter"') :]
    # Every topic, children included, each after its parent, siblings by name (not by id as
    # text: the tree's ids run past 9, and "Tool use" was made before "Planning"'s child).
    order = [int(pk) for pk in re.findall(r'href="\?topic=(\d+)"', filter_html)]
    expected = ["agents", "planning", "search", "tool-use", "language"]
    wanted = [tree[name].pk for name in expected]
    assert [pk for pk in order if pk in wanted] == wanted
    assert f'href="?topic={tree["search"].pk}">\u2003\u2003Search</a>' in filter_html
    assert curator_client.get(reverse(ASSIGNMENTS), {"topic": "nope"}).status_code == 302


def test_filtering_by_a_parent_includes_its_descendants(curator_client, tree, assignments):
    under_agents = set(listed(curator_client, topic=tree["agents"].pk))
    assert under_agents == set(assignments.values())  # planning's and search's, all of them
    assert set(listed(curator_client, topic=tree["search"].pk)) == {
        assignments["mid"],
        assignments["grace"],
    }
    assert listed(curator_client, topic=tree["language"].pk) == []


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


# --- semantic suggestions: the queue, one click decisions, the evidence -----------------------


@pytest.fixture
def suggestions(tree, assignments):
    planning = tree["planning"]
    return {
        "semantic": AssignmentFactory(
            topic=planning,
            source="semantic",
            state=PENDING,
            score=0.74,
            evidence={"cosine": 0.61, "nearest": [], "labels": 0},
        ),
        "accepted": AssignmentFactory(
            topic=planning, source="semantic", state=ACCEPTED, score=0.95
        ),
    }


def test_the_review_queue_ranks_semantic_suggestions_with_the_classifier_ones(
    curator_client, assignments, suggestions
):
    rows = listed(curator_client, review="queue")
    assert rows == [
        assignments["high"],
        suggestions["semantic"],
        assignments["mid"],
        assignments["low"],
    ]


def test_one_click_accept_and_reject_are_curator_decisions(
    curator_client, curator, assignments, suggestions
):
    queue = reverse(ASSIGNMENTS) + "?review=queue"
    page = curator_client.get(queue)
    decide = reverse("admin:topics_assignment_quick_decide")
    pk = suggestions["semantic"].pk
    assert f'value="accepted:{pk}" formaction="{decide}"' in page.text
    assert f'value="accepted:{assignments["mine"].pk}"' not in page.text  # decided already

    response = curator_client.post(decide, {"decision": f"accepted:{pk}"}, HTTP_REFERER=queue)
    assert response.status_code == 302 and response["Location"] == queue
    accepted = Assignment.objects.get(pk=pk)
    assert (accepted.state, accepted.decided_by) == (ACCEPTED, curator)
    assert accepted.history.count() >= 2

    low = assignments["low"]
    response = curator_client.post(
        decide, {"decision": f"rejected:{low.pk}"}, HTTP_REFERER="https://elsewhere.example/"
    )
    assert response["Location"] == reverse(ASSIGNMENTS)  # never off the site
    low.refresh_from_db()
    assert (low.state, low.decided_by) == (REJECTED, curator)
    assert any("rejected in" in message for message in messages_of(curator_client.get(queue)))


@pytest.mark.parametrize(
    "decision",
    ["", "maybe:1", "accepted:", "accepted:x", "pending:1", "accepted:\u00b2", "accepted:\u0663"],
)
def test_one_click_decision_refuses_what_is_not_one(curator_client, suggestions, decision):
    before = list(Assignment.objects.values_list("pk", "state", "decided_by"))
    response = curator_client.post(
        reverse("admin:topics_assignment_quick_decide"), {"decision": decision}
    )
    assert response.status_code == 400
    assert b"decision must be" in response.content
    assert list(Assignment.objects.values_list("pk", "state", "decided_by")) == before


def test_one_click_decision_of_an_unknown_assignment_is_404_and_get_is_refused(curator_client):
    url = reverse("admin:topics_assignment_quick_decide")
    assert curator_client.post(url, {"decision": "accepted:999999"}).status_code == 404
    assert curator_client.get(url).status_code == 405


def test_one_click_decision_needs_the_change_permission(client, suggestions):
    viewer = UserFactory(username="viewer", is_staff=True)
    client.force_login(viewer)
    pk = suggestions["semantic"].pk
    response = client.post(
        reverse("admin:topics_assignment_quick_decide"), {"decision": f"accepted:{pk}"}
    )
    assert response.status_code == 403
    assert Assignment.objects.get(pk=pk).state == PENDING


def test_an_assignment_says_why(curator_client, suggestions, tree):
    paper = PaperFactory()
    labelled = AssignmentFactory(paper=paper, topic=tree["search"], source="curator")
    suggestion = suggestions["semantic"]
    suggestion.evidence = {"cosine": 0.61, "nearest": [paper.pk], "labels": 1}
    suggestion.save()
    rule = AssignmentFactory(
        topic=tree["search"], evidence={"rule": '"tree search"', "categories": True}
    )
    page = curator_client.get(reverse("admin:topics_assignment_change", args=[suggestion.pk]))
    assert "cosine 0.61" in page.text and "1 accepted papers" in page.text
    assert reverse("admin:papers_paper_change", args=[paper.pk]) in page.text
    page = curator_client.get(reverse("admin:topics_assignment_change", args=[rule.pk]))
    assert "Rule: &quot;tree search&quot; (within the topic&#x27;s categories)" in page.text
    page = curator_client.get(reverse("admin:topics_assignment_change", args=[labelled.pk]))
    assert "No machine evidence" in page.text
