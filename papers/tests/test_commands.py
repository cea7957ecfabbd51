"""``manage.py load_categories`` and ``manage.py harvest`` (through the eager Celery task, or
``--sync``): recorded files, snapshots, OAI-PMH from a real local server, resuming a run."""

from __future__ import annotations

import datetime as dt
import json
from io import StringIO

import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.utils import timezone

from papers.models import Category, HarvestRun, Paper
from papers.sources.transports import RequestLimiter, redis_client
from papers.tasks import harvest

from .conftest import (
    ARXIV_RAW_PAGE,
    ATOM_DIR,
    RECORDED_DIR,
    RECORDED_DISTINCT_IDS,
    RECORDED_RECORDS,
    SNAPSHOT_HEAD,
    TEST_DATA_DIR,
    table_state,
)
from .httpserver import LocalHttpServer, Reply, oai_pages, oai_token, page

pytestmark = pytest.mark.django_db

PAGES = oai_pages(ARXIV_RAW_PAGE, [30, 30])
NO_RECORDS = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n'
    b'<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/">'
    b"<responseDate>2024-01-27T00:00:00Z</responseDate>"
    b'<request verb="ListRecords">http://export.arxiv.org/oai2</request>'
    b'<error code="noRecordsMatch">The combination of the values results in an empty list.'
    b"</error></OAI-PMH>"
)


@pytest.fixture(autouse=True)
def harvest_settings(settings):
    settings.ARXIV_REQUEST_INTERVAL_MS = 5
    settings.ARXIV_HTTP_RETRIES = 0
    settings.ARXIV_OAI_SETS = ["cs"]
    client = redis_client(settings.REDIS_URL)
    client.delete(RequestLimiter.KEY)
    cache.delete("papers:harvest-lock:oai")
    yield
    client.delete(RequestLimiter.KEY)
    cache.delete("papers:harvest-lock:oai")


@pytest.fixture
def server(settings):
    """A local OAI-PMH endpoint, and the OAI base URL pointing at it."""
    with LocalHttpServer() as server:
        settings.ARXIV_OAI_BASE_URL = server.url
        yield server


def run(*args):
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_load_categories_prints_how_many():
    out, _ = run("load_categories")

    count = Category.objects.count()
    assert count > 150
    assert f"{count} categories loaded." in out
    run("load_categories")
    assert Category.objects.count() == count


