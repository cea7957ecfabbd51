"""Harvest runs against a real local HTTP server serving real arXiv pages: every page stored
with its checkpoint, the network's faults (Retry-After, dropped connections, slow answers,
malformed XML), OAI and API errors, one harvest per kind at a time, resuming and taking over
runs, the time budget, tasks delivered twice, incremental schedules, and the admin.

Every fault ends one of two ways: the database complete and equal to an uninterrupted harvest,
or unchanged since the last stored page with the run failed and resumable; then resuming it
gives the same database as the uninterrupted harvest, with no page stored twice.
"""

from __future__ import annotations

import datetime as dt
import json
import threading

import pytest
from celery.exceptions import Retry
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import connection
from django.db.models import F
from django.urls import reverse
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from papers.harvest import HarvestLocked, harvest_run, harvest_run_resume
from papers.models import (
    Affiliation,
    Author,
    Authorship,
    HarvestRun,
    Paper,
    PaperAffiliation,
    PaperVersion,
)
from papers.parsers.oai import parse_oai_page
from papers.records import ParseError
from papers.sources.base import HarvestError, SourceError
from papers.sources.transports import RequestLimiter, redis_client
from papers.tasks import harvest, harvest_resume

from .conftest import ARXIV_RAW_PAGE, ATOM_DIR, RECORDED_DIR, TEST_DATA_DIR
from .httpserver import LocalHttpServer, Reply, atom_without_entries, oai_pages, oai_token

pytestmark = pytest.mark.django_db

# Three pages of a list, cut from the real arXivRaw page (120 real records).
PAGES = oai_pages(ARXIV_RAW_PAGE, [40, 40, 40])
TOKENS = [oai_token(body) for body in PAGES]
LOCK_KEYS = [f"papers:harvest-lock:{kind}" for kind in HarvestRun.Kind.values]
ATOM_SEARCH_PAGES = {
    "0": "q_testing_s0_m10_bc5a6c384fe9.xml",
    "10": "q_testing_s10_m10_34e56e15aaac.xml",
    "20": "q_testing_s20_m10_348a237fecab.xml",
}


@pytest.fixture(autouse=True)
def harvest_settings(settings):
    """Fast but real: the shared limiter on with a short interval, one retry, no backoff."""
    settings.ARXIV_REQUEST_INTERVAL_MS = 5
    settings.ARXIV_HTTP_RETRIES = 1
    settings.ARXIV_HTTP_BACKOFF_SECONDS = 0
    settings.ARXIV_HTTP_TIMEOUT = 10
    settings.ARXIV_OAI_SETS = ["cs"]
    client = redis_client(settings.REDIS_URL)
    client.delete(RequestLimiter.KEY)
    cache.delete_many(LOCK_KEYS)
    yield
    cache.delete_many(LOCK_KEYS)
    client.delete(RequestLimiter.KEY)


@pytest.fixture
def server():
    with LocalHttpServer() as server:
        yield server


def oai_list(faults: dict[int, list] | None = None):
    """A handler serving ``PAGES`` as one OAI list (page 1 for a request without a token, page
    n + 1 for the token page n ends with). ``faults[n]``: replies to give instead of page n,
    one per request, each made from the page's body, before the page itself is served."""
    faults = {number: list(replies) for number, replies in (faults or {}).items()}
    by_token = {None: 0, **{token: index + 1 for index, token in enumerate(TOKENS[:-1])}}

    def handler(request):
        index = by_token[request.query.get("resumptionToken")]
        pending = faults.get(index + 1)
        if pending:
            return pending.pop(0)(PAGES[index])
        return Reply(body=PAGES[index])

    return handler


def oai_params(server) -> dict:
    return {"base_url": server.url, "sets": ["cs"], "from": "2008-01-25"}


