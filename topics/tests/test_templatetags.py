"""The paper page shows the paper's topics through topics' template tag."""

import pytest

from papers.tests.factories import PaperFactory
from topics.models import Assignment
from topics.tests.factories import AssignmentFactory, TopicFactory

pytestmark = pytest.mark.django_db


def test_paper_page_links_accepted_active_topics_only(client):
    paper = PaperFactory(arxiv_id="0801.3674")
    shown = TopicFactory(name="Brane Inflation", slug="brane-inflation")
    rejected = TopicFactory(name="Dark Energy", slug="dark-energy")
    inactive = TopicFactory(name="Old Topic", slug="old-topic", active=False)
    AssignmentFactory(paper=paper, topic=shown)
    AssignmentFactory(paper=paper, topic=rejected, state=Assignment.State.REJECTED)
    AssignmentFactory(paper=paper, topic=inactive)

    html = client.get("/papers/0801.3674/").content.decode()

    assert '<a href="/topics/brane-inflation/">Brane Inflation</a>' in html
    assert "/topics/dark-energy/" not in html
    assert "/topics/old-topic/" not in html


def test_paper_without_topics_has_no_topics_section(client):
    PaperFactory(arxiv_id="0801.3673")

    html = client.get("/papers/0801.3673/").content.decode()

    assert "paper-topics-heading" not in html
