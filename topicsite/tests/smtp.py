"""A real SMTP server on a local socket (aiosmtpd) for tests that send mail through Django's
SMTP backend and read what arrived: the digest tests and the browser tests share it."""

from __future__ import annotations

import email
import email.policy
import logging
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import EmailMessage

from aiosmtpd.controller import Controller

__all__ = ["CollectingHandler", "free_port", "local_smtp_server", "use_smtp"]

logging.getLogger("mail.log").setLevel(logging.WARNING)


class CollectingHandler:
    """An aiosmtpd handler that keeps every message it accepts, parsed (``messages``, as
    ``email.message.EmailMessage``) and raw (``raw``, bytes); safe to read from another
    thread."""

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
        """The messages whose ``To`` header is exactly ``address``, oldest first."""
        with self.lock:
            return [m for m in self.messages if m["To"] == address]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def use_smtp(settings, port: int) -> None:
    """Point Django's SMTP email backend at 127.0.0.1:``port`` (``settings``: pytest-django's
    fixture, so the change is undone after the test)."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    settings.EMAIL_PORT = port
    settings.EMAIL_HOST_USER = ""
    settings.EMAIL_HOST_PASSWORD = ""
    settings.EMAIL_USE_TLS = False
    settings.EMAIL_USE_SSL = False
    settings.EMAIL_TIMEOUT = 10


@contextmanager
def local_smtp_server(settings) -> Iterator[CollectingHandler]:
    """Start an SMTP server on a free local port, point Django's mail at it (``use_smtp``) and
    yield its :class:`CollectingHandler`; the server stops on exit."""
    handler = CollectingHandler()
    controller = Controller(handler, hostname="127.0.0.1", port=free_port())
    controller.start()
    use_smtp(settings, controller.port)
    try:
        yield handler
    finally:
        controller.stop()
