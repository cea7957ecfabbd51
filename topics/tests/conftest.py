"""Shared data for the tests of the topic reads (selectors, cards, the topic page at scale):
papers placed in topics on known days, and a small tree of them."""

import datetime as dt

import pytest

from papers.tests.factories import PaperFactory
from topics.models import Assignment
from topics.tests.factories import AssignmentFactory, TopicFactory

DAY = dt.date(2026, 9, 29)


def paper_in(*topics, submitted=DAY, state=Assignment.State.ACCEPTED):
    """A new paper submitted on ``submitted``, assigned to each of ``topics`` in ``state``."""
    paper = PaperFactory(submitted=submitted)
    for topic in topics:
        AssignmentFactory(paper=paper, topic=topic, state=state)
    return paper


@pytest.fixture
def tree():
    """A parent with three children; papers spread over days, some under two children, ties
    on the submitted date, a rejected assignment and a paper outside the tree."""
    parent = TopicFactory(name="Parent")
    children = [TopicFactory(name=f"Child {i}", parent=parent) for i in range(3)]
    grandchild = TopicFactory(name="Grandchild", parent=children[0])
    outside = TopicFactory(name="Outside")
    for day in range(12):
        submitted = DAY - dt.timedelta(days=day // 2)  # two papers a day: ties on the date
        members = [children[day % 3]] + ([children[(day + 1) % 3]] if day % 4 == 0 else [])
        paper_in(*members, submitted=submitted)
    paper_in(grandchild, submitted=DAY - dt.timedelta(days=3))
    paper_in(parent, submitted=DAY - dt.timedelta(days=20))
    paper_in(children[1], submitted=DAY, state=Assignment.State.REJECTED)
    paper_in(outside, submitted=DAY)
    return parent, children, grandchild
