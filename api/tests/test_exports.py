"""Streamed exports: BibTeX (paper, topic), CSV and JSON lines (topic)."""

import csv
import io
import json

import pytest
from django.http import StreamingHttpResponse

from api.exports import csv_cell

from .conftest import assert_error

pytestmark = pytest.mark.django_db


def body(response) -> str:
    assert response.status_code == 200, response
    assert isinstance(response, StreamingHttpResponse)
    return b"".join(response.streaming_content).decode()


@pytest.mark.parametrize("text", ["=1+2", "+1", "-1", "@SUM(A1)", "\tx", "\rx"])
def test_csv_cells_that_look_like_formulas_are_neutralised(text):
    assert csv_cell(text) == "'" + text


def test_paper_bibtex(api_client, world):
    response = api_client.get("/api/v1/papers/2609.00001v1/bibtex/", HTTP_ACCEPT="text/html")
    assert response["Content-Type"] == "application/x-bibtex; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="2609.00001.bib"'
    text = body(response)
    assert text.startswith("@misc{arXiv_2609.00001,\n")
    # The title's TeX is kept ({RL}, $x_1$, ~); only what would break LaTeX is escaped
    # (papers.citations.bibtex_text).
    assert r"  title = {{Agents \& tools: 100\% of {RL} with $x_1$ \#1 ~ \^{}}}," in text
    assert "  author = {Able, Alice and Baker, Bob}," in text
    assert "  month = sep," in text
    assert "  eprint = {2609.00001}," in text
    assert "  archivePrefix = {arXiv}," in text
    assert "  primaryClass = {cs.CL}," in text
    assert "  doi = {10.1234/agents.2026}," in text


def test_old_style_paper_bibtex_key_has_no_slash(api_client, world):
    text = body(api_client.get("/api/v1/papers/hep-th/0601001/bibtex/"))
    assert text.startswith("@misc{arXiv_hep-th_0601001,")
    assert "eprint = {hep-th/0601001}" in text


def test_unknown_paper_bibtex_is_a_json_404(api_client, world):
    assert_error(api_client.get("/api/v1/papers/2609.99999/bibtex/"), 404)


def test_topic_bibtex_has_every_paper_of_the_subtree(api_client, world):
    response = api_client.get("/api/v1/topics/llm/papers.bib")
    assert response["Content-Disposition"] == 'attachment; filename="llm.bib"'
    text = body(response)
    assert text.count("@misc{") == 3
    for arxiv_id in ("2609.00001", "2609.00002", "2608.00003"):
        assert f"eprint = {{{arxiv_id}}}" in text


def test_topic_csv_is_neutralised_and_filterable(api_client, world):
    response = api_client.get("/api/v1/topics/llm/papers.csv?ordering=submitted")
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="llm.csv"'
    rows = list(csv.DictReader(io.StringIO(body(response))))
    assert [r["id"] for r in rows] == ["2608.00003", "2609.00002", "2609.00001"]
    injected = rows[0]
    assert injected["title"].startswith("'=HYPERLINK(")
    assert injected["authors"] == "'@Dave Drake; Eve Evans"
    assert injected["affiliations"] == "'+Plus Institute"
    assert rows[2]["categories"] == "cs.AI cs.LG"
    assert rows[2]["topics"] == "llm-agent-training"
    filtered = api_client.get("/api/v1/topics/llm/papers.csv?submitted_after=2026-09-25")
    assert [r["id"] for r in csv.DictReader(io.StringIO(body(filtered)))] == ["2609.00001"]


def test_topic_jsonl_lines_are_the_api_papers(api_client, world):
    response = api_client.get("/api/v1/topics/llm-agent-training/papers.jsonl")
    assert response["Content-Type"] == "application/jsonl; charset=utf-8"
    lines = body(response).splitlines()
    papers = [json.loads(line) for line in lines]
    assert [p["id"] for p in papers] == ["2609.00001", "2609.00002"]
    assert papers[0] == api_client.get("/api/v1/papers/2609.00001/").json()


def test_a_bad_export_filter_is_a_json_400_before_streaming(api_client, world):
    assert_error(
        api_client.get("/api/v1/topics/llm/papers.csv?category=nope"), 400, param="category"
    )


def test_bibtex_of_a_paper_from_outside_arxiv_has_a_local_key_a_url_and_others(
    api_client, settings
):
    from papers.tests.factories import AuthorshipFactory, PaperFactory

    settings.SITE_URL = "https://topics.example.org"
    paper = PaperFactory(arxiv_id=None, import_key="reference:abc", author_count=10)
    for position in range(3):
        AuthorshipFactory(paper=paper, position=position)

    text = b"".join(
        api_client.get(f"/api/v1/papers/local:{paper.pk}/bibtex/").streaming_content
    ).decode()

    assert text.startswith(f"@misc{{topicsite_local_{paper.pk},")
    assert f"url = {{https://topics.example.org/papers/local/{paper.pk}/}}" in text
    assert " and others}," in text
