"""The shared admin paginator: an exact count where counting is cheap."""

import pytest

from papers.models import Paper
from papers.tests.factories import PaperFactory
from topicsite.paginators import EstimatedCountPaginator

pytestmark = pytest.mark.django_db


def test_small_tables_are_counted_exactly():
    PaperFactory.create_batch(4)
    paginator = EstimatedCountPaginator(Paper.objects.order_by("pk"), 2)
    assert (paginator.count, paginator.num_pages) == (4, 2)
