"""The ask API takes the old slug of a renamed topic, as every other topic resource of the
API does (the GETs answer 301, ``me/follows/`` resolves it): a third party that stored the
slug before the rename keeps getting answers instead of a 404."""

import pytest
from rest_framework.test import APIClient

from papers.tests.factories import PaperFactory
from topics.models import TopicRedirect
from topics.tests.factories import AssignmentFactory, TopicFactory

pytestmark = pytest.mark.django_db


def test_asking_by_an_old_slug_answers_for_the_topic_now():
    topic = TopicFactory(name="Agents", slug="agents")
    TopicRedirect.objects.create(old_slug="old-agents", topic=topic)
    paper = PaperFactory(
        title="Training tool-using agents with GRPO",
        abstract="We train tool-using language agents with GRPO and report gains.",
    )
    AssignmentFactory(paper=paper, topic=topic)
    client = APIClient()

    response = client.post(
        "/api/v1/topics/old-agents/ask/", {"question": "agents GRPO"}, format="json"
    )

    assert response.status_code == 200, response.content
    assert response.json()["topic"] == "agents"


def test_an_old_slug_of_an_inactive_topic_is_still_a_404():
    topic = TopicFactory(name="Gone", slug="gone", active=False)
    TopicRedirect.objects.create(old_slug="old-gone", topic=topic)

    response = APIClient().post(
        "/api/v1/topics/old-gone/ask/", {"question": "anything"}, format="json"
    )

    assert response.status_code == 404
