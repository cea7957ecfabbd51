"""Ask's retrieval ranks a topic's papers as search does: the keyword ranking fused with the
papers nearest in meaning (``topics.search``), and the keyword ranking alone without vectors."""

import pytest

from ask import selectors
from papers.embeddings.store import embed_papers
from topics.selectors import topic_papers

pytestmark = pytest.mark.django_db

PUBG_ALLY = "PUBG Ally: A Conversational Embodied Agent as an AI Teammate"
# PUBG Ally described without the words of its title or its abstract's key terms.
QUESTION = (
    "Which system cooperates with human gamers inside an online shooter as a squad companion "
    "that talks?"
)


@pytest.fixture
def index_dir(settings, tmp_path):
    settings.EMBEDDING_INDEX_DIR = tmp_path / "vectors"
    return settings.EMBEDDING_INDEX_DIR


def test_ask_fuses_the_keyword_ranking_with_meaning(reference_topic, index_dir):
    keyword_only = selectors.topic_papers_for_question(topic=reference_topic, question=QUESTION)
    assert keyword_only.mode == "keyword"
    assert [paper.title for paper in keyword_only.papers][:1] != [PUBG_ALLY]

    ids = list(topic_papers(topic=reference_topic).values_list("id", flat=True))
    assert embed_papers(ids) == 30
    retrieval = selectors.topic_papers_for_question(topic=reference_topic, question=QUESTION)
    assert retrieval.mode == "hybrid"
    assert retrieval.papers[0].title == PUBG_ALLY
    assert len(retrieval.papers) <= selectors.CANDIDATES
    assert {paper.id for paper in retrieval.papers} <= set(ids)
    scores = [paper.ask_score for paper in retrieval.papers]
    assert scores == sorted(scores, reverse=True) and scores[-1] > 0
    # The answer's statistics still describe the question's words over the topic.
    assert retrieval.documents == 30 and "gamer" in retrieval.document_frequency


def test_a_question_without_content_words_stays_empty_with_vectors(reference_topic, index_dir):
    embed_papers(topic_papers(topic=reference_topic).values_list("id", flat=True))
    retrieval = selectors.topic_papers_for_question(topic=reference_topic, question="what is it?")
    assert retrieval.papers == [] and retrieval.mode == "keyword"
