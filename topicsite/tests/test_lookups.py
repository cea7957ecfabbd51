"""``field__any=[ids]`` (topicsite/lookups.py): the same rows as ``__in``, one array parameter."""

from decimal import Decimal

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


def test_ids_give_the_same_rows_as_a_list_without_django_walking_them(monkeypatch):
    """``Ids`` is one value to Django: not resolved item by item (nor checked against a
    foreign key's model item by item), the same rows as the list."""
    from django.db.models.sql.query import Query

    from topicsite.lookups import Ids

    papers = [PaperFactory() for _ in range(4)]
    for paper in papers[:2]:
        PaperEmbedding.objects.create(
            paper=paper, model="m", dimension=1, text_sha256="0" * 64, vector=b"\0\0\0\0"
        )
    wanted = [papers[0].pk, papers[2].pk, 10**12]
    resolved = []
    original = Query.resolve_lookup_value

    def counting(self, value, *args, **kwargs):
        resolved.append(value)
        return original(self, value, *args, **kwargs)

    monkeypatch.setattr(Query, "resolve_lookup_value", counting)
    by_ids = set(Paper.objects.filter(pk__any=Ids(wanted)).values_list("pk", flat=True))
    assert len(resolved) == 1  # the Ids itself, not its items
    resolved.clear()
    by_list = set(Paper.objects.filter(pk__any=wanted).values_list("pk", flat=True))
    assert len(resolved) == 1 + len(wanted)
    assert by_ids == by_list == {papers[0].pk, papers[2].pk}
    linked = PaperEmbedding.objects.filter(paper_id__any=Ids(wanted))
    assert list(linked.values_list("paper_id", flat=True)) == [papers[0].pk]
    assert not Paper.objects.filter(pk__any=Ids([])).exists()
    with pytest.raises((ValueError, TypeError)):
        Ids(["1; DROP TABLE papers_paper"])


@pytest.mark.parametrize(
    "bad",
    [[2**63], [-(2**63) - 1], [10**30], "123", b"12", [1.9], [True], [Decimal("2.5")], [2.0]],
)
def test_ids_out_of_range_or_a_string_are_refused_before_any_sql(bad):
    """A string would be read digit by digit (``"123"`` as ids 1, 2, 3); an id outside
    PostgreSQL's bigint was a ``DataError`` from the server; ``int()`` cut a float or a
    Decimal to another id (1.9 as 1) and read a bool as 0 or 1."""
    from topicsite.lookups import Ids

    with CaptureQueriesContext(connection) as captured:
        with pytest.raises((ValueError, TypeError)):
            Ids(bad)
        with pytest.raises((ValueError, TypeError)):
            list(Paper.objects.filter(pk__any=bad))
    assert not captured.captured_queries
    assert not Paper.objects.filter(pk__any=Ids([2**63 - 1, -(2**63)])).exists()
