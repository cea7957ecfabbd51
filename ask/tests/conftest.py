"""Fixtures for asking: the reference topic imported for real, the question set, and a local
fake OpenAI-compatible server over a real socket (the only outside service asking uses)."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from papers.services import category_sync
from topics.importers.reference import reference_page_import
from topics.models import Topic

REFERENCE_PAGE = Path(__file__).resolve().parents[2] / "topics" / "data" / "llm-agent-training.json"
QUESTIONS = json.loads((Path(__file__).parent / "data" / "questions.json").read_text("utf-8"))


@pytest.fixture
def reference_topic(db) -> Topic:
    """The reference page imported as ``manage.py import_reference_page`` does: the topic
    "LLM Agent Training" (under "LLM: Large Language Model") and its 30 papers."""
    category_sync()
    reference_page_import(data=json.loads(REFERENCE_PAGE.read_text("utf-8")))
    return Topic.objects.get(slug=QUESTIONS["topic"])


@pytest.fixture
def questions() -> dict:
    return QUESTIONS


class FakeChatServer(ThreadingHTTPServer):
    """An OpenAI-compatible ``/v1/chat/completions`` endpoint. ``behaviour`` picks the answer:
    ``"answer"`` (``reply`` as the message content), ``"slow"`` (waits ``delay`` seconds
    first), ``"500"``, ``"malformed"`` (not JSON), ``"empty"`` (empty content). ``requests``
    keeps every request body received, parsed."""

    daemon_threads = True
    behaviour = "answer"
    reply = ""
    delay = 3.0

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _ChatHandler)
        self.requests: list[dict] = []


class _ChatHandler(BaseHTTPRequestHandler):
    server: FakeChatServer

    def log_message(self, format, *args):  # keep test output quiet
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.requests.append(
            {"path": self.path, "headers": dict(self.headers), "json": json.loads(body)}
        )
        behaviour = self.server.behaviour
        if behaviour == "slow":
            time.sleep(self.server.delay)
        if behaviour == "500":
            self._send(500, b'{"error": {"message": "internal error"}}')
            return
        if behaviour == "malformed":
            self._send(200, b"<html>not json</html>")
            return
        content = "" if behaviour == "empty" else self.server.reply
        payload = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
        }
        self._send(200, json.dumps(payload).encode())

    def _send(self, status: int, body: bytes):
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
            pass


@pytest.fixture
def chat_server(settings):
    """A running :class:`FakeChatServer` on a free port, with the ``ASK_LLM_*`` settings
    pointing at it (timeout 1 s)."""
    server = FakeChatServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    settings.ASK_LLM_BASE_URL = f"http://127.0.0.1:{server.server_address[1]}/v1"
    settings.ASK_LLM_MODEL = "fake-model"
    settings.ASK_LLM_API_KEY = "test-key"
    settings.ASK_LLM_TIMEOUT = 1
    yield server
    server.shutdown()
    server.server_close()
    thread.join(10)
