"""The PostgreSQL backend's health check (topicsite/postgresql/base.py) against the real
server: a quiet kept connection passes without a query, one the server ended fails."""

from __future__ import annotations

import time

import numpy as np
import psycopg
import pytest
from django.db import connection, connections
from django.db.backends.postgresql.base import DatabaseWrapper as DjangoDatabaseWrapper

from topicsite.postgresql.base import DatabaseWrapper, json_loads

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's backend"),
]


@pytest.fixture
def kept():
    """A connection of its own to the test database, as a web process keeps one."""
    wrapper = connections["default"].copy()
    wrapper.ensure_connection()
    yield wrapper
    wrapper.close()


def test_the_settings_use_this_backend():
    assert isinstance(connections["default"], DatabaseWrapper)


def test_the_site_plans_with_its_random_page_cost(kept, settings):
    """Every connection the site opens (a kept one too) has the settings' random_page_cost
    (DATABASE_RANDOM_PAGE_COST, 1.1 by default), not the server's 4."""
    assert settings.DATABASE_PLANNER_OPTIONS == "-c random_page_cost=1.1"
    for wrapper in (connection, kept):
        with wrapper.cursor() as cursor:
            cursor.execute("SHOW random_page_cost")
            assert cursor.fetchone()[0] == "1.1"


def test_a_quiet_connection_passes_without_a_query(kept, monkeypatch):
    asked = []
    monkeypatch.setattr(DjangoDatabaseWrapper, "is_usable", lambda self: asked.append(1))
    assert kept.is_usable() is True
    assert asked == []
    with kept.cursor() as cursor:  # and it works
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)


def test_a_connection_the_server_ended_fails_and_is_replaced(kept):
    pid = kept.connection.info.backend_pid
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    with psycopg.connect(**params, autocommit=True) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone() == (True,)
    deadline = time.monotonic() + 5
    while kept.is_usable() and time.monotonic() < deadline:
        time.sleep(0.02)  # the server's last words reach the socket
    assert kept.is_usable() is False
    # What Django does at the start of a request with CONN_HEALTH_CHECKS: close, reconnect.
    kept.health_check_enabled, kept.health_check_done = True, False
    kept.close_if_health_check_failed()
    assert kept.connection is None
    with kept.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != pid


def test_a_closed_connection_fails_without_touching_the_socket(kept):
    kept.connection.close()
    assert kept.is_usable() is False


def test_a_connection_left_in_a_failed_transaction_is_dropped(kept):
    """Found by a breaker: a request that left its connection in a failed transaction (a raw
    ``BEGIN`` outside ``atomic()``) made the next request fail, where Django's ``SELECT 1``
    check drops it: inside a transaction the server decides."""
    raw = kept.connection
    raw.execute("BEGIN")
    with pytest.raises(psycopg.errors.DivisionByZero):
        raw.execute("SELECT 1/0")
    # The end of that request (errors occurred), then the start of the next one.
    kept.errors_occurred, kept.health_check_enabled, kept.close_at = True, True, None
    kept.close_if_unusable_or_obsolete()
    kept.health_check_done = False
    kept.close_if_health_check_failed()
    with kept.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)


