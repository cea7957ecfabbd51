"""``topics/``, ``topics/{slug}/`` (momentum), ``topics/{slug}/papers/`` and ``trend/``; old
slugs answer 301."""

import datetime as dt

import pytest

from topics.assignments import assignment_decide
from topics.models import Topic
from topics.momentum import topic_momentum
from topics.selectors import topic_papers
from topics.tests.factories import AssignmentFactory, TopicFactory, UserFactory

from .conftest import assert_error, ids, make_paper

pytestmark = pytest.mark.django_db


def test_topic_list_filters_by_name_and_parent(api_client, world):
    TopicFactory(name="Hidden", slug="hidden", active=False)
    body = api_client.get("/api/v1/topics/").json()
    # Display names, as the topics index: "LLM Agent Training" < "LLM: Large Language Model".
    assert [t["slug"] for t in body["results"]] == ["llm-agent-training", "llm", "robotics"]
    assert body["count"] == 3
    by_name = api_client.get("/api/v1/topics/?q=AGENT").json()["results"]
    assert [t["slug"] for t in by_name] == ["llm-agent-training"]
    children = api_client.get("/api/v1/topics/?parent=llm").json()["results"]
    assert [t["parent"] for t in children] == ["llm"]


def test_topic_detail_has_parent_children_count_and_momentum(api_client, world):
    body = api_client.get("/api/v1/topics/llm/").json()
    assert body["display_name"] == "LLM: Large Language Model"
    assert body["parent"] is None
    assert body["children"] == [{"slug": "llm-agent-training", "name": "LLM Agent Training"}]
    assert body["paper_count"] == 3  # its own paper and its child's two
    momentum = body["momentum"]
    assert momentum["as_of"] == "2026-09-29"
    assert len(momentum["weeks"]) == 12
    assert momentum["weeks"][-1]["week_start"] == "2026-09-28"
    assert momentum["sentence"].startswith("2 papers in the last four weeks")


def test_an_unknown_or_inactive_topic_is_a_json_404(api_client, world):
    TopicFactory(name="Hidden", slug="hidden", active=False)
    for url in ("/api/v1/topics/nope/", "/api/v1/topics/hidden/papers/"):
        assert_error(api_client.get(url), 404, code="not_found")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("/api/v1/topics/agent-training/", "/api/v1/topics/llm-agent-training/"),
        (
            "/api/v1/topics/agent-training/papers/?page_size=1",
            "/api/v1/topics/llm-agent-training/papers/?page_size=1",
        ),
        (
            "/api/v1/topics/agent-training/trend/?weeks=4",
            "/api/v1/topics/llm-agent-training/trend/?weeks=4",
        ),
        (
            "/api/v1/topics/agent-training/papers.bib",
            "/api/v1/topics/llm-agent-training/papers.bib",
        ),
    ],
)
def test_an_old_slug_answers_301_to_the_new_address_keeping_the_query(api_client, world, old, new):
    response = api_client.get(old)
    assert response.status_code == 301
    assert response["Location"] == new


def test_topic_papers_include_descendants_and_take_the_paper_filters(api_client, world):
    assert ids(api_client.get("/api/v1/topics/llm/papers/")) == [
        "2609.00001",
        "2609.00002",
        "2608.00003",
    ]
    assert ids(api_client.get("/api/v1/topics/llm/papers/?submitted_after=2026-09-01")) == [
        "2609.00001",
        "2609.00002",
    ]
    assert ids(api_client.get("/api/v1/topics/robotics/papers/")) == []
    assert_error(
        api_client.get("/api/v1/topics/llm/papers/?submitted_after=soon"),
        400,
        param="submitted_after",
    )


def test_trend_counts_weekly_papers_and_their_share_up_to_as_of(api_client, world):
    make_paper(arxiv_id="2609.00020", submitted=dt.date(2026, 9, 23))  # in no topic
    body = api_client.get("/api/v1/topics/llm/trend/?as_of=2026-09-29&weeks=2").json()
    assert body["as_of"] == "2026-09-29"
    assert body["weeks"] == [
        {"week_start": "2026-09-21", "count": 1, "total": 2, "share": 0.5},
        {"week_start": "2026-09-28", "count": 1, "total": 1, "share": 1.0},
    ]
    # as_of cuts the week that holds it
    early = api_client.get("/api/v1/topics/llm/trend/?as_of=2026-09-28&weeks=1").json()
    assert early["weeks"] == [{"week_start": "2026-09-28", "count": 0, "total": 0, "share": 0.0}]


def test_trend_counts_a_paper_under_two_subtree_topics_once_and_no_withdrawn_one(api_client, world):
    """The topic's side comes from its subtree's assignments: a paper in the parent and the
    child counts once, a withdrawn paper in the topic on neither side."""
    from papers.models import Paper
    from topics.models import Assignment, Topic

    llm = Topic.objects.get(slug="llm")
    twice = Paper.objects.get(arxiv_id="2609.00002")
    Assignment.objects.create(paper=twice, topic=llm, source="rule", state="accepted", score=1)
    gone = make_paper(arxiv_id="2609.00021", submitted=dt.date(2026, 9, 23), topics=[llm])
    before = api_client.get("/api/v1/topics/llm/trend/?as_of=2026-09-29&weeks=2").json()
    assert before["weeks"][0] == {"week_start": "2026-09-21", "count": 2, "total": 2, "share": 1.0}
    Paper.objects.filter(pk=gone.pk).update(withdrawn=True)
    body = api_client.get("/api/v1/topics/llm/trend/?as_of=2026-09-29&weeks=2").json()
    assert body["weeks"][0] == {"week_start": "2026-09-21", "count": 1, "total": 1, "share": 1.0}


def test_trend_defaults_to_12_weeks_up_to_the_newest_paper(api_client, world):
    body = api_client.get("/api/v1/topics/llm/trend/").json()
    assert body["as_of"] == "2026-09-29"
    assert len(body["weeks"]) == 12


@pytest.mark.parametrize(
    ("query", "param"),
    [("weeks=0", "weeks"), ("weeks=261", "weeks"), ("weeks=x", "weeks"), ("as_of=29/09", "as_of")],
)
def test_trend_bad_parameters_are_400s(api_client, world, query, param):
    assert_error(api_client.get(f"/api/v1/topics/llm/trend/?{query}"), 400, param=param)


def test_topic_detail_reads_the_stored_figures_and_they_follow_a_curator_decision(
    api_client, world, django_capture_on_commit_callbacks
):
    """The detail reads the topic page's stored count and momentum (cheap at 1M papers);
    they must be the live figures, before and after a curator accepts a new paper."""

    def live(topic):
        return topic_papers(topic=topic).count(), topic_momentum(topic=topic)

    llm = Topic.objects.get(slug="llm")
    before = api_client.get("/api/v1/topics/llm/").json()
    count, momentum = live(llm)
    assert before["paper_count"] == count == 3
    assert before["momentum"]["recent"] == momentum.recent

    child = Topic.objects.get(slug="llm-agent-training")
    paper = make_paper(arxiv_id="2609.00009", submitted=dt.date(2026, 9, 28))
    pending = AssignmentFactory(paper=paper, topic=child, state="pending")
    with django_capture_on_commit_callbacks(execute=True):
        assignment_decide(assignment=pending, state="accepted", user=UserFactory())
    after = api_client.get("/api/v1/topics/llm/").json()
    count, momentum = live(llm)
    assert after["paper_count"] == count == 4
    assert after["momentum"]["recent"] == momentum.recent == before["momentum"]["recent"] + 1
    assert [w["count"] for w in after["momentum"]["weeks"]] == [w.count for w in momentum.weeks]
