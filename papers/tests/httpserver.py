"""A real HTTP server on 127.0.0.1, run by a thread of the test process, that serves recorded
arXiv responses and the faults a network adds to them (Retry-After, a connection dropped
mid-body, an answer slower than the client's timeout, a worker held mid-harvest); and the pages
it serves, built from real records.

The client under test talks to it over a real socket: nothing in ``requests`` or urllib3 is
patched. A handler maps each :class:`Request` to a :class:`Reply`.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from lxml import etree

from papers.sources.transports import HttpTransport

OAI_NS = "http://www.openarchives.org/OAI/2.0/"
ATOM_NS = "http://www.w3.org/2005/Atom"
XML_HEADERS = {"Content-Type": "text/xml; charset=utf-8"}
# A held reply is released by the test; this bounds the wait if the test never does.
HOLD_LIMIT_SECONDS = 120


@dataclass(frozen=True)
class Request:
    """A GET the server received: ``path``, ``query`` (one value per name), ``headers``, and
    ``number`` (1 for the first request the server saw)."""

    path: str
    query: dict[str, str]
    headers: dict[str, str]
    number: int


@dataclass
class Reply:
    """What to answer.

    - ``status``, ``headers`` and ``body`` as sent (``Content-Length`` is always the full
      body's length);
    - ``delay``: seconds to wait before the status line (a response slower than a timeout);
    - ``drop_after``: close the connection after this many body bytes (dropped mid-body);
    - ``hold``: answer only once this event is set (keeps a worker busy mid-harvest);
    - ``on_request``: set when the request arrives, before any delay or hold.
    """

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=lambda: dict(XML_HEADERS))
    delay: float = 0.0
    drop_after: int | None = None
    hold: threading.Event | None = None
    on_request: threading.Event | None = None


Handler = Callable[[Request], Reply]


class LocalHttpServer:
    """Serve ``handler``'s replies on ``http://127.0.0.1:<free port><path>`` from a thread.

    Use as a context manager (or :meth:`start` / :meth:`close`). ``requests`` lists every
    request received, in order; ``handler`` may be replaced at any time.
    """

    def __init__(self, handler: Handler | None = None, *, path: str = "/oai"):
        self.handler = handler
        self.path = path
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "the server is not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}{self.path}"

    def queries(self) -> list[dict[str, str]]:
        """The query of every request received, in order."""
        with self._lock:
            return [request.query for request in self.requests]

    def start(self) -> LocalHttpServer:
        server_state = self

        class RequestHandler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def handle(self):
                try:
                    super().handle()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client went away (timeout, size cap, killed worker)

            def do_GET(self):
                parts = urlsplit(self.path)
                with server_state._lock:
                    request = Request(
                        path=parts.path,
                        query=dict(parse_qsl(parts.query, keep_blank_values=True)),
                        headers=dict(self.headers.items()),
                        number=len(server_state.requests) + 1,
                    )
                    server_state.requests.append(request)
                reply = server_state.handler(request)
                if reply.on_request is not None:
                    reply.on_request.set()
                if reply.hold is not None:
                    reply.hold.wait(HOLD_LIMIT_SECONDS)
                if reply.delay:
                    time.sleep(reply.delay)
                try:
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(reply.body)))
                    if reply.drop_after is not None:
                        self.send_header("Connection", "close")
                    self.end_headers()
                    if reply.drop_after is None:
                        self.wfile.write(reply.body)
                    else:
                        self.wfile.write(reply.body[: reply.drop_after])
                        self.wfile.flush()
                        self.close_connection = True
                except (BrokenPipeError, ConnectionResetError):
                    # The client gave up (timeout) or was killed: nothing left to answer.
                    self.close_connection = True

            def log_message(self, format, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), RequestHandler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join()
            self._server = None

    def __enter__(self) -> LocalHttpServer:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.close()


# --- pages built from real responses --------------------------------------------------------


def oai_pages(path: Path, sizes: list[int], *, token_base: str = "496549") -> list[bytes]:
    """Split the real OAI-PMH ``ListRecords`` page at ``path`` into pages of ``sizes`` records
    (taken in order from its first record), the way arXiv pages a list: each page but the last
    ends with a ``resumptionToken`` (``"<token_base>|<cursor of the next page>"``, with
    ``cursor`` and ``completeListSize``), the last one with none. Envelope, responseDate and
    records are the real ones, byte for byte apart from the re-serialisation."""
    root = etree.fromstring(path.read_bytes())
    body = root.find(f"{{{OAI_NS}}}ListRecords")
    records = body.findall(f"{{{OAI_NS}}}record")
    if sum(sizes) > len(records):
        raise ValueError(f"{path} has {len(records)} records, fewer than {sum(sizes)}")
    for element in [*records, *body.findall(f"{{{OAI_NS}}}resumptionToken")]:
        body.remove(element)
    pages = []
    cursor = 0
    for number, size in enumerate(sizes, start=1):
        page = copy.deepcopy(root)
        page_body = page.find(f"{{{OAI_NS}}}ListRecords")
        for record in records[cursor : cursor + size]:
            page_body.append(copy.deepcopy(record))
        if number < len(sizes):
            token = etree.SubElement(page_body, f"{{{OAI_NS}}}resumptionToken")
            token.set("cursor", str(cursor))
            token.set("completeListSize", str(sum(sizes)))
            token.text = f"{token_base}|{cursor + size}"
        pages.append(etree.tostring(page, xml_declaration=True, encoding="UTF-8"))
        cursor += size
    return pages


def oai_token(page: bytes) -> str | None:
    """The resumption token a page built by :func:`oai_pages` ends with."""
    found = etree.fromstring(page).find(f".//{{{OAI_NS}}}resumptionToken")
    return None if found is None else found.text


def atom_without_entries(path: Path) -> bytes:
    """The real API feed at ``path`` with its entries removed and its OpenSearch totals kept:
    what the arXiv API sometimes answers for a page in the middle of a result set."""
    root = etree.fromstring(path.read_bytes())
    for entry in root.findall(f"{{{ATOM_NS}}}entry"):
        root.remove(entry)
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8")


def page(path: Path) -> Reply:
    """A 200 reply with the recorded file at ``path`` as its body."""
    return Reply(body=path.read_bytes())


def transport(**options) -> HttpTransport:
    """An HTTP transport for the local server: no retries and no backoff unless given."""
    options.setdefault("retries", 0)
    options.setdefault("backoff_factor", 0)
    return HttpTransport(**options)
