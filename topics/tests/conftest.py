"""Fixtures and helpers shared by the topics tests: for the curator admin (``topics.admin``),
a curator in the "Curators" group, a small topic tree (``tree``), posting an action and reading
messages; for the topic reads (selectors, cards, the topic page at scale), papers placed in
topics on known days (``paper_in``) and a tree of them (``papers_tree``)."""

import datetime as dt

import pytest
from django.contrib.auth.models import Group
from django.contrib.messages import get_messages
from django.urls import reverse

from papers.tests.factories import CategoryFactory, PaperFactory
from topics.models import Assignment
from topics.services import topic_create
from topics.tests.factories import AssignmentFactory, TopicFactory, UserFactory

ACCEPTED, PENDING, REJECTED = "accepted", "pending", "rejected"
TOPICS = "admin:topics_topic_changelist"
ASSIGNMENTS = "admin:topics_assignment_changelist"
PAPERS = "admin:papers_paper_changelist"


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


DAY = dt.date(2026, 9, 29)


def paper_in(*topics, submitted=DAY, state=Assignment.State.ACCEPTED):
    """A new paper submitted on ``submitted``, assigned to each of ``topics`` in ``state``."""
    paper = PaperFactory(submitted=submitted)
    for topic in topics:
        AssignmentFactory(paper=paper, topic=topic, state=state)
    return paper


@pytest.fixture
def papers_tree():
    """A parent with three children; papers spread over days, some under two children, ties
    on the submitted date, a rejected assignment and a paper outside the tree."""
    parent = TopicFactory(name="Parent")
    children = [TopicFactory(name=f"Child {i}", parent=parent) for i in range(3)]
    grandchild = TopicFactory(name="Grandchild", parent=children[0])
    outside = TopicFactory(name="Outside")
    for day in range(12):
        submitted = DAY - dt.timedelta(days=day // 2)  # two papers a day: ties on the date
        members = [children[day % 3]] + ([children[(day + 1) % 3]] if day % 4 == 0 else [])
        paper_in(*members, submitted=submitted)
    paper_in(grandchild, submitted=DAY - dt.timedelta(days=3))
    paper_in(parent, submitted=DAY - dt.timedelta(days=20))
    paper_in(children[1], submitted=DAY, state=Assignment.State.REJECTED)
    paper_in(outside, submitted=DAY)
    return parent, children, grandchild


@pytest.fixture
def categories():
    """Four arXiv categories the tagging tests file papers under (a test module may define
    its own ``categories``, which wins)."""
    return {
        "cs.CL": CategoryFactory(code="cs.CL"),
        "cs.LG": CategoryFactory(code="cs.LG"),
        "hep-th": CategoryFactory(
            code="hep-th",
            archive="hep-th",
            archive_name="High Energy Physics - Theory",
            group="grp_physics",
            group_name="Physics",
        ),
        "math.AG": CategoryFactory(code="math.AG", group="grp_math", group_name="Mathematics"),
    }
