"""The site-wide JSON lines export (``/api/v1/papers.jsonl``): every paper once, in stored
order, streamed in keyset batches, filtered like ``/papers/``, resumable with ``after``."""

import json

import pytest
from django.db import connection
from django.http import StreamingHttpResponse
from django.test.utils import CaptureQueriesContext

from api import exports
from api.selectors import paper_rows
from api.serializers.papers import PaperSerializer
from papers.models import Paper
from papers.tests.factories import CategoryFactory, PaperFactory

from .conftest import assert_error

pytestmark = pytest.mark.django_db

URL = "/api/v1/papers.jsonl"


def lines_of(response) -> list[dict]:
    assert response.status_code == 200, response.content
    assert isinstance(response, StreamingHttpResponse)
    assert response["Content-Type"] == "application/jsonl; charset=utf-8"
    text = b"".join(response.streaming_content).decode()
    assert text.endswith("\n") or text == ""
    return [json.loads(line) for line in text.splitlines()]


def stored_ids() -> list[str]:
    return [p.arxiv_id for p in Paper.objects.order_by("pk")]


def test_every_paper_once_in_stored_order_as_the_api_shows_it(api_client, world):
    papers = lines_of(api_client.get(URL))
    assert [p["id"] for p in papers] == stored_ids()
    # Withdrawn and deleted papers come too (a mirror must learn of them), each line as the
    # paper's own resource shows it, topics included.
    first = papers[0]
    assert first == api_client.get(f"/api/v1/papers/{first['id']}/").json()
    assert any(p["topics"] for p in papers)


def test_after_resumes_with_the_next_stored_paper(api_client, world):
    everything = [p["id"] for p in lines_of(api_client.get(URL))]
    middle = everything[len(everything) // 2]
    rest = [p["id"] for p in lines_of(api_client.get(URL, {"after": middle}))]
    assert rest == everything[everything.index(middle) + 1 :]
    # Any spelling of the id, a version included.
    assert [p["id"] for p in lines_of(api_client.get(URL, {"after": f"{middle}v1"}))] == rest
    # After the last line: only what was stored since (an incremental update).
    assert lines_of(api_client.get(URL, {"after": everything[-1]})) == []
    new = PaperFactory(
        arxiv_id="2610.00077", primary_category=Paper.objects.first().primary_category
    )
    since = lines_of(api_client.get(URL, {"after": everything[-1]}))
    assert [p["id"] for p in since] == [new.arxiv_id]


def test_filters_are_those_of_the_paper_list(api_client, world):
    listed = api_client.get("/api/v1/papers/", {"category": "cs.CL", "page_size": 100}).json()
    exported = lines_of(api_client.get(URL, {"category": "cs.CL"}))
    assert sorted(p["id"] for p in exported) == sorted(p["id"] for p in listed["results"])
    assert len(exported) < len(stored_ids())


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ({"after": "2609.99999"}, "after"),
        ({"after": "not an id"}, "after"),
        ({"ordering": "submitted"}, "ordering"),
        ({"category": "nope"}, "category"),
        ({"cursor": "abc"}, "cursor"),
        ({"page_size": "5"}, "page_size"),
    ],
)
def test_bad_parameters_are_a_json_400_naming_them_before_streaming(
    api_client, world, query, param
):
    assert_error(api_client.get(URL, query), 400, param=param)


def test_batches_are_keyset_queries_that_do_not_grow_per_paper(rf):
    context = {"request": rf.get(URL)}
    category = CategoryFactory(code="cs.CL")
    made = [PaperFactory(primary_category=category) for _ in range(7)]
    with CaptureQueriesContext(connection) as queries:
        lines = list(
            exports.bulk_jsonl_lines(
                paper_rows(), after=None, serializer_class=PaperSerializer, context=context, batch=3
            )
        )
    assert [json.loads(line)["id"] for line in lines] == [p.arxiv_id for p in made]
    # 7 papers in batches of 3: three full-or-short batches (3, 3, 1), no query per paper
    # (PostgreSQL: one query per batch).
    assert len(queries) == 3
    assert all('"id" >' in q["sql"] for q in queries.captured_queries[1:])
    resumed = exports.bulk_jsonl_lines(
        paper_rows(), after=made[4].pk, serializer_class=PaperSerializer, context=context, batch=3
    )
    assert [json.loads(line)["id"] for line in resumed] == [p.arxiv_id for p in made[5:]]


def test_an_unconsumed_stream_runs_no_query(api_client, world):
    with CaptureQueriesContext(connection) as queries:
        response = api_client.get(URL)
    before = len(queries)
    iterator = iter(response.streaming_content)
    with CaptureQueriesContext(connection) as queries:
        next(iterator)
    assert len(queries) == 1
    assert before < 10