def test_a_binary_cursor_gives_bytes_and_is_logged_and_wrapped_as_any_cursor():
    """``binary_cursor``: a ``bytea`` comes back as its bytes (binary format), the query is in
    ``connection.queries`` when they are captured and goes through execute wrappers, and
    parameters (an array literal among them) bind as with ``cursor()``."""
    from django.test.utils import CaptureQueriesContext

    from papers.embeddings.vectors import load_vectors, vector_to_bytes
    from papers.models import PaperEmbedding
    from papers.tests.factories import PaperFactory

    paper = PaperFactory()
    vector = np.arange(4, dtype=np.float32) / 10
    PaperEmbedding.objects.create(
        paper=paper, model="m", dimension=4, text_sha256="0" * 64, vector=vector_to_bytes(vector)
    )
    seen = []

    def wrapper(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with CaptureQueriesContext(connection) as captured, connection.execute_wrapper(wrapper):
        with connection.binary_cursor() as cursor:
            cursor.execute(
                "SELECT vector, %s::text FROM papers_paperembedding WHERE paper_id = ANY(%s)",
                ["x", f"{{{paper.pk}}}"],
            )
            ((data, text),) = cursor.fetchall()
        loaded = load_vectors([paper.pk], model="m")
    assert isinstance(data, bytes) and data == vector_to_bytes(vector) and text == "x"
    assert len(captured) == 2 and len(seen) == 2
    np.testing.assert_array_equal(loaded[paper.pk], vector)
    assert loaded[paper.pk].flags.writeable


def test_json_values_are_read_by_orjson_and_jsonb_is_left_to_django():
    from topics.models import ClassifierModel

    big = 2**70  # beyond orjson's 64 bits: json.loads reads it
    with connection.cursor() as cursor:
        cursor.execute(
            'SELECT \'{"a": [1, "é", null, 1.5]}\'::json, %s::json, \'{"b": 2}\'::jsonb',
            [f'{{"big": {big}, "lone": "\\ud800"}}'],
        )
        plain, refused, binary = cursor.fetchone()
    json_oid = psycopg.adapters.types["json"].oid
    for format in (psycopg.pq.Format.TEXT, psycopg.pq.Format.BINARY):
        loader = connection.connection.adapters.get_loader(json_oid, format)
        assert loader._loads is json_loads
    assert plain == {"a": [1, "é", None, 1.5]}
    assert refused == {"big": big, "lone": "\ud800"}
    # Beyond 64 bits orjson gives a float: such numbers, and those alone, read exactly.
    for number in (2**64, -(2**63) - 1, 10**30, 2**63 - 1, -(2**63)):
        assert json_loads(f'{{"n": [{number}]}}'.encode()) == {"n": [number]}
        assert type(json_loads(f"[{number}]".encode())[0]) is int
    assert json_loads(b'["\\ud800"]') == ["\ud800"]  # orjson refuses it
    assert json_loads(b'{"x": 1.5, "s": "1234567890123456789012"}') == {
        "x": 1.5,
        "s": "1234567890123456789012",
    }
    assert binary == '{"b": 2}'  # Django's text loader: JSONField decodes it
    with connection.binary_cursor() as cursor:
        cursor.execute("SELECT json_build_array(1, 'x'), '[2]'::json")
        assert cursor.fetchone() == ([1, "x"], [2])
    # A JSONField (jsonb) still round-trips through Django.
    model = ClassifierModel.objects.create(
        version=1, artifact=b"", metrics={"f1": [1, 2], "n": big}
    )
    assert ClassifierModel.objects.get(pk=model.pk).metrics == {"f1": [1, 2], "n": big}


def _prepared_here(wrapper) -> set[str]:
    with wrapper.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return {statement for (statement,) in cursor.fetchall()}


def test_a_prepared_cursor_prepares_its_statements_once_logs_them_and_can_be_turned_off(kept):
    """``prepared_cursor``: the statement is prepared on this connection at its first
    execution and reused (PostgreSQL lists it once, with its ``$1`` placeholder), answers as
    ``cursor()`` does, and is in the queries log with its values; other cursors prepare
    nothing. With ``PREPARED_STATEMENTS`` false a new connection prepares nothing."""
    from django.test.utils import CaptureQueriesContext

    sql = "SELECT %s::int + 1, %s::text"
    with CaptureQueriesContext(kept) as captured:
        for value in (1, 2, 3):
            with kept.prepared_cursor() as cursor:
                cursor.execute(sql, [value, "x"])
                assert cursor.fetchone() == (value + 1, "x")
    prepared = _prepared_here(kept)
    assert [s for s in prepared if "::int + 1" in s] == ["SELECT $1::int + 1, $2::text"]
    assert [query["sql"] for query in captured] == [
        f"SELECT {value}::int + 1, 'x'::text" for value in (1, 2, 3)
    ]
    with kept.cursor() as cursor:
        cursor.execute("SELECT %s::int * 7", [6])
        assert cursor.fetchone() == (42,)
    assert not [s for s in _prepared_here(kept) if "* 7" in s]

    off = connections["default"].copy()
    off.settings_dict["PREPARED_STATEMENTS"] = False
    try:
        with off.prepared_cursor() as cursor:
            cursor.execute(sql, [1, "y"])
            assert cursor.fetchone() == (2, "y")
        assert not [s for s in _prepared_here(off) if "::int + 1" in s]
    finally:
        off.close()


def test_a_user_read_by_its_key_is_the_orms_user():
    """``topicsite.readers.user_by_pk``: one written-out statement giving every field as the
    ORM's ``get`` gives it; ``None`` for a key no user has."""
    from django.contrib.auth import get_user_model
    from django.test.utils import CaptureQueriesContext

    from topicsite.readers import user_by_pk

    model = get_user_model()
    user = model.objects.create_user("olga", "olga@example.org", "a long pass phrase")
    user.last_login = user.date_joined
    user.save()
    expected = model.objects.get(pk=user.pk)
    with CaptureQueriesContext(connection) as captured:
        read = user_by_pk(user.pk)
    assert len(captured) == 1
    assert read is not None and read._state.adding is False and read._state.db == "default"
    for field in model._meta.concrete_fields:
        assert getattr(read, field.attname) == getattr(expected, field.attname), field.name
    assert read.get_session_auth_hash() == expected.get_session_auth_hash()
    assert user_by_pk(user.pk + 1000) is None


def test_statements_read_together_are_one_statement_with_each_ones_rows_in_order():
    """``topicsite.readers.read_together``: several statements go to PostgreSQL as one (one
    query in the log), each statement's rows come back in its order (none for one that finds
    nothing), as tuples of JSON values (a timestamp as ISO text); a failing statement raises
    Django's error and leaves the connection usable."""
    from django.db import DatabaseError, transaction
    from django.test.utils import CaptureQueriesContext

    from topicsite.readers import read_together

    statements = [
        ("SELECT n, n * 2 AS twice FROM generate_series(1, %s) AS n ORDER BY n DESC", [3]),
        ("SELECT 'x'::text AS letter WHERE %s", [False]),
        (
            "SELECT %s::text AS word, true AS yes, "
            "'2026-12-07 05:00:00+00'::timestamptz AS at, NULL::int AS nothing",
            ["hello"],
        ),
    ]
    with CaptureQueriesContext(connection) as captured:
        numbers, none, mixed = read_together("default", statements)
    assert len(captured) == 1
    assert numbers == [(3, 6), (2, 4), (1, 2)]
    assert none == []
    assert mixed == [("hello", True, "2026-12-07T05:00:00+00:00", None)]
    assert read_together("default", []) == []

    with pytest.raises(DatabaseError), transaction.atomic():  # the test's transaction lives on
        read_together("default", [("SELECT 1 AS one", []), ("SELECT 1 / %s AS boom", [0])])
    assert read_together("default", [("SELECT 2 AS two", [])]) == [[(2,)]]
