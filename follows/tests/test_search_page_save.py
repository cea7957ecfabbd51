"""Saving a search from the search page (``/search/``, ``topics.views.search``) into the
reader's follows: the page's form posts to ``follows.views.search_create``."""

import datetime as dt

import pytest
from django.urls import reverse

from follows.models import Follow
from papers.tests.factories import CategoryFactory, PaperFactory
from topics.tests.factories import AssignmentFactory, TopicFactory, UserFactory

pytestmark = pytest.mark.django_db

URL = "/search/"


@pytest.fixture
def papers():
    topic = TopicFactory(name="Agents", slug="agents")
    paper = PaperFactory(
        title="Tool use agents",
        primary_category=CategoryFactory(code="cs.CL"),
        submitted=dt.date(2026, 9, 1),
    )
    AssignmentFactory(paper=paper, topic=topic)
    return [paper]


def test_signed_in_readers_save_the_search_into_their_follows(client, papers):
    user = UserFactory()
    client.force_login(user)
    page = client.get(URL, {"q": "agent*", "topic": "agents", "category": "cs.CL"})
    html = page.content.decode()
    assert f'action="{reverse("follows:search-create")}"' in html
    assert 'name="query" value="agent*"' in html
    response = client.post(
        reverse("follows:search-create"),
        {
            "query": "agent*",
            "topics": "agents",
            "categories": "cs.CL",
            "digest_frequency": "weekly",
        },
    )
    assert response.status_code == 302
    follow = Follow.objects.get(user=user, kind=Follow.Kind.SEARCH)
    assert follow.query == "agent*"
    assert [t.slug for t in follow.topic_scope.all()] == ["agents"]
    assert [c.code for c in follow.category_scope.all()] == ["cs.CL"]
