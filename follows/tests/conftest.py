"""Fixtures for the follows tests: a small taxonomy with a child topic, categories, papers."""

import datetime as dt

import pytest

from papers.tests.factories import CategoryFactory, PaperFactory
from topics.services import topic_create
from topics.tests.factories import AssignmentFactory, UserFactory


@pytest.fixture
def reader(db):
    return UserFactory(username="reader")


@pytest.fixture
def other_reader(db):
    return UserFactory(username="other")


@pytest.fixture
def taxonomy(db):
    """``agents`` with a child ``tool-use``, and an unrelated ``vision`` (real paths)."""
    agents = topic_create(name="Agents", slug="agents")
    tool_use = topic_create(name="Tool use", slug="tool-use", parent=agents)
    vision = topic_create(name="Vision", slug="vision")
    return {"agents": agents, "tool-use": tool_use, "vision": vision}


@pytest.fixture
def categories(db):
    return {code: CategoryFactory(code=code) for code in ("cs.CL", "cs.LG", "cs.CV", "math-ph")}


def make_paper(title, *, abstract="", category="cs.CL", cross_lists=(), submitted=None, **kw):
    """A paper with ``title``/``abstract``, primary ``category`` and ``cross_lists`` (codes)."""
    paper = PaperFactory(
        title=title,
        abstract=abstract,
        primary_category=CategoryFactory(code=category),
        submitted=submitted or dt.date(2026, 9, 29),
        **kw,
    )
    if cross_lists:
        paper.cross_lists.set([CategoryFactory(code=code) for code in cross_lists])
    return paper


def assign(paper, topic, state="accepted"):
    return AssignmentFactory(paper=paper, topic=topic, state=state)
