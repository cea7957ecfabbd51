"""Fixtures for the digest tests: a real SMTP server on a local socket (aiosmtpd) that Django's
SMTP backend talks to, and builders for followed topics and their papers."""

from __future__ import annotations

import email
import email.policy
import logging
import re
import socket
import threading
from email.message import EmailMessage

import pytest
from aiosmtpd.controller import Controller

from accounts.tests.factories import UserFactory
from papers.tests.factories import AuthorFactory, AuthorshipFactory, PaperFactory
from topics.tests.factories import AssignmentFactory, TopicFactory

__all__ = ["AssignmentFactory", "TopicFactory", "UserFactory"]

logging.getLogger("mail.log").setLevel(logging.WARNING)

SITE_URL = "https://topics.example.org"


class CollectingHandler:
    """An aiosmtpd handler that keeps every message it accepts, parsed."""

    def __init__(self):
        self.lock = threading.Lock()
        self.messages: list[EmailMessage] = []
        self.raw: list[bytes] = []

    async def handle_DATA(self, server, session, envelope):
        message = email.message_from_bytes(envelope.original_content, policy=email.policy.default)
        with self.lock:
            self.messages.append(message)
            self.raw.append(envelope.original_content)
        return "250 Message accepted for delivery"

    def to(self, address: str) -> list[EmailMessage]:
        with self.lock:
            return [m for m in self.messages if m["To"] == address]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def use_smtp(settings, port: int) -> None:
    """Point Django's SMTP email backend at 127.0.0.1:``port``."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    settings.EMAIL_PORT = port
    settings.EMAIL_HOST_USER = ""
    settings.EMAIL_HOST_PASSWORD = ""
    settings.EMAIL_USE_TLS = False
    settings.EMAIL_USE_SSL = False
    settings.EMAIL_TIMEOUT = 10


@pytest.fixture
def smtp_server(settings):
    """A local SMTP server over a real socket; Django sends to it. Yields its handler."""
    handler = CollectingHandler()
    controller = Controller(handler, hostname="127.0.0.1", port=free_port())
    controller.start()
    use_smtp(settings, controller.port)
    settings.SITE_URL = SITE_URL
    try:
        yield handler
    finally:
        controller.stop()


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
