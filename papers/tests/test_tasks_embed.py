"""Stored papers are embedded through the ``embed`` queue (papers/receivers.py, papers/tasks.py)."""

import logging

import pytest
from django.conf import settings

from papers.embeddings.index import index_path
from papers.ingest.write import papers_upsert
from papers.models import Paper, PaperEmbedding
from papers.parsers.oai import parse_oai_page
from papers.signals import papers_stored
from papers.tasks import embed_papers
from topicsite.tests.dead_broker import dead_broker_delay

from .conftest import OAI_DC_PAGE
from .factories import PaperFactory

pytestmark = pytest.mark.django_db


def test_embed_tasks_go_to_the_embed_queue():
    router = embed_papers.app.amqp.router
    assert router.route({}, embed_papers.name)["queue"].name == "embed"
    assert settings.CELERY_TASK_ROUTES["papers.tasks.embed_*"] == {"queue": "embed"}


def test_papers_stored_queues_embedding(encoder, index_dir):
    papers = PaperFactory.create_batch(3)
    # Tasks run eagerly in the tests, as on the embedded default.
    papers_stored.send(sender=Paper, paper_ids=[p.pk for p in papers])
    assert set(PaperEmbedding.objects.values_list("paper_id", flat=True)) == {p.pk for p in papers}
    assert index_path(encoder.model_id).exists()
    assert embed_papers([p.pk for p in papers]) == 0  # a second run embeds nothing


def test_an_ingested_page_is_embedded_after_commit(
    encoder, index_dir, django_capture_on_commit_callbacks
):
    page = parse_oai_page(OAI_DC_PAGE.read_bytes(), source=str(OAI_DC_PAGE))
    with django_capture_on_commit_callbacks(execute=True):
        result = papers_upsert(records=page.records, source=str(OAI_DC_PAGE))
    assert result.created == 5
    assert PaperEmbedding.objects.count() == 5
    assert PaperEmbedding.objects.filter(model=encoder.model_id).count() == 5


def test_a_stopped_broker_is_logged_and_the_papers_stay(
    index_dir, monkeypatch, caplog, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(embed_papers, "delay", dead_broker_delay(embed_papers.name))
    paper = PaperFactory()
    with caplog.at_level(logging.ERROR, logger="topicsite.publish"):
        papers_stored.send(sender=Paper, paper_ids=[paper.pk])
    assert Paper.objects.filter(pk=paper.pk).exists()
    assert PaperEmbedding.objects.count() == 0
    [record] = [r for r in caplog.records if "papers.tasks.embed_papers" in r.getMessage()]
    assert "manage.py embed" in record.getMessage()


def test_the_task_without_the_model_logs_a_warning_and_embeds_nothing(
    index_dir, missing_model, caplog
):
    paper = PaperFactory()
    with caplog.at_level(logging.WARNING, logger="papers.tasks"):
        assert embed_papers([paper.pk]) == 0
    assert PaperEmbedding.objects.count() == 0
    assert any(missing_model in record.getMessage() for record in caplog.records)
