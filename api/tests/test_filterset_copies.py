"""``api.filters.FilterSet``: each filterset's filters are its own shallow copies, bound to it
as django-filter's deep copies are (``parent``, ``model``, a method filter's method)."""

import datetime as dt

import pytest
from django.http import QueryDict

from api.filters import AssignmentFilter, PaperFilter, TopicFilter
from papers.models import Paper
from papers.tests.factories import CategoryFactory, PaperFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("filterset_class", [PaperFilter, TopicFilter, AssignmentFilter])
def test_each_filterset_has_its_own_filters_bound_to_it(filterset_class):
    first, second = filterset_class(QueryDict()), filterset_class(QueryDict())
    assert first.filters.keys() == filterset_class.base_filters.keys()
    for name, declared in filterset_class.base_filters.items():
        mine, theirs = first.filters[name], second.filters[name]
        assert mine is not declared and mine is not theirs
        assert mine.parent is first and theirs.parent is second
        assert mine.model is filterset_class._meta.model
        assert not hasattr(declared, "parent")  # the declared filters stay unbound
        assert mine.extra == declared.extra and mine.extra is not declared.extra
        if declared.method is not None:
            assert mine.filter.f is mine  # FilterMethod reaches this copy's parent


def test_method_filters_run_on_their_own_filterset():
    cl, ai = CategoryFactory(code="cs.CL"), CategoryFactory(code="cs.AI")
    old = PaperFactory(primary_category=cl, submitted=dt.date(2020, 1, 1))
    new = PaperFactory(primary_category=ai, submitted=dt.date(2024, 1, 1))
    queryset = Paper.objects.all()
    by_category = PaperFilter(QueryDict("primary_category=cs.CL"), queryset=queryset)
    by_date = PaperFilter(QueryDict("submitted=>2023"), queryset=queryset)
    # Built in turn and read afterwards: neither filterset's values leak into the other's.
    assert list(by_date.qs) == [new]
    assert list(by_category.qs) == [old]
    assert by_category.filters["submitted"].parent is by_category