def test_harvest_recorded_through_the_task(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        out, err = run("harvest", "--recorded")

    assert f"{RECORDED_DISTINCT_IDS} created" in out
    assert f"{RECORDED_RECORDS - RECORDED_DISTINCT_IDS} unchanged" in out
    assert "0 errors" in out and err == ""
    stored = HarvestRun.objects.get()
    assert (
        f"Harvest run #{stored.pk} succeeded: 26 pages, {RECORDED_RECORDS} records in all." in out
    )
    assert Paper.objects.count() == RECORDED_DISTINCT_IDS
    before = table_state()

    out, _ = run("harvest", "--recorded", str(RECORDED_DIR), "--sync")

    assert f"0 created, 0 updated, {RECORDED_RECORDS} unchanged" in out
    assert table_state() == before


def test_harvest_snapshot_with_bad_lines_exits_non_zero_naming_them(tmp_path):
    lines = SNAPSHOT_HEAD.read_bytes().splitlines()[:6]
    lines[1] = b"{not json"
    record = json.loads(lines[4])
    record["categories"] = "hep-th not-a.category"
    lines[4] = json.dumps(record).encode()
    snapshot = tmp_path / "head.jsonl"
    snapshot.write_bytes(b"\n".join(lines) + b"\n")
    err = StringIO()

    with pytest.raises(CommandError, match="2 records or pages were rejected"):
        call_command("harvest", "--snapshot", str(snapshot), stdout=StringIO(), stderr=err)

    messages = err.getvalue().splitlines()
    assert messages[0].startswith(f"{snapshot}, line 2:")
    assert messages[1].startswith(f"{snapshot}, {record['id']}:")
    assert "not-a.category" in messages[1]
    assert Paper.objects.count() == 4


def test_harvest_bad_recorded_directory_is_a_command_error(tmp_path):
    with pytest.raises(CommandError, match="no manifest"):
        run("harvest", "--recorded", str(tmp_path))


def test_harvest_network_failure_is_a_loud_command_error(settings):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings.ARXIV_OAI_BASE_URL = f"http://127.0.0.1:{port}/oai"

    for sync in ([], ["--sync"]):
        with pytest.raises(
            CommandError, match=f"127.0.0.1:{port}/oai\\?verb=ListRecords"
        ) as raised:
            run("harvest", "--oai", "--set", "cs", *sync)
        failed = HarvestRun.objects.latest("created_at")
        assert failed.status == "failed"
        assert f"resume it with `manage.py harvest --resume {failed.pk}`" in str(raised.value)
    assert Paper.objects.count() == 0


def test_harvest_resume_continues_a_failed_run_from_its_checkpoint(server):
    down = {"page 2": True}

    def handler(request):
        if request.query.get("resumptionToken") == oai_token(PAGES[0]):
            if down["page 2"]:
                return Reply(status=404)
            return Reply(body=PAGES[1])
        return Reply(body=PAGES[0])

    server.handler = handler
    with pytest.raises(CommandError, match="unexpected HTTP status 404"):
        run("harvest", "--oai", "--set", "cs", "--from", "2008-01-25", "--sync")
    failed = HarvestRun.objects.get()
    assert (failed.status, failed.pages_done, Paper.objects.count()) == ("failed", 1, 30)
    down["page 2"] = False
    server.requests.clear()

    out, err = run("harvest", "--resume", str(failed.pk))

    assert f"Harvest run #{failed.pk} succeeded: 2 pages, 60 records in all." in out
    assert server.queries() == [{"verb": "ListRecords", "resumptionToken": oai_token(PAGES[0])}]
    assert Paper.objects.count() == 60 and err == ""
    out, _ = run("harvest", "--resume", str(failed.pk), "--sync")
    assert f"Harvest run #{failed.pk} has finished (succeeded); nothing to resume." in out
    with pytest.raises(CommandError, match="there is no harvest run #999999"):
        run("harvest", "--resume", "999999")


def test_harvest_oai_takes_several_sets_and_incremental(server):
    server.handler = lambda request: Reply(body=NO_RECORDS)

    run("harvest", "--oai", "--set", "cs", "--set", "physics:hep-th", "--from", "2026-01-05")
    out, _ = run("harvest", "--oai", "--incremental", "--sync")

    first, incremental = HarvestRun.objects.order_by("created_at")
    assert first.params["sets"] == ["cs", "physics:hep-th"]
    # No incremental harvest before it: the look-back (ARXIV_OAI_LOOKBACK_DAYS, 7) from today,
    # on the configured sets.
    today = timezone.now().date()
    start = (today - dt.timedelta(days=7)).isoformat()
    assert incremental.params == {
        "metadata_prefix": "arXivRaw",
        "incremental": True,
        "sets": ["cs"],
        "from": start,
    }
    assert [(q.get("set"), q.get("from")) for q in server.queries()] == [
        ("cs", "2026-01-05"),
        ("physics:hep-th", "2026-01-05"),
        ("cs", start),
    ]
    assert f"Harvest run #{incremental.pk} succeeded: 1 pages, 0 records in all." in out
    assert f"OAI datestamps {start} to {today}, sets: cs." in out


def test_harvest_refuses_while_another_harvest_of_the_kind_runs(server):
    cache.set("papers:harvest-lock:oai", "run #999", 60)

    for sync in ([], ["--sync"]):
        with pytest.raises(CommandError, match="another .*harvest .*running"):
            run("harvest", "--oai", *sync)
    assert HarvestRun.objects.count() == 0 and server.requests == []


def test_harvest_oai_identifiers_asks_for_bare_ids_in_any_spelling(server):
    """``--identifiers 1305.0014v1`` used to ask for ``oai:arXiv.org:1305.0014v1`` and
    ``arXiv:1305.0014`` for ``oai:arXiv.org:arXiv:1305.0014`` (idDoesNotExist, both)."""
    files = {
        "oai:arXiv.org:1305.0014": RECORDED_DIR / "oai" / "integration_arxiv_1305.0014.xml",
        "oai:arXiv.org:physics/0112006": RECORDED_DIR / "oai" / "unit_workflows_oai_arxiv.xml",
    }
    server.handler = lambda request: page(files[request.query["identifier"]])

    out, err = run(
        "harvest",
        "--oai",
        "--metadata-prefix",
        "arXiv",
        "--identifiers",
        "1305.0014v1, arXiv:1305.0014,https://arxiv.org/abs/physics/0112006v1/",
    )

    assert [q["identifier"] for q in server.queries()] == list(files)
    assert {q["verb"] for q in server.queries()} == {"GetRecord"}
    run_ = HarvestRun.objects.get()
    assert (run_.status, run_.error_count) == ("succeeded", 0), err
    # The stored run says what was asked for, as arXiv knows it.
    assert run_.params["identifiers"] == ["1305.0014", "physics/0112006"]
    assert set(Paper.objects.values_list("arxiv_id", flat=True)) == {
        "1305.0014",
        "physics/0112006",
    }
    assert "2 created" in out


@pytest.mark.parametrize(
    ("typed", "sent", "recorded", "stored"),
    [
        (
            "https://arxiv.org/abs/1111.2011v2/,arXiv:1111.2011v2",
            "1111.2011v2",
            TEST_DATA_DIR / "atom" / "arxiv_py_2016" / "id_list_1111.2011v2.xml",
            "1111.2011",
        ),
        (
            "https://arxiv.org/pdf/quant-ph/0201082v1.pdf",
            "quant-ph/0201082v1",
            ATOM_DIR / "id_quant-ph_0201082v1_s0_m100_86989fe779ef.xml",
            "quant-ph/0201082",
        ),
        (
            "arXiv:quant-ph/0201082v1 [quant-ph] 16 Jan 2002",
            "quant-ph/0201082v1",
            ATOM_DIR / "id_quant-ph_0201082v1_s0_m100_86989fe779ef.xml",
            "quant-ph/0201082",
        ),
    ],
)
def test_harvest_atom_id_list_sends_ids_with_their_version(
    server, settings, typed, sent, recorded, stored
):
    """``--id-list https://arxiv.org/abs/2104.12255v1`` used to be sent as the URL (HTTP 400)."""
    settings.ARXIV_API_BASE_URL = server.url
    server.handler = lambda request: (
        page(recorded) if request.query["id_list"] == sent else Reply(status=400)
    )

    run("harvest", "--atom", "--id-list", typed, "--sync")

    assert [q["id_list"] for q in server.queries()] == [sent]
    assert server.queries()[0]["max_results"] == "1"
    assert HarvestRun.objects.get().params["id_list"] == [sent]
    assert list(Paper.objects.values_list("arxiv_id", flat=True)) == [stored]


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--oai", "--identifiers", "1305.0014,hepth/9901001"], "--identifiers: .*'hepth/9901001'"),
        (["--oai", "--identifiers", "oai:arXiv.org:1305.0014v0"], "versions start at v1"),
        (["--atom", "--id-list", "https://arxiv.org/list/cs.CL"], "--id-list: .*list/cs.CL'"),
        (["--atom", "--id-list", "10.1103/PhysRevD.93.016005"], "'10.1103/PhysRevD.93.016005'"),
    ],
)
def test_harvest_refuses_text_that_is_no_arxiv_id_naming_it(server, settings, args, named):
    settings.ARXIV_API_BASE_URL = server.url

    for sync in ([], ["--sync"]):
        with pytest.raises(CommandError, match=named):
            run("harvest", *args, *sync)

    assert HarvestRun.objects.count() == 0 and server.requests == []


