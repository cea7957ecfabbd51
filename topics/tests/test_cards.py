"""The paper card (``topics.cards``): what a card holds, in the order asked, and the portable
card rows equal to PostgreSQL's one query."""

import pytest

from papers.models import Paper
from papers.tests.factories import AuthorshipFactory, PaperFactory
from topics import cards
from topics.models import Assignment
from topics.tests.conftest import DAY, paper_in
from topics.tests.factories import AssignmentFactory, TopicFactory

pytestmark = pytest.mark.django_db


def test_paper_cards_hold_what_a_card_shows_in_the_order_asked():
    shown, hidden = TopicFactory(name="B shown"), TopicFactory(name="A hidden", active=False)
    other = TopicFactory(name="A other")
    arxiv = paper_in(shown, hidden, other)
    local = PaperFactory(arxiv_id=None, import_key="reference:1")
    for position in (3, 0, 2, 1):
        AuthorshipFactory(paper=arxiv, position=position)

    found = cards.paper_cards(paper_ids=[local.pk, 10**9, arxiv.pk])

    assert [c.pk for c in found] == [local.pk, arxiv.pk]
    assert found[0].url == local.get_absolute_url()
    assert found[1].url == arxiv.get_absolute_url()
    assert found[1].primary_category == arxiv.primary_category.code
    names = list(
        arxiv.authorships.filter(position__lt=3)
        .order_by("position")
        .values_list("author__name", flat=True)
    )
    assert found[1].authors == names
    assert [(chip.name, chip.url) for chip in found[1].topics] == [
        ("A other", other.get_absolute_url()),
        ("B shown", shown.get_absolute_url()),
    ]


def test_more_counts_what_the_card_does_not_name():
    card = cards.PaperCard(
        pk=1,
        url="/papers/1/",
        title="T",
        abstract="",
        submitted=DAY,
        withdrawn=False,
        primary_category="cs.CL",
        author_count=5,
        affiliation_count=2,
    )
    assert (card.more_authors, card.more_affiliations) == (2, 0)


def test_the_portable_card_rows_equal_the_one_query_rows(papers_tree):
    """SQLite (the demo) reads the cards in four queries; on the same data they must give what
    PostgreSQL's one query gives."""
    paper = Assignment.objects.filter(topic=papers_tree[2]).get().paper
    for position in (2, 0, 1, 3):
        AuthorshipFactory(paper=paper, position=position)
    ids = list(Paper.objects.order_by("-pk").values_list("pk", flat=True))

    one_query = sorted(cards.card_rows_postgresql(ids))
    portable = sorted(cards.card_rows_portable(ids))

    assert portable == one_query
    assert any(row[-3] for row in portable) and any(row[-1] for row in portable)


def test_clip_text_keeps_short_text_and_cuts_long_text_at_a_space():
    assert cards.clip_text("short", 10) == ("short", False)
    assert cards.clip_text("a" * 10, 10) == ("a" * 10, False)
    assert cards.clip_text("a" * 11, 10) == ("a" * 10 + "…", True)
    assert cards.clip_text("words " * 5, 20) == ("words words words…", True)


def test_an_oversized_title_and_abstract_are_clipped_on_cards_and_the_topic_page(client):
    topic = TopicFactory(slug="huge")
    long_title = PaperFactory(title="T" + " title" * 200_000)  # 1.2 MB
    long_abstract = PaperFactory(abstract="word " * 800_000)  # 4 MB
    for paper in (long_title, long_abstract):
        AssignmentFactory(paper=paper, topic=topic)

    by_pk = {c.pk: c for c in cards.paper_cards(paper_ids=[long_title.pk, long_abstract.pk])}
    title_card, abstract_card = by_pk[long_title.pk], by_pk[long_abstract.pk]
    assert title_card.title_clipped and not title_card.abstract_clipped
    assert len(title_card.title) <= cards.CARD_TITLE_CHARS + 1
    assert title_card.title.endswith("…")
    assert abstract_card.abstract_clipped and not abstract_card.title_clipped
    assert len(abstract_card.abstract) <= cards.CARD_ABSTRACT_CHARS + 1
    assert cards.card_rows_portable([long_title.pk]) == cards.card_rows_postgresql([long_title.pk])

    response = client.get(topic.get_absolute_url())
    assert response.status_code == 200
    assert len(response.content) < 100_000
    page = response.content.decode()
    assert "The whole abstract on the paper's page" in page
    assert long_abstract.get_absolute_url() in page


def test_the_card_names_one_more_author_in_the_singular(client):
    topic = TopicFactory(slug="byline")
    one_more, two_more = paper_in(topic), paper_in(topic)
    for paper, count in ((one_more, 4), (two_more, 5)):
        for position in range(count):
            AuthorshipFactory(paper=paper, position=position)
        Paper.objects.filter(pk=paper.pk).update(author_count=count)  # as imports keep it

    page = client.get(topic.get_absolute_url()).content.decode()

    assert '+1<span class="visually-hidden"> more author</span>' in page
    assert '+2<span class="visually-hidden"> more authors</span>' in page
    for paper, more in ((one_more, "+1 more author"), (two_more, "+2 more authors")):
        byline = client.get(paper.get_absolute_url()).content.decode()
        assert more in byline.replace('<span class="visually-hidden"> ', " ")
