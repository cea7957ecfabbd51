"""Bidi controls in stored text (a right-to-left override U+202E, an isolate U+2067 left open)
cannot reorder what pages show around them: a title or name holding one (or right-to-left
letters) is rendered in its own ``<bdi>`` element, which the Unicode bidi algorithm treats as
an isolate (``topicsite.bidi``).

Parsed with lxml: each hostile string must sit inside a ``<bdi>`` whose text is exactly that
string, and nothing outside a ``<bdi>`` may carry a bidi control.
"""

import datetime as dt

import lxml.html
import pytest

from papers.tests.factories import (
    AffiliationFactory,
    AuthorFactory,
    AuthorshipFactory,
    CategoryFactory,
    PaperAffiliationFactory,
    PaperFactory,
)
from topics.models import Assignment
from topics.tests.factories import AssignmentFactory, TopicFactory
from topicsite.bidi import isolate

pytestmark = pytest.mark.django_db

BIDI_CONTROLS = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f")
TITLE = "Safe title \u202etxet desrever"
AUTHOR = "Ada \u2067Lovelace"
AFFILIATION = "University \u202dof Somewhere"


@pytest.fixture
def hostile_paper():
    topic = TopicFactory(name="Agents", slug="agents")
    paper = PaperFactory(
        title=TITLE,
        submitted=dt.date(2026, 9, 29),
        primary_category=CategoryFactory(code="cs.CL"),
        author_count=1,
        affiliation_count=1,
    )
    AuthorshipFactory(paper=paper, author=AuthorFactory(name=AUTHOR), position=0)
    PaperAffiliationFactory(
        paper=paper, affiliation=AffiliationFactory(name=AFFILIATION), position=0
    )
    AssignmentFactory(paper=paper, topic=topic, state=Assignment.State.ACCEPTED)
    return paper, topic


def assert_isolated(html: str, *hostile: str) -> None:
    """Each of ``hostile`` is the whole text of a ``<bdi>``; no bidi control is left outside."""
    tree = lxml.html.fromstring(html)
    isolated = [element.text_content() for element in tree.iter("bdi")]
    for text in hostile:
        assert text in isolated, f"{text!r} is not in a <bdi> of its own"
    for bdi in tree.iter("bdi"):  # what is left outside every isolate
        bdi.drop_tree()
    body = tree.find("body") if tree.find("body") is not None else tree
    outside = body.text_content()
    assert not BIDI_CONTROLS & set(outside), "a bidi control is outside any <bdi>"


def test_topic_page_cards_isolate_titles_and_names(client, hostile_paper):
    _, topic = hostile_paper
    response = client.get(f"/topics/{topic.slug}/")

    assert response.status_code == 200
    assert_isolated(response.content.decode(), TITLE, AUTHOR, AFFILIATION)


def test_paper_page_isolates_title_authors_and_affiliations(client, hostile_paper):
    paper, _ = hostile_paper
    response = client.get(paper.get_absolute_url(), follow=True)

    assert response.status_code == 200
    assert_isolated(response.content.decode(), TITLE, AUTHOR, AFFILIATION)


@pytest.mark.parametrize(
    ("text", "html"),
    [
        ("Wentao Liu", "Wentao Liu"),  # nothing to isolate: the text reads as before
        ("Dirk Wübben & Co <b>", "Dirk Wübben &amp; Co &lt;b&gt;"),
        ("محمد علي", "<bdi>محمد علي</bdi>"),
        ("a \u202eb", "<bdi>a \u202eb</bdi>"),
        ("x \u2066y", "<bdi>x \u2066y</bdi>"),
        ("<\u202e>", "<bdi>&lt;\u202e&gt;</bdi>"),
        (None, ""),
    ],
)
def test_isolate_wraps_only_what_can_move_and_always_escapes(text, html):
    assert str(isolate(text)) == html
