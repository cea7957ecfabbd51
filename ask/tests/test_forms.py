"""The ask box's example question fits the topic it is on."""

import pytest

from ask.forms import AskForm
from topics.tests.factories import TopicFactory

pytestmark = pytest.mark.django_db


def test_the_placeholder_names_the_topic_and_not_grpo(client):
    topic = TopicFactory(name="Graph Neural Networks", slug="gnn")
    placeholder = AskForm(topic=topic).fields["q"].widget.attrs["placeholder"]
    assert placeholder == "e.g. What are the main approaches in Graph Neural Networks?"
    assert "GRPO" not in AskForm().fields["q"].widget.attrs["placeholder"]
    page = client.get("/topics/gnn/").content.decode()
    assert 'placeholder="e.g. What are the main approaches in Graph Neural Networks?"' in page
    assert "GRPO" not in page
