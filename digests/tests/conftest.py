"""Fixtures for the digest tests: a real SMTP server on a local socket (aiosmtpd) that Django's
SMTP backend talks to, and builders for followed topics and their papers."""

from __future__ import annotations

import re
from email.message import EmailMessage

import pytest

from accounts.tests.factories import UserFactory
from papers.tests.factories import AuthorFactory, AuthorshipFactory, PaperFactory
from topics.tests.factories import AssignmentFactory, TopicFactory
from topicsite.tests.smtp import CollectingHandler, free_port, local_smtp_server, use_smtp

__all__ = [
    "AssignmentFactory",
    "CollectingHandler",
    "TopicFactory",
    "UserFactory",
    "free_port",
    "use_smtp",
]

SITE_URL = "https://topics.example.org"


@pytest.fixture
def smtp_server(settings):
    """A local SMTP server over a real socket; Django sends to it. Yields its handler."""
    with local_smtp_server(settings) as handler:
        settings.SITE_URL = SITE_URL
        yield handler


def parts(message: EmailMessage) -> tuple[str, str]:
    """The (plain text, HTML) bodies of a multipart/alternative digest email."""
    assert message.get_content_type() == "multipart/alternative"
    text = message.get_body(preferencelist=("plain",))
    html = message.get_body(preferencelist=("html",))
    assert text is not None and html is not None
    return text.get_content(), html.get_content()


def links(html: str) -> list[str]:
    """Every href in ``html``, unescaped."""
    import html as html_lib

    return [html_lib.unescape(href) for href in re.findall(r'href="([^"]+)"', html)]


def paper_in(topic, **kwargs):
    """A paper with an accepted assignment to ``topic`` and two authors."""
    paper = PaperFactory(author_count=2, **kwargs)
    for position in range(2):
        AuthorshipFactory(paper=paper, author=AuthorFactory(), position=position)
    AssignmentFactory(paper=paper, topic=topic)
    return paper
