"""Fixtures for the ingestion tests: the recorded real data, a local HTTP server, DB snapshots."""

from __future__ import annotations

from pathlib import Path

import pytest

from papers.harvest import harvest_run
from papers.models import (
    Affiliation,
    Author,
    Authorship,
    Category,
    Paper,
    PaperAffiliation,
    PaperVersion,
)
from papers.parsers.oai import parse_oai_page
from papers.parsers.snapshot import iter_snapshot
from papers.signals import papers_stored
from papers.sources.recorded import DEFAULT_RECORDED_DIR
from papers.sources.transports import RequestLimiter, redis_client

from .httpserver import LocalHttpServer

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
    from papers.categories import category_sync

    category_sync()


@pytest.fixture
def load_recorded(db):
    """Harvest everything ``papers/recorded/manifest.json`` lists; returns the summary."""

    def load():
        return harvest_run(kind="recorded", params={"directory": str(RECORDED_DIR)})

    return load


@pytest.fixture
def quick_limiter(settings):
    """The shared limiter on, with an interval small enough for tests; its key cleared."""
    settings.ARXIV_REQUEST_INTERVAL_MS = 5
    client = redis_client(settings.REDIS_URL)
    client.delete(RequestLimiter.KEY)
    yield
    client.delete(RequestLimiter.KEY)


@pytest.fixture
def server():
    """A local HTTP server; tests set its ``handler``."""
    with LocalHttpServer() as server:
        yield server


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


# --- records from the recorded real responses, and the papers_stored signal ------------------


def arxiv_raw_records():
    return parse_oai_page(ARXIV_RAW_PAGE.read_bytes(), source=str(ARXIV_RAW_PAGE)).records


def arxiv_raw_record(arxiv_id):
    return next(record for record in arxiv_raw_records() if record.arxiv_id == arxiv_id)


def snapshot_records():
    with SNAPSHOT_HEAD.open("rb") as stream:
        return list(iter_snapshot(stream, source=str(SNAPSHOT_HEAD)))


@pytest.fixture
def stored_signals():
    """Every ``papers_stored`` sent while the test runs, as lists of paper ids."""
    sent = []

    def receiver(sender, paper_ids, **kwargs):
        sent.append(list(paper_ids))

    papers_stored.connect(receiver, dispatch_uid="test-stored-signals")
    yield sent
    papers_stored.disconnect(dispatch_uid="test-stored-signals")


@pytest.fixture
def index_dir(settings, tmp_path):
    """``settings.EMBEDDING_INDEX_DIR`` in a fresh temporary directory, so each test starts
    without an index file."""
    settings.EMBEDDING_INDEX_DIR = tmp_path / "vectors"
    return settings.EMBEDDING_INDEX_DIR


@pytest.fixture
def encoder():
    """The real sentence encoder (``papers.embeddings.encoder.get_encoder``)."""
    from papers.embeddings.encoder import get_encoder

    return get_encoder()


@pytest.fixture
def missing_model(settings, tmp_path):
    """``EMBEDDING_MODEL_PATH`` naming a directory that does not exist, the process's encoder
    forgotten before and after (``reset_encoder``); returns the path."""
    from papers.embeddings.encoder import reset_encoder

    settings.EMBEDDING_MODEL_PATH = str(tmp_path / "no-model-here")
    reset_encoder()
    yield settings.EMBEDDING_MODEL_PATH
    reset_encoder()