@pytest.mark.parametrize(
    "args",
    [
        ["--oai", "--identifiers", ""],
        ["--oai", "--identifiers", " , ,"],
        ["--atom", "--id-list", ","],
    ],
    ids=["oai-empty", "oai-commas", "atom-commas"],
)
def test_harvest_refuses_an_id_option_that_names_no_id(server, settings, args):
    """An empty ``--identifiers`` is a mistake, not a request for the whole repository: it
    used to be dropped, so the command started a full ListRecords harvest of every set."""
    settings.ARXIV_OAI_BASE_URL = settings.ARXIV_API_BASE_URL = server.url

    for sync in ([], ["--sync"]):
        with pytest.raises(CommandError, match=f"{args[1]}: no arXiv identifier given"):
            run("harvest", *args, *sync)

    assert HarvestRun.objects.count() == 0 and server.requests == []


def test_harvest_atom_needs_ids_or_query():
    with pytest.raises(CommandError, match="--id-list or --query"):
        run("harvest", "--atom")


def test_harvest_needs_exactly_one_mode():
    with pytest.raises(CommandError):
        run("harvest", "--oai", "--snapshot", "x.jsonl")
    with pytest.raises(CommandError):
        run("harvest")


def test_harvest_task_takes_plain_json_and_returns_a_summary():
    # The task as the command and beat call it, run eagerly (the embedded default).
    result = harvest.delay("snapshot", {"path": str(SNAPSHOT_HEAD)})

    summary = result.get()
    assert summary == {
        "kind": "snapshot",
        "run_id": HarvestRun.objects.get().pk,
        "status": "succeeded",
        "pages": 1,
        "created": 200,
        "updated": 0,
        "unchanged": 0,
        "deleted": 0,
        "marked_deleted": 0,
        "duplicates": 0,
        "error_count": 0,
        "errors": [],
        "gaps": [],
    }
    assert json.loads(json.dumps(summary)) == summary


