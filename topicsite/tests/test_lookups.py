"""``field__any=[ids]`` (topicsite/lookups.py): the same rows as ``__in``, one array parameter."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from papers.models import Paper, PaperEmbedding
from papers.tests.factories import PaperFactory

pytestmark = pytest.mark.django_db


def test_any_finds_what_in_finds_with_one_parameter():
    papers = [PaperFactory() for _ in range(5)]
    wanted = [papers[0].pk, papers[3].pk, 10**12]  # an id no paper has
    with CaptureQueriesContext(connection) as captured:
        found = set(Paper.objects.filter(pk__any=wanted).values_list("pk", flat=True))
    assert found == set(Paper.objects.filter(pk__in=wanted).values_list("pk", flat=True))
    assert found == {papers[0].pk, papers[3].pk}
    assert "= ANY(" in captured.captured_queries[0]["sql"]


def test_any_on_a_foreign_key_and_the_empty_list():
    paper = PaperFactory()
    PaperEmbedding.objects.create(
        paper=paper, model="m", dimension=1, text_sha256="0" * 64, vector=b"\0\0\0\0"
    )
    assert list(
        PaperEmbedding.objects.filter(paper_id__any=[paper.pk]).values_list("model", flat=True)
    ) == ["m"]
    assert not Paper.objects.filter(pk__any=[]).exists()


def test_a_value_that_is_not_an_integer_is_refused_before_any_sql():
    with pytest.raises((ValueError, TypeError)):
        list(Paper.objects.filter(pk__any=["1; DROP TABLE papers_paper"]))
