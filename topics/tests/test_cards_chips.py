"""Which topic chips a card shows: the most specific topics, no group-level topic beside them;
and the reference page's same-day papers in the page's order."""

import json

import pytest

from papers.tests.factories import CategoryFactory, PaperFactory
from topics import cards
from topics.tests.factories import AssignmentFactory, TopicFactory

pytestmark = pytest.mark.django_db


def chip_names(paper):
    (card,) = cards.paper_cards(paper_ids=[paper.pk])
    return [chip.name for chip in card.topics]


@pytest.mark.parametrize("rows", [cards.card_rows_postgresql, cards.card_rows_portable])
def test_a_card_shows_the_most_specific_topics_and_no_group_topic_beside_them(rows, monkeypatch):
    monkeypatch.setattr(cards, "card_rows_postgresql", rows)
    CategoryFactory(code="cs.CL", group_name="Computer Science")
    group = TopicFactory(name="Computer Science")
    parent = TopicFactory(name="Large Language Model")
    child = TopicFactory(name="LLM Agent Training", parent=parent)
    other = TopicFactory(name="Reinforcement Learning")
    paper = PaperFactory()
    for topic in (group, parent, child, other):
        AssignmentFactory(paper=paper, topic=topic)
    assert chip_names(paper) == ["LLM Agent Training", "Reinforcement Learning"]

    # Alone, the broad topics stay: a tagged paper never loses all its chips.
    only_group = PaperFactory()
    AssignmentFactory(paper=only_group, topic=group)
    assert chip_names(only_group) == ["Computer Science"]
    only_parent = PaperFactory()
    AssignmentFactory(paper=only_parent, topic=parent)
    AssignmentFactory(paper=only_parent, topic=group)
    assert chip_names(only_parent) == ["Large Language Model"]


def test_a_child_topic_named_as_a_group_is_not_group_level():
    CategoryFactory(code="physics.gen-ph", group_name="Physics")
    physics_child = TopicFactory(name="Physics", parent=TopicFactory(name="Science"))
    other = TopicFactory(name="Optics")
    paper = PaperFactory()
    AssignmentFactory(paper=paper, topic=physics_child)
    AssignmentFactory(paper=paper, topic=other)
    assert chip_names(paper) == ["Optics", "Physics"]


def test_the_reference_topic_page_lists_same_day_papers_in_the_page_order(client, reference_topic):
    from conftest import REFERENCE_PAGE

    expected = [paper["title"] for paper in json.loads(REFERENCE_PAGE.read_text("utf-8"))["papers"]]
    page = cards.topic_card_page(topic=reference_topic, number=1, per_page=30)
    assert [card.title for card in page] == expected
    # Every card keeps topic chips linking to topic pages.
    assert all(card.topics for card in page)
