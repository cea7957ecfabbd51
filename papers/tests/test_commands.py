"""``manage.py load_categories`` and ``manage.py harvest`` (through the eager Celery task)."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from papers.models import Category, Paper
from papers.tasks import harvest

from .conftest import (
    RECORDED_DIR,
    RECORDED_DISTINCT_IDS,
    RECORDED_RECORDS,
    SNAPSHOT_HEAD,
    table_state,
)

pytestmark = pytest.mark.django_db


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
    settings.ARXIV_HTTP_RETRIES = 0

    for sync in ([], ["--sync"]):
        with pytest.raises(CommandError, match=f"127.0.0.1:{port}/oai\\?verb=ListRecords"):
            run("harvest", "--oai", "--set", "cs", *sync)
    assert Paper.objects.count() == 0


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
        "pages": 1,
        "created": 200,
        "updated": 0,
        "unchanged": 0,
        "deleted": 0,
        "error_count": 0,
        "errors": [],
    }
    assert json.loads(json.dumps(summary)) == summary
