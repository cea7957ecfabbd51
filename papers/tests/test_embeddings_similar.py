"""Similar papers (papers/embeddings/similar.py) and their section on the paper page."""

import datetime as dt

import pytest

from papers.embeddings.similar import similar_papers, similar_ranked
from papers.embeddings.store import embed_papers
from papers.models import Paper

from .factories import CategoryFactory, PaperFactory

pytestmark = pytest.mark.django_db

SUBJECTS = [
    (
        "Tool use by language model agents",
        "Agents built on large language models learn to "
        "call external tools with reinforcement learning from feedback.",
    ),
    (
        "Agents that browse the web",
        "Language model agents trained with reinforcement learning "
        "navigate websites and call tools to answer questions.",
    ),
    (
        "Planning with LLM agents",
        "We train large language model agents to plan multi-step tool "
        "calls using reinforcement learning.",
    ),
    (
        "Strontium titanate films",
        "Superconductivity in strontium titanate thin films grown by molecular beam epitaxy.",
    ),
    (
        "Liquid xenon detectors",
        "Searches for dark matter with liquid xenon time projection chambers deep underground.",
    ),
]


@pytest.fixture
def corpus(encoder, index_dir):
    category = CategoryFactory(code="cs.AI")
    papers = [
        PaperFactory(
            title=title,
            abstract=abstract,
            primary_category=category,
            submitted=dt.date(2026, 3, i + 1),
        )
        for i, (title, abstract) in enumerate(SUBJECTS)
    ]
    embed_papers([p.pk for p in papers])
    return papers


def test_similar_papers_are_nearest_by_meaning_without_the_paper_itself(corpus):
    found = similar_papers(corpus[0])
    assert [paper.pk for paper, _ in found][:2] == sorted(
        [corpus[1].pk, corpus[2].pk], key=[p.pk for p, _ in found].index
    )
    assert {paper.pk for paper, _ in found[:2]} == {corpus[1].pk, corpus[2].pk}
    assert corpus[0].pk not in [paper.pk for paper, _ in found]
    assert len(found) == 4
    scores = [score for _, score in found]
    assert scores == sorted(scores, reverse=True)


def test_withdrawn_and_deleted_papers_are_left_out(corpus):
    Paper.objects.filter(pk=corpus[1].pk).update(withdrawn=True)
    Paper.objects.filter(pk=corpus[2].pk).update(deleted_at=dt.datetime(2026, 4, 1, tzinfo=dt.UTC))
    found = [paper.pk for paper, _ in similar_papers(corpus[0])]
    assert found and corpus[1].pk not in found and corpus[2].pk not in found


def test_a_paper_without_a_vector_has_none(corpus):
    newcomer = PaperFactory(title="Not embedded yet")
    assert similar_papers(newcomer) == []
    with pytest.raises(ValueError):
        similar_ranked(newcomer.pk, 0)


def test_similar_papers_take_a_fixed_number_of_queries(corpus, django_assert_max_num_queries):
    more = PaperFactory.create_batch(12, abstract="Reinforcement learning for tool-using agents.")
    embed_papers([p.pk for p in more])
    with django_assert_max_num_queries(2):
        found = similar_papers(corpus[0])
        assert len(found) == 10
        assert all(paper.primary_category.code for paper, _ in found)


def test_the_paper_page_lists_similar_papers(client, corpus, django_assert_max_num_queries):
    response = client.get(corpus[0].get_absolute_url())
    html = response.content.decode()
    assert "Similar papers" in html
    assert f'href="{corpus[1].get_absolute_url()}"' in html
    assert "Mar 2, 2026" in html  # the similar paper's submitted date
    assert html.count('<span class="category">cs.AI</span>') >= 5


def test_the_page_of_a_paper_without_a_vector_shows_no_section(client, corpus):
    newcomer = PaperFactory(title="Not embedded yet")
    response = client.get(newcomer.get_absolute_url())
    assert response.status_code == 200
    assert "Similar papers" not in response.content.decode()


def test_the_similar_section_costs_a_fixed_number_of_queries(client, corpus):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    newcomer = PaperFactory(title="Not embedded yet")
    with CaptureQueriesContext(connection) as without:
        client.get(newcomer.get_absolute_url())
    with CaptureQueriesContext(connection) as with_similar:
        client.get(corpus[0].get_absolute_url())
    # The vector read is in both; listing ten similar papers adds one (the live papers).
    assert len(with_similar) - len(without) <= 1