def test_harvest_truncated_gzip_snapshot_stores_what_was_read_and_fails_the_run(tmp_path):
    import gzip

    whole = gzip.compress(SNAPSHOT_HEAD.read_bytes())
    snapshot = tmp_path / "head.jsonl.gz"
    snapshot.write_bytes(whole[: len(whole) * 2 // 3])

    with pytest.raises(CommandError, match="file ends early or is corrupt after record"):
        call_command("harvest", "--snapshot", str(snapshot), stdout=StringIO(), stderr=StringIO())

    run = HarvestRun.objects.get()
    assert run.status == HarvestRun.Status.FAILED
    assert any(str(snapshot) in error for error in run.errors)
    stored = Paper.objects.count()
    assert 64 < stored < 200

    # The whole file put back: resuming re-reads the partial chunk and finishes.
    snapshot.write_bytes(whole)
    call_command("harvest", "--resume", str(run.pk), stdout=StringIO(), stderr=StringIO())
    run.refresh_from_db()
    assert run.status == HarvestRun.Status.SUCCEEDED
    assert Paper.objects.count() == len(SNAPSHOT_HEAD.read_bytes().splitlines())


def test_harvest_atom_that_arxiv_leaves_short_exits_non_zero_naming_the_gap(settings):
    settings.ARXIV_API_EMPTY_PAGE_RETRIES = 1
    atom_dir = RECORDED_DIR / "atom"
    first = (atom_dir / "q_testing_s0_m10_bc5a6c384fe9.xml").read_bytes()
    # arXiv's real empty feed: totalResults 0 where the first page promised 214881.
    empty = (atom_dir / "id_0000.0000_s0_m100_8b51d9633a68.xml").read_bytes()
    with LocalHttpServer(
        lambda request: Reply(body=first if request.query["start"] == "0" else empty),
        path="/api/query",
    ) as api:
        settings.ARXIV_API_BASE_URL = api.url
        out = StringIO()
        err = StringIO()
        with pytest.raises(CommandError, match=r"harvest run #\d+ is incomplete"):
            call_command(
                "harvest",
                "--atom",
                "--query",
                "testing",
                "--max-results",
                "30",
                "--sync",
                stdout=out,
                stderr=err,
            )

    run = HarvestRun.objects.get()
    assert run.status == "incomplete" and run.records_created == 10
    assert [q["start"] for q in api.queries()] == ["0", "10", "10"]
    assert f"Harvest run #{run.pk} incomplete" in out.getvalue()
    assert "Gap: search_query=testing, offset 10: result set ended early" in err.getvalue()


def test_harvest_recorded_replays_a_503_with_retry_after_then_the_page(tmp_path, settings, caplog):
    settings.ARXIV_HTTP_RETRIES = 2
    page = RECORDED_DIR / "atom" / "q_testing_s0_m10_bc5a6c384fe9.xml"
    (tmp_path / "page.xml").write_bytes(page.read_bytes())
    params = {
        "search_query": "testing",
        "sortBy": "relevance",
        "sortOrder": "descending",
        "start": "0",
        "max_results": "10",
    }
    responses = [{"status": 503, "headers": {"Retry-After": "1"}}, {"file": "page.xml"}]
    manifest = {"entries": [{"kind": "atom", "params": params, "responses": responses}]}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))

    out, _ = run("harvest", "--recorded", str(tmp_path), "--sync")

    assert "recorded: 1 pages, 10 created" in out
    assert Paper.objects.count() == 10
    assert "HTTP 503; retrying in 1 s (Retry-After), attempt 2 of 3" in caplog.text