def content_state() -> dict:
    """What the harvest stored, without ids or timestamps (which differ between databases)."""
    return {
        "papers": sorted(
            Paper.objects.values_list(
                "arxiv_id",
                "latest_version",
                "title",
                "title_raw",
                "abstract",
                "comments",
                "journal_ref",
                "doi",
                "license",
                "submitter",
                "submitted",
                "updated",
                "withdrawn",
                "datestamp",
                "source",
                "primary_category__code",
                "author_count",
                "affiliation_count",
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
        "authorships": sorted(
            Authorship.objects.values_list("paper__arxiv_id", "position", "author__name")
        ),
        "authorship_affiliations": sorted(
            Authorship.affiliations.through.objects.values_list(
                "authorship__paper__arxiv_id", "authorship__position", "affiliation__name"
            )
        ),
        "paper_affiliations": sorted(
            PaperAffiliation.objects.values_list("paper__arxiv_id", "position", "affiliation__name")
        ),
        "authors": sorted(Author.objects.values_list("name", "keyname", "forenames", "suffix")),
        "affiliations": sorted(Affiliation.objects.values_list("name", flat=True)),
    }


def wipe():
    Paper.objects.all().delete()
    Author.objects.all().delete()
    Affiliation.objects.all().delete()
    HarvestRun.objects.all().delete()


def uninterrupted(server, handler, kind="oai", params=None) -> dict:
    """The database an uninterrupted harvest gives, then an empty one again."""
    server.handler = handler
    summary = harvest_run(kind=kind, params=params or oai_params(server))
    assert summary.status == HarvestRun.Status.SUCCEEDED
    state = content_state()
    wipe()
    server.requests.clear()
    return state


def stored_ids() -> set[str]:
    return set(Paper.objects.values_list("arxiv_id", flat=True))


def page_ids(number: int) -> set[str]:
    """Canonical ids of the records on page ``number`` of ``PAGES``."""
    return {record.arxiv_id for record in parse_oai_page(PAGES[number - 1], source="").records}


# --- the checkpoint -------------------------------------------------------------------------


def test_an_oai_list_is_stored_page_by_page_with_its_checkpoint(server):
    server.handler = oai_list()

    summary = harvest_run(kind="oai", params=oai_params(server))

    run = HarvestRun.objects.get()
    assert (summary.run_id, summary.status, summary.pages, summary.created) == (
        run.pk,
        "succeeded",
        3,
        120,
    )
    assert (run.status, run.pages_done, run.records_created, run.records_unchanged) == (
        "succeeded",
        3,
        120,
        0,
    )
    assert run.params == {"base_url": server.url, "sets": ["cs"], "from": "2008-01-25"}
    assert run.position == {"source": 1}
    assert run.resumption_token == ""
    assert run.last_datestamp == max(
        Paper.objects.values_list("datestamp", flat=True), default=None
    )
    assert (run.errors, run.error_count, run.attempt) == ([], 0, 1)
    assert run.started_at <= run.finished_at
    assert stored_ids() == page_ids(1) | page_ids(2) | page_ids(3)
    assert server.queries() == [
        {"verb": "ListRecords", "metadataPrefix": "arXivRaw", "set": "cs", "from": "2008-01-25"},
        {"verb": "ListRecords", "resumptionToken": TOKENS[0]},
        {"verb": "ListRecords", "resumptionToken": TOKENS[1]},
    ]


def test_a_page_and_its_checkpoint_commit_together(server):
    """A failure while the checkpoint of page 2 is written takes page 2's records with it."""
    expected = uninterrupted(server, oai_list())
    server.handler = oai_list()
    with connection.cursor() as cursor:
        # A real database failure at the worst moment: page 2's papers are written, its
        # checkpoint is being saved.
        cursor.execute(
            """
            CREATE FUNCTION test_fail_second_checkpoint() RETURNS trigger AS $$
            BEGIN
                IF NEW.pages_done = 2 THEN RAISE EXCEPTION 'disk full (test)'; END IF;
                RETURN NEW;
            END $$ LANGUAGE plpgsql;
            CREATE TRIGGER test_fail_second_checkpoint BEFORE UPDATE ON papers_harvestrun
            FOR EACH ROW EXECUTE FUNCTION test_fail_second_checkpoint();
            """
        )

    with pytest.raises(Exception, match="disk full") as raised:
        harvest_run(kind="oai", params=oai_params(server))

    run = HarvestRun.objects.get()
    assert (run.status, run.pages_done, run.resumption_token) == ("failed", 1, TOKENS[0])
    assert stored_ids() == page_ids(1)
    assert "disk full" in run.errors[-1]
    assert f"harvest --resume {run.pk}" in raised.value.__notes__[0]

    with connection.cursor() as cursor:
        cursor.execute("DROP TRIGGER test_fail_second_checkpoint ON papers_harvestrun")
    server.requests.clear()
    harvest_run_resume(run=run)

    run.refresh_from_db()
    assert (run.status, run.pages_done, run.records_created, run.records_unchanged) == (
        "succeeded",
        3,
        120,
        0,
    )
    assert server.queries() == [
        {"verb": "ListRecords", "resumptionToken": TOKENS[0]},
        {"verb": "ListRecords", "resumptionToken": TOKENS[1]},
    ]
    assert content_state() == expected


# --- the network's faults on page two -------------------------------------------------------


def busy(body):
    return Reply(status=503, headers={"Retry-After": "1"}, body=b"busy")


def dropped(body):
    return Reply(body=body, drop_after=len(body) // 2)


def slow(body):
    return Reply(body=body, delay=1.5)


def malformed(body):
    return Reply(body=body[: len(body) // 2])


FAULTS = [
    # (fault, times in a row, what the run ends with before any resume)
    pytest.param(busy, 1, None, id="503-retry-after-then-ok"),
    pytest.param(dropped, 1, None, id="dropped-mid-body-then-ok"),
    pytest.param(slow, 1, None, id="slower-than-timeout-then-ok"),
    pytest.param(busy, 2, HarvestError, id="503-until-retries-spent"),
    pytest.param(dropped, 2, HarvestError, id="dropped-until-retries-spent"),
    pytest.param(slow, 2, HarvestError, id="slow-until-retries-spent"),
    pytest.param(malformed, 1, ParseError, id="malformed-xml"),
]


@pytest.mark.parametrize(("fault", "times", "failure"), FAULTS)
def test_a_fault_on_page_two(server, settings, caplog, fault, times, failure):
    settings.ARXIV_HTTP_TIMEOUT = 0.5
    expected = uninterrupted(server, oai_list())
    server.handler = oai_list({2: [fault] * times})

    if failure is None:
        harvest_run(kind="oai", params=oai_params(server))
        run = HarvestRun.objects.get()
    else:
        with pytest.raises(failure) as raised:
            harvest_run(kind="oai", params=oai_params(server))
        run = HarvestRun.objects.get()
        # Loud, and unchanged since the last stored page.
        assert (run.status, run.pages_done, run.resumption_token) == ("failed", 1, TOKENS[0])
        assert run.position == {
            "source": 0,
            "state": {"resumption_token": TOKENS[0], "restarts": 0},
        }
        assert stored_ids() == page_ids(1)
        assert run.error_count == 1 and TOKENS[0].replace("|", "%7C") in run.errors[0]
        assert f"harvest --resume {run.pk}" in raised.value.__notes__[0]
        server.requests.clear()

        harvest_run_resume(run=run)

        run.refresh_from_db()
        # Only the pages after the checkpoint were asked for.
        assert server.queries()[0] == {"verb": "ListRecords", "resumptionToken": TOKENS[0]}
        assert run.attempt == 2

    assert (run.status, run.pages_done) == ("succeeded", 3)
    # No page stored twice: every record was new once.
    assert (run.records_created, run.records_updated, run.records_unchanged) == (120, 0, 0)
    assert content_state() == expected
    if fault is busy:
        assert "HTTP 503; retrying in 1 s (Retry-After)" in caplog.text


# --- OAI-PMH errors -------------------------------------------------------------------------


def oai_error(code: str, message: str) -> bytes:
    """An OAI-PMH error response as the protocol specifies it (section 3.6)."""
    return (
        b'<?xml version="1.0" encoding="UTF-8"?>\n'
        b'<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/">'
        b"<responseDate>2024-01-27T00:00:00Z</responseDate>"
        b'<request verb="ListRecords">http://export.arxiv.org/oai2</request>'
        b'<error code="' + code.encode() + b'">' + message.encode() + b"</error></OAI-PMH>"
    )


def test_no_records_match_is_a_successful_run_with_no_records(server):
    server.handler = lambda request: Reply(
        body=oai_error("noRecordsMatch", "The combination of the values results in an empty list.")
    )

    summary = harvest_run(kind="oai", params={"base_url": server.url, "from": "2030-01-01"})

    run = HarvestRun.objects.get()
    assert (summary.status, run.status, run.pages_done, run.records_done) == (
        "succeeded",
        "succeeded",
        1,
        0,
    )
    assert run.errors == [] and Paper.objects.count() == 0


def test_bad_resumption_token_restarts_the_list_and_ends_equal(server, caplog):
    expected = uninterrupted(server, oai_list())
    normal = oai_list()
    expired = {TOKENS[1]}

    def handler(request):
        token = request.query.get("resumptionToken")
        if token in expired:
            expired.discard(token)
            return Reply(body=oai_error("badResumptionToken", "The token has expired."))
        return normal(request)

    server.handler = handler

    harvest_run(kind="oai", params=oai_params(server))

    run = HarvestRun.objects.get()
    first = {"verb": "ListRecords", "metadataPrefix": "arXivRaw", "set": "cs", "from": "2008-01-25"}
    assert server.queries() == [
        first,
        {"verb": "ListRecords", "resumptionToken": TOKENS[0]},
        {"verb": "ListRecords", "resumptionToken": TOKENS[1]},
        # The same list again, from the run's from date: nothing of it can be skipped.
        first,
        {"verb": "ListRecords", "resumptionToken": TOKENS[0]},
        {"verb": "ListRecords", "resumptionToken": TOKENS[1]},
    ]
    # The pages seen before the restart came back unchanged: idempotent.
    assert (run.status, run.pages_done) == ("succeeded", 5)
    assert (run.records_created, run.records_unchanged) == (120, 80)
    assert content_state() == expected
    assert "badResumptionToken" in caplog.text


def test_id_does_not_exist_is_reported_for_that_id_only(server):
    files = {
        "oai:arXiv.org:1305.9999": TEST_DATA_DIR
        / "oai"
        / "inspire_next"
        / "integration_arxiv_1305.9999.xml",
        "oai:arXiv.org:1401.2122": RECORDED_DIR / "oai" / "arxiv-single.xml",
    }
    server.handler = lambda request: Reply(body=files[request.query["identifier"]].read_bytes())

    summary = harvest_run(
        kind="oai",
        params={
            "base_url": server.url,
            "metadata_prefix": "arXiv",
            "identifiers": ["1305.9999", "1401.2122"],
        },
    )

    run = HarvestRun.objects.get()
    # Everything was read, but one id asked for was not delivered: incomplete, not succeeded.
    assert (run.status, run.pages_done, run.records_created, run.records_rejected) == (
        "incomplete",
        2,
        1,
        0,
    )
    assert stored_ids() == {"1401.2122"}
    (message,) = run.errors
    assert "1305.9999: OAI-PMH idDoesNotExist" in message and run.error_count == 1
    assert [(gap["query"], gap["offset"]) for gap in run.gaps] == [("1305.9999", None)]
    assert [str(error) for error in summary.errors] == run.errors


def test_a_refused_request_fails_the_run_and_stores_nothing(server):
    server.handler = lambda request: Reply(
        body=oai_error("cannotDisseminateFormat", "'arXivRawish' is not supported")
    )

    with pytest.raises(SourceError, match="cannotDisseminateFormat"):
        harvest_run(kind="oai", params={"base_url": server.url, "metadata_prefix": "arXivRawish"})

    run = HarvestRun.objects.get()
    assert (run.status, run.pages_done, run.error_count) == ("failed", 0, 1)
    assert Paper.objects.count() == 0


# --- the arXiv API --------------------------------------------------------------------------


def atom_search(empty_first_at: str | None = None, always_empty_at: str | None = None):
    served_empty = []

    def handler(request):
        start = request.query["start"]
        path = ATOM_DIR / ATOM_SEARCH_PAGES[start]
        if start == always_empty_at or (start == empty_first_at and not served_empty):
            served_empty.append(start)
            return Reply(body=atom_without_entries(path))
        return Reply(body=path.read_bytes())

    return handler


def atom_params(server) -> dict:
    return {"base_url": server.url, "search_query": "testing", "max_results": 30, "page_size": 10}


def test_an_empty_api_page_mid_way_is_asked_again_and_the_run_completes(server):
    expected = uninterrupted(server, atom_search(), kind="atom", params=atom_params(server))
    server.handler = atom_search(empty_first_at="10")

    harvest_run(kind="atom", params=atom_params(server))

    run = HarvestRun.objects.get()
    assert [q["start"] for q in server.queries()] == ["0", "10", "10", "20"]
    assert (run.status, run.pages_done, run.error_count) == ("succeeded", 3, 0)
    assert content_state() == expected


def test_an_api_page_that_stays_empty_is_reported_and_the_rest_stored(server, settings):
    settings.ARXIV_API_EMPTY_PAGE_RETRIES = 1
    server.handler = atom_search(always_empty_at="10")

    harvest_run(kind="atom", params=atom_params(server))

    run = HarvestRun.objects.get()
    assert (run.status, run.pages_done, run.records_created) == ("incomplete", 3, 20)
    (message,) = run.errors
    assert "results 10 to 19: no entries at start=10" in message
    assert [(gap["query"], gap["offset"]) for gap in run.gaps] == [("search_query=testing", 10)]


def test_an_api_result_set_that_ends_early_leaves_the_run_incomplete_with_its_gap(server, settings):
    settings.ARXIV_API_EMPTY_PAGE_RETRIES = 1
    # arXiv's real empty feed (totalResults 0) where the first page promised 214881 results.
    empty_feed = (ATOM_DIR / "id_0000.0000_s0_m100_8b51d9633a68.xml").read_bytes()
    pages = atom_search()
    server.handler = lambda request: (
        Reply(body=empty_feed) if request.query["start"] == "10" else pages(request)
    )

    summary = harvest_run(kind="atom", params=atom_params(server))

    run = HarvestRun.objects.get()
    assert [q["start"] for q in server.queries()] == ["0", "10", "10"]
    assert (run.status, summary.status, run.records_created) == ("incomplete", "incomplete", 10)
    (gap,) = run.gaps
    assert (gap["query"], gap["offset"], gap["record"]) == (
        "search_query=testing",
        10,
        "results 10 to 29",
    )
    assert "promised 214881" in gap["message"]
    assert run.error_count == 1 and not run.is_resumable
    # Resuming a finished run changes nothing.
    assert harvest_run_resume(run=run).status == "incomplete"
    assert len(server.requests) == 3


def test_api_ids_asked_for_and_not_returned_are_reported(server):
    server.handler = lambda request: Reply(
        body=(ATOM_DIR / "id_1605.08386_s0_m100_199195aa31ad.xml").read_bytes()
    )

    summary = harvest_run(
        kind="atom", params={"base_url": server.url, "id_list": "1605.08386,1605.99999"}
    )

    run = HarvestRun.objects.get()
    assert stored_ids() == {"1605.08386"}
    assert (run.status, run.records_created, run.error_count) == ("incomplete", 1, 1)
    assert "1605.99999: asked for but not returned by the arXiv API" in run.errors[0]
    assert summary.as_dict()["error_count"] == 1


# --- one harvest of a kind at a time, taking over, superseding ------------------------------


def test_a_second_harvest_of_the_same_kind_is_refused_while_one_runs(server):
    cache.set("papers:harvest-lock:oai", "run #999", 60)

    with pytest.raises(HarvestLocked, match=r"another oai harvest is running \(run #999\)"):
        harvest_run(kind="oai", params=oai_params(server))

    assert HarvestRun.objects.count() == 0 and server.requests == []
    # Another kind is not held back.
    server.handler = atom_search()
    harvest_run(kind="atom", params=atom_params(server))
    assert HarvestRun.objects.get().status == "succeeded"


def test_with_the_cache_not_answering_a_harvest_says_so_and_writes_nothing(server, settings):
    import socket

    from papers.harvest import HarvestLockUnavailable

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings.CACHES = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{port}/0",
            "OPTIONS": {"IGNORE_EXCEPTIONS": True, "SOCKET_CONNECT_TIMEOUT": 1},
        }
    }

    with pytest.raises(HarvestLockUnavailable, match="the cache \\(Redis\\) is not answering"):
        harvest_run(kind="oai", params=oai_params(server))

    assert HarvestRun.objects.count() == 0 and server.requests == []


def test_the_lock_is_released_after_a_failure_too(server):
    server.handler = lambda request: Reply(status=404)

    with pytest.raises(HarvestError):
        harvest_run(kind="oai", params=oai_params(server))

    assert cache.get("papers:harvest-lock:oai") is None


def test_a_run_whose_worker_died_holding_the_lock_is_taken_over(server):
    server.handler = oai_list({2: [lambda body: Reply(status=404)]})
    with pytest.raises(HarvestError):
        harvest_run(kind="oai", params=oai_params(server))
    run = HarvestRun.objects.get()
    # As a killed worker leaves it: still running, still holding the lock.
    HarvestRun.objects.filter(pk=run.pk).update(status="running")
    cache.set("papers:harvest-lock:oai", f"run #{run.pk}", 60)

    with pytest.raises(HarvestLocked):
        harvest_run(kind="oai", params=oai_params(server))
    harvest_run_resume(run=run)

    run.refresh_from_db()
    assert (run.status, run.attempt, run.pages_done, run.records_created) == (
        "succeeded",
        2,
        3,
        120,
    )
    assert cache.get("papers:harvest-lock:oai") is None


@pytest.mark.django_db(transaction=True)
def test_an_older_execution_stops_when_a_newer_one_takes_the_run_over(server):
    """The old execution is still alive when a new one takes over (say, a task delivered
    again): the old one stops at its next page without storing it."""
    normal = oai_list()
    taken_over = threading.Event()

    def handler(request):
        if request.query.get("resumptionToken") == TOKENS[0] and not taken_over.is_set():
            # Meanwhile, elsewhere, a newer execution begins (committed, as it would be).
            HarvestRun.objects.update(attempt=F("attempt") + 1)
            connection.close()
            taken_over.set()
        return normal(request)

    server.handler = handler

    summary = harvest_run(kind="oai", params=oai_params(server))

    run = HarvestRun.objects.get()
    assert summary.status == "running" and summary.pages == 1
    assert (run.pages_done, run.attempt) == (1, 2)
    assert stored_ids() == page_ids(1)

    harvest_run_resume(run=run)

    run.refresh_from_db()
    assert (run.status, run.pages_done, run.records_created, run.records_unchanged) == (
        "succeeded",
        3,
        120,
        0,
    )


# --- time budget and tasks ------------------------------------------------------------------


def test_a_run_over_its_time_budget_pauses_and_continues(server):
    server.handler = oai_list()

    summary = harvest_run(kind="oai", params=oai_params(server), max_seconds=0)

    run = HarvestRun.objects.get()
    assert (summary.status, run.status, run.pages_done) == ("pending", "pending", 1)
    assert cache.get("papers:harvest-lock:oai") is None
    harvest_run_resume(run=run, max_seconds=0)
    harvest_run_resume(run=run, max_seconds=0)
    run.refresh_from_db()
    assert (run.status, run.pages_done, run.records_created) == ("succeeded", 3, 120)


def test_the_harvest_task_continues_a_paused_run_in_new_tasks(server, settings):
    settings.ARXIV_HARVEST_TASK_SECONDS = 0
    server.handler = oai_list()

    result = harvest.delay("oai", oai_params(server))

    # Eager here: each continuation ran as it was queued.
    assert result.get()["status"] == "pending"
    run = HarvestRun.objects.get()
    assert (run.status, run.pages_done, run.attempt, run.records_created) == (
        "succeeded",
        3,
        3,
        120,
    )
    assert run.task_id == result.id


def test_a_task_delivered_again_resumes_its_own_run(server):
    server.handler = oai_list({2: [lambda body: Reply(status=404)]})
    # A network failure: the task schedules a retry of itself (same task id).
    with pytest.raises(Retry) as retry:
        harvest.apply(args=["oai", oai_params(server)], task_id="task-1", throw=True)
    assert isinstance(retry.value.exc, HarvestError)
    run = HarvestRun.objects.get()
    assert (run.task_id, run.status, run.pages_done) == ("task-1", "failed", 1)

    summary = harvest.apply(args=["oai", oai_params(server)], task_id="task-1").get()

    assert HarvestRun.objects.count() == 1
    run.refresh_from_db()
    assert summary["run_id"] == run.pk
    assert (run.status, run.pages_done, run.records_created, run.attempt) == (
        "succeeded",
        3,
        120,
        2,
    )
    # Delivered once more after it succeeded: nothing to do.
    again = harvest.apply(args=["oai", oai_params(server)], task_id="task-1").get()
    assert (again["status"], again["pages"]) == ("succeeded", 0)


def test_the_harvest_task_returns_quietly_when_another_harvest_runs(server, caplog):
    cache.set("papers:harvest-lock:oai", "run #999", 60)

    assert harvest.delay("oai", oai_params(server)).get() is None

    assert "another oai harvest is running (run #999)" in caplog.text
    assert HarvestRun.objects.count() == 0


def test_the_resume_task_returns_quietly_for_a_run_that_is_gone():
    assert harvest_resume.delay(123456).get() is None


# --- incremental harvests and the schedule --------------------------------------------------


def test_an_incremental_harvest_looks_back_the_set_days_and_stores_its_window(server, settings):
    settings.ARXIV_OAI_SETS = ["cs", "stat"]
    settings.ARXIV_OAI_LOOKBACK_DAYS = 4
    HarvestRun.objects.create(
        kind="oai",
        params={"incremental": True, "sets": ["cs"], "from": "2026-05-01"},
        status="succeeded",
        started_at=dt.datetime(2026, 5, 10, 2, 30, tzinfo=dt.UTC),
    )
    server.handler = lambda request: Reply(body=oai_error("noRecordsMatch", "none"))

    harvest_run(kind="oai", params={"base_url": server.url, "incremental": True})

    run = HarvestRun.objects.latest("created_at")
    assert run.params == {
        "base_url": server.url,
        "incremental": True,
        "sets": ["cs", "stat"],
        "from": "2026-05-06",
    }
    assert [(q["set"], q["from"]) for q in server.queries()] == [
        ("cs", "2026-05-06"),
        ("stat", "2026-05-06"),
    ]
    assert (run.status, run.pages_done) == ("succeeded", 2)
    # The window it covered: from the look-back to today (no 'until' asks for up to now).
    assert (run.window_from, run.window_until) == (dt.date(2026, 5, 6), timezone.now().date())


def test_the_first_incremental_harvest_looks_back_from_today(server, settings):
    settings.ARXIV_OAI_LOOKBACK_DAYS = 6
    server.handler = lambda request: Reply(body=oai_error("noRecordsMatch", "none"))

    harvest_run(kind="oai", params={"base_url": server.url, "incremental": True})

    start = timezone.now().date() - dt.timedelta(days=6)
    assert server.queries()[0]["from"] == start.isoformat()
    assert HarvestRun.objects.get().params["from"] == start.isoformat()


def test_oai_sets_empty_harvests_the_whole_repository(server, settings):
    settings.ARXIV_OAI_SETS = []
    server.handler = lambda request: Reply(body=oai_error("noRecordsMatch", "none"))

    harvest_run(kind="oai", params={"base_url": server.url, "until": "2026-05-10"})

    (query,) = server.queries()
    assert "set" not in query and query["until"] == "2026-05-10"
    run = HarvestRun.objects.get()
    assert (run.params["sets"], run.window_from, run.window_until) == (
        [],
        None,
        dt.date(2026, 5, 10),
    )


def test_bad_parameters_are_refused_before_a_run_is_made():
    with pytest.raises(ValueError, match="unknown oai parameters: sett"):
        harvest_run(kind="oai", params={"sett": "cs"})
    with pytest.raises(ValueError, match="'sets' must be a list"):
        harvest_run(kind="oai", params={"sets": "cs"})
    assert HarvestRun.objects.count() == 0


def test_the_daily_harvest_is_scheduled_in_the_database_disabled():
    task = PeriodicTask.objects.get(name="Daily incremental arXiv OAI harvest")

    assert (task.task, task.enabled, task.queue) == ("papers.tasks.harvest", False, "harvest")
    assert (task.crontab.hour, task.crontab.minute) == ("2", "30")
    kwargs = json.loads(task.kwargs)
    assert kwargs == {"kind": "oai", "params": {"incremental": True}}
    # What beat sends is what the task takes.
    assert harvest.name == task.task and set(kwargs) <= {"kind", "params"}


# --- admin ----------------------------------------------------------------------------------


@pytest.fixture
def admin_client(client):
    user = get_user_model().objects.create_superuser("admin", "admin@example.org", "pw")
    client.force_login(user)
    return client


def test_runs_are_listed_with_progress_status_and_errors(admin_client):
    run = HarvestRun.objects.create(
        kind="oai",
        status="failed",
        pages_done=7,
        records_created=6500,
        records_updated=12,
        records_unchanged=3,
        records_rejected=2,
        errors=["http://oai/?verb=ListRecords: gave up after 6 attempts; last: HTTP 503"],
        error_count=1,
    )

    listing = admin_client.get(reverse("admin:papers_harvestrun_changelist"))
    detail = admin_client.get(reverse("admin:papers_harvestrun_change", args=[run.pk]))

    text = listing.content.decode()
    assert listing.status_code == 200
    assert f"Harvest run #{run.pk} (oai, failed)" in text
    assert "7 pages; 6500 created, 12 updated, 3 unchanged, 2 rejected" in text
    assert detail.status_code == 200
    assert "gave up after 6 attempts; last: HTTP 503" in detail.content.decode()
    # Read-only: a record of what a harvest did.
    assert 'name="_save"' not in detail.content.decode()
    assert admin_client.get(reverse("admin:papers_harvestrun_add")).status_code == 403


def test_the_admin_action_queues_the_resumption_of_failed_runs(
    admin_client, server, django_capture_on_commit_callbacks
):
    server.handler = oai_list({2: [lambda body: Reply(status=404)]})
    with pytest.raises(HarvestError):
        harvest_run(kind="oai", params=oai_params(server))
    failed = HarvestRun.objects.get()
    done = HarvestRun.objects.create(kind="atom", status="succeeded")

    # The task is queued once the request's transaction commits (and runs eagerly here).
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            reverse("admin:papers_harvestrun_changelist"),
            {"action": "resume_runs", "_selected_action": [failed.pk, done.pk]},
            follow=True,
        )

    messages = [str(message) for message in response.context["messages"]]
    assert f"Queued the resumption of run #{failed.pk}." in messages
    assert "1 selected run(s) had finished already; nothing to resume." in messages
    failed.refresh_from_db()
    assert (failed.status, failed.pages_done, failed.records_created) == ("succeeded", 3, 120)


def test_the_resume_action_needs_the_change_permission(client):
    from django.contrib.auth.models import Permission

    user = get_user_model().objects.create_user("viewer", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_harvestrun"))
    client.force_login(user)

    response = client.get(reverse("admin:papers_harvestrun_changelist"))

    assert response.status_code == 200
    assert "resume_runs" not in response.content.decode()


def test_the_schedule_is_editable_in_the_admin(admin_client):
    task = PeriodicTask.objects.get(name="Daily incremental arXiv OAI harvest")

    response = admin_client.get(
        reverse("admin:django_celery_beat_periodictask_change", args=[task.pk])
    )

    assert response.status_code == 200
    assert 'name="_save"' in response.content.decode()
