"""OpenAlex's filter conventions on the paper lists: ``a|b`` (any of them), ``!a`` / ``!a|b``
(none of them), and ``submitted`` with ``>`` / ``<``, on real PostgreSQL."""

import datetime as dt

import pytest

from papers.tests.factories import CategoryFactory, PaperFactory
from topics.tests.factories import AssignmentFactory, TopicFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def papers():
    cl, ai, th = (CategoryFactory(code=code) for code in ("cs.CL", "cs.AI", "hep-th"))
    made = {
        "cl": PaperFactory(primary_category=cl, submitted=dt.date(2023, 5, 1)),
        "ai": PaperFactory(primary_category=ai, submitted=dt.date(2024, 1, 1)),
        "th": PaperFactory(primary_category=th, submitted=dt.date(2024, 6, 1)),
        "th_x_cl": PaperFactory(primary_category=th, submitted=dt.date(2025, 2, 1)),
    }
    made["th_x_cl"].cross_lists.add(cl)
    agents, physics = TopicFactory(slug="agents"), TopicFactory(slug="physics")
    AssignmentFactory(paper=made["ai"], topic=agents)
    AssignmentFactory(paper=made["th"], topic=physics)
    return made


def ids(client, query):
    response = client.get(f"/api/v1/papers/?{query}")
    assert response.status_code == 200, response.content
    return {paper["id"] for paper in response.json()["results"]}


def arxiv(papers, *names):
    return {papers[name].arxiv_id for name in names}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("category=cs.CL|cs.AI", ("cl", "ai", "th_x_cl")),
        ("category=!cs.CL", ("ai", "th")),
        ("category=!cs.CL|hep-th", ("ai",)),
        ("primary_category=hep-th|cs.AI", ("ai", "th", "th_x_cl")),
        ("primary_category=!hep-th", ("cl", "ai")),
        ("topic=agents|physics", ("ai", "th")),
        ("topic=!agents", ("cl", "th", "th_x_cl")),
        ("submitted=2024", ("ai", "th")),
        ("submitted=2024-01-01", ("ai",)),
        ("submitted=>2024-01-01", ("th", "th_x_cl")),
        ("submitted=<2024", ("cl",)),
        ("submitted=>2023&category=cs.CL", ("th_x_cl",)),
    ],
)
def test_or_not_and_comparisons(client, papers, query, expected):
    assert ids(client, query) == arxiv(papers, *expected)


def test_author_alternatives(client, papers):
    from papers.tests.factories import AuthorFactory, AuthorshipFactory

    AuthorshipFactory(paper=papers["cl"], author=AuthorFactory(name="Ada Lovelace"), position=0)
    AuthorshipFactory(paper=papers["ai"], author=AuthorFactory(name="Alan Turing"), position=0)
    assert ids(client, "author=lovelace|turing") == arxiv(papers, "cl", "ai")
    assert ids(client, "author=!lovelace") == arxiv(papers, "ai", "th", "th_x_cl")


@pytest.mark.parametrize(
    ("query", "field", "words"),
    [
        ("category=cs.CL|nope.XX", "category", "Unknown category code 'nope.XX'"),
        ("category=cs.CL|", "category", "Empty alternative"),
        ("category=!", "category", "Empty alternative"),
        ("topic=agents||physics", "topic", "Empty alternative"),
        ("topic=!missing", "topic", "Unknown topic slug 'missing'"),
        ("submitted=>24-01-01", "submitted", "Expected YYYY-MM-DD or YYYY"),
        ("submitted=2024-02-30", "submitted", "Expected YYYY-MM-DD or YYYY"),
        ("category=" + "|".join(["cs.CL"] * 51), "category", "At most 50 alternatives"),
    ],
)
def test_bad_values_are_400s_naming_the_field(client, papers, query, field, words):
    response = client.get(f"/api/v1/papers/?{query}")
    assert response.status_code == 400
    details = response.json()["error"]["details"]
    assert list(details) == [field] and words in details[field][0], details
