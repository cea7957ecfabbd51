"""Fixtures and helpers shared by the tests of the curator admin (``topics.admin``): a
curator in the "Curators" group, a small topic tree, posting an action and reading messages."""

import pytest
from django.contrib.auth.models import Group
from django.contrib.messages import get_messages
from django.urls import reverse

from topics.services import topic_create
from topics.tests.factories import UserFactory

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
