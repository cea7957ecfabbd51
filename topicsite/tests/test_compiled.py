"""topicsite.compiled.CompiledQuery: a queryset compiled once, run with other values."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection

from papers.models import Paper
from papers.tests.factories import PaperFactory
from topicsite.compiled import CompiledQuery
from topicsite.lookups import Ids

pytestmark = pytest.mark.django_db


def _run(compiled: CompiledQuery, **values) -> list[int]:
    sql, params = compiled.sql("default", **values)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [row[0] for row in cursor.fetchall()]


def test_the_compiled_sql_gives_what_the_queryset_gives_for_every_value():
    day = dt.date(2024, 5, 1)
    papers = [
        PaperFactory(submitted=day + dt.timedelta(days=n % 4), withdrawn=n == 3) for n in range(8)
    ]
    built = []

    def build(day, paper):
        built.append((day, paper))
        return (
            Paper.objects.live()
            .filter(submitted__gte=day, pk__gt=paper)
            .order_by("-submitted", "-pk")
            .values_list("pk", flat=True)
        )

    compiled = CompiledQuery(build, day=dt.date, paper=int)
    for since in (day, day + dt.timedelta(days=2), day + dt.timedelta(days=9)):
        for after in (0, papers[2].pk, papers[-1].pk):
            expected = list(
                Paper.objects.live()
                .filter(submitted__gte=since, pk__gt=after)
                .order_by("-submitted", "-pk")
                .values_list("pk", flat=True)
            )
            assert _run(compiled, day=since, paper=after) == expected
    assert len(built) == 1  # compiled once, for the one database
    assert papers[3].pk not in _run(compiled, day=day, paper=0)  # withdrawn: LIVE applies


def test_a_marker_the_query_does_not_pass_as_a_parameter_is_an_error():
    unused = CompiledQuery(lambda paper: Paper.objects.values_list("pk", flat=True), paper=int)
    with pytest.raises(ValueError, match="paper"):
        unused.sql("default", paper=1)
    with pytest.raises(TypeError, match="slug"):
        CompiledQuery(lambda slug: Paper.objects.filter(arxiv_id=slug), slug=str)


def test_a_value_not_given_is_a_key_error():
    compiled = CompiledQuery(lambda paper: Paper.objects.filter(pk=paper), paper=int)
    with pytest.raises(KeyError):
        compiled.sql("default")


def test_a_list_of_ids_is_one_array_parameter_of_any_length():
    """An ``Ids`` marker (``field__any=``): the compiled SQL keeps its shape for lists of any
    length, empty included, and gives what the queryset gives; values are checked as
    ``Ids`` checks them, before any SQL."""
    papers = [PaperFactory(withdrawn=n == 2) for n in range(6)]
    built = []

    def build(papers, floor):
        built.append(papers)
        return Paper.objects.live().filter(pk__any=papers, pk__gt=floor).values_list("pk")

    compiled = CompiledQuery(build, papers=Ids, floor=int)
    pks = [p.pk for p in papers]
    for chosen in ([], pks[:1], pks, [pks[3], pks[2], 10**12], Ids(pks[1:4])):
        listed = chosen.ids if isinstance(chosen, Ids) else chosen
        expected = sorted(
            Paper.objects.live().filter(pk__in=listed, pk__gt=pks[0]).values_list("pk", flat=True)
        )
        assert sorted(_run(compiled, papers=chosen, floor=pks[0])) == expected
    assert len(built) == 1
    with pytest.raises(TypeError):
        compiled.sql("default", papers="1,2", floor=0)
    with pytest.raises(ValueError, match="out of range"):
        compiled.sql("default", papers=[2**63], floor=0)
