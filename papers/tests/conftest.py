"""Fixtures for the ingestion tests: the recorded real data, a local HTTP server, DB snapshots."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest

from papers.models import (
    Affiliation,
    Author,
    Authorship,
    Category,
    Paper,
    PaperAffiliation,
    PaperVersion,
)
from papers.services import harvest_run
from papers.sources import DEFAULT_RECORDED_DIR

RECORDED_DIR = DEFAULT_RECORDED_DIR
TEST_DATA_DIR = Path(__file__).resolve().parent / "data"
ARXIV_RAW_PAGE = RECORDED_DIR / "oai" / "listrecords_arXivRaw_token_496549-46001.xml"
OAI_DC_PAGE = RECORDED_DIR / "oai" / "listrecords_oai_dc_cs_2024-01-25_trimmed.xml"
HEP_EX_PAGE = RECORDED_DIR / "oai" / "arxiv-physics-hep-ex.xml"
SNAPSHOT_HEAD = RECORDED_DIR / "snapshot" / "arxiv-metadata-oai-snapshot_head200.jsonl"
ATOM_DIR = RECORDED_DIR / "atom"

# Distinct canonical arXiv identifiers across every file in papers/recorded/, counted from the
# raw files with plain regular expressions (OAI <identifier>, Atom <id>, snapshot "id"):
# 1000 arXivRaw + 5 oai_dc + 3 hep-ex + 5 GetRecord + 200 snapshot + 104 distinct from the
# API recordings (their overlapping pages hold 60 papers more than once, 1432 records in all).
RECORDED_DISTINCT_IDS = 1317
RECORDED_RECORDS = 1432


@pytest.fixture
def categories(db):
    """The arXiv taxonomy stored, as ``manage.py load_categories`` does."""
    from papers.services import category_sync

    category_sync()


@pytest.fixture
def load_recorded(db):
    """Harvest everything ``papers/recorded/manifest.json`` lists; returns the summary."""

    def load():
        return harvest_run(kind="recorded", params={"directory": str(RECORDED_DIR)})

    return load


def table_state() -> dict:
    """Every row of the ingestion tables, to compare the database before and after."""
    return {
        "papers": sorted(
            Paper.objects.values_list(
                "arxiv_id",
                "latest_version",
                "title",
                "abstract",
                "submitted",
                "updated",
                "withdrawn",
                "primary_category__code",
                "author_count",
                "affiliation_count",
                "created_at",
                "updated_at",
            )
        ),
        "cross_lists": sorted(
            Paper.cross_lists.through.objects.values_list("paper__arxiv_id", "category__code")
        ),
        "versions": sorted(
            PaperVersion.objects.values_list(
                "paper__arxiv_id", "number", "submitted", "size_kb", "source_type"
            )
        ),
        "authors": sorted(Author.objects.values_list("pk", "name")),
        "authorships": sorted(
            Authorship.objects.values_list("pk", "paper__arxiv_id", "position", "author__name")
        ),
        "authorship_affiliations": sorted(
            Authorship.affiliations.through.objects.values_list(
                "pk", "authorship_id", "affiliation_id"
            )
        ),
        "affiliations": sorted(Affiliation.objects.values_list("pk", "name")),
        "paper_affiliations": sorted(
            PaperAffiliation.objects.values_list("pk", "paper__arxiv_id", "position")
        ),
        "categories": sorted(Category.objects.values_list("code", flat=True)),
    }


@dataclass
class LocalServer:
    """A real HTTP server on 127.0.0.1 run by a thread of the test.

    ``handler(query: dict[str, str], number: int) -> (status, headers, body)`` answers each
    GET (``number`` counts requests from 1); ``requests`` records ``(path, query, headers)``.
    """

    url: str = ""
    handler: Callable[[dict[str, str], int], tuple[int, dict[str, str], bytes]] | None = None
    requests: list[tuple[str, dict[str, str], dict[str, str]]] = field(default_factory=list)


@pytest.fixture
def local_server():
    state = LocalServer()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            parts = urlsplit(self.path)
            query = dict(parse_qsl(parts.query, keep_blank_values=True))
            with lock:
                state.requests.append((parts.path, query, dict(self.headers.items())))
                number = len(state.requests)
            status, headers, body = state.handler(query, number)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/oai"
    yield state
    server.shutdown()
    server.server_close()
    thread.join()
