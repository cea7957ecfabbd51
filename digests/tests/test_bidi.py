"""A digest's HTML isolates titles and author names (``<bdi>``), as the site's pages do: a
bidi override in one cannot reorder the rest of the email (topicsite/tests/test_bidi_isolation.py
has the checker)."""

import datetime as dt

import pytest

from digests.services import digest_send
from follows.services import follow_create
from papers.tests.factories import AuthorFactory
from topicsite.tests.test_bidi_isolation import AUTHOR, TITLE, assert_isolated

from .conftest import TopicFactory, UserFactory, paper_in, parts

pytestmark = pytest.mark.django_db


def test_digest_html_isolates_titles_and_names(smtp_server):
    user = UserFactory()
    topic = TopicFactory(name="Agents")
    follow_create(user=user, topic=topic, digest_frequency="daily")
    paper = paper_in(topic, title=TITLE)
    first = paper.authorships.get(position=0)
    first.author = AuthorFactory(name=AUTHOR)
    first.save()

    digest_send(user=user, period="daily", period_end=dt.date(2026, 11, 30))

    (message,) = smtp_server.messages
    _text, html = parts(message)
    assert_isolated(html, TITLE, AUTHOR)
