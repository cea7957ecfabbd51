"""Reads for asking a topic: the topic's papers ranked for a question, and the topic's data
version (what a cached answer depends on). No side effects; a fixed number of queries.

Two keyword retrieval paths give the same :class:`Retrieval`, which
:func:`topic_papers_for_question` then fuses with the papers nearest in meaning, as search
does (``topics.search``):

- PostgreSQL: full-text search ('english' configuration, title weighted above abstract) over
  the topic's papers, ranked by ``ts_rank``; the question's words are OR-ed, since a question
  in plain words rarely has every word in one abstract. Two queries.
- Anything else (the embedded SQLite default): BM25 in Python over the titles and abstracts of
  the topic's ``FALLBACK_POOL`` newest papers. One query.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field

from django.db import connection
from django.db.models import Count, Max

from papers.models import Paper
from topics import search
from topics.models import Assignment, Topic
from topics.selectors import topic_papers

from . import text

__all__ = [
    "CANDIDATES",
    "FALLBACK_POOL",
    "Retrieval",
    "ask_data_version",
    "topic_papers_for_question",
    "topic_papers_for_question_fallback",
    "topic_papers_for_question_postgres",
    "with_meaning",
]

# Papers handed on to passage selection.
CANDIDATES = 20
# Papers the fallback reads (newest first); a topic rarely has more.
FALLBACK_POOL = 5000
# The title counts this many times over in the fallback (like weight A over B in PostgreSQL).
TITLE_WEIGHT = 2
# At most this many distinct question words are searched for.
MAX_TERMS = 32

_PAPER_FIELDS = ("id", "arxiv_id", "import_key", "title", "abstract", "submitted")


@dataclass
class Retrieval:
    """Papers of a topic ranked for a question.

    ``papers``: at most ``CANDIDATES`` papers, best first, each with ``ask_score`` (float > 0;
    its scale depends on the backend, compare only within one retrieval) and only
    ``_PAPER_FIELDS`` loaded. ``document_frequency``: per question term (stem from
    :func:`ask.text.question_terms`), the number of the topic's papers holding it.
    ``documents``: the topic's paper count (the fallback: the papers it read).
    ``backend``: ``"postgresql"`` or ``"python"``. ``mode``: ``"hybrid"`` when the papers
    were fused with those nearest in meaning (:func:`with_meaning`), else ``"keyword"``.
    """

    papers: list[Paper]
    document_frequency: dict[str, int]
    documents: int
    backend: str
    terms: list[str] = field(default_factory=list)
    mode: str = "keyword"


def _question_words(question: str) -> dict[str, str]:
    """Question term (stem) -> the first word of the question that gave it."""
    words: dict[str, str] = {}
    for word in text.surface_words(question):
        words.setdefault(text.stem(word), word)
        if len(words) >= MAX_TERMS:
            break
    return words


def topic_papers_for_question(*, topic: Topic, question: str) -> Retrieval:
    """The topic's papers (accepted assignments in the topic and its descendants) ranked for
    ``question`` the way search ranks (``topics.search``, hybrid): the keyword ranking
    (PostgreSQL full-text search on PostgreSQL, BM25 in Python elsewhere) fused by reciprocal
    rank fusion with the topic's papers nearest in meaning to the question
    (:func:`with_meaning`). A question without content words gives no papers; without the
    embedding model or paper vectors, the keyword ranking alone (``Retrieval.mode``
    ``"keyword"``)."""
    if connection.vendor == "postgresql":
        retrieval = topic_papers_for_question_postgres(topic=topic, question=question)
    else:
        retrieval = topic_papers_for_question_fallback(topic=topic, question=question)
    return with_meaning(retrieval, topic=topic, question=question)


def with_meaning(retrieval: Retrieval, *, topic: Topic, question: str) -> Retrieval:
    """``retrieval`` (a keyword ranking of ``topic``'s papers for ``question``) fused with the
    ``CANDIDATES`` papers of the topic nearest in meaning to the question
    (``topics.search.semantic_ranked``) by ``topics.search.fuse``: at most ``CANDIDATES``
    papers, best first, ``ask_score`` the fused score, ``mode`` ``"hybrid"``. Returned as it
    is (``mode`` ``"keyword"``) when the question has no content words or semantic search is
    unavailable (``topics.search.SemanticUnavailable``). One query more, plus the encoder's
    work and an index lookup."""
    if not retrieval.terms:
        return retrieval
    try:
        vector = search.query_vector(question)
    except search.SemanticUnavailable:
        return retrieval
    nearest = search.semantic_ranked(topic_papers(topic=topic), vector, limit=CANDIDATES)
    keyword = [(paper.id, paper.ask_score) for paper in retrieval.papers]
    fused = search.fuse([keyword, nearest])[:CANDIDATES]
    loaded = {paper.id: paper for paper in retrieval.papers}
    missing = [paper_id for paper_id, _ in fused if paper_id not in loaded]
    if missing:
        loaded |= Paper.objects.filter(id__in=missing).only(*_PAPER_FIELDS).in_bulk()
    papers = []
    for paper_id, score in fused:
        paper = loaded[paper_id]
        paper.ask_score = score
        papers.append(paper)
    retrieval.papers = papers
    retrieval.mode = "hybrid"
    return retrieval


def topic_papers_for_question_postgres(*, topic: Topic, question: str) -> Retrieval:
    """PostgreSQL path of :func:`topic_papers_for_question`. Two queries: one reads each of
    the topic's papers' stored text search vector (``search_vector``: title weight A,
    abstract weight B, 'english') and returns its ``ts_rank`` for each of the question's
    words (0 where it lacks the word); a paper's score is the sum of those ranks weighted by
    each word's idf over the topic (so a rare word like "GRPO" outweighs "agent"); the other
    query loads the ``CANDIDATES`` best papers. Needs PostgreSQL.
    """
    words = _question_words(question)
    if not words:
        return Retrieval(papers=[], document_frequency={}, documents=0, backend="postgresql")
    subtree_sql, subtree_params = (
        topic_papers(topic=topic).order_by().values("id").query.sql_with_params()
    )
    term_columns = ", ".join(
        f"plainto_tsquery('english', %s) AS q{index}" for index in range(len(words))
    )
    ranks = ", ".join(
        f"CASE WHEN docs.document @@ q{index} THEN ts_rank(docs.document, q{index}) ELSE 0 END"
        for index in range(len(words))
    )
    # The stored vector (papers migration 0005) is the document, never recomputed; OFFSET 0
    # keeps PostgreSQL from inlining the subquery.
    sql = f"""
        SELECT docs.id, docs.submitted, {ranks}
        FROM (
            SELECT p.id, p.submitted, p.search_vector AS document
            FROM papers_paper p
            WHERE p.id IN ({subtree_sql})
            OFFSET 0
        ) AS docs,
        (SELECT {term_columns}) AS queries
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [*subtree_params, *words.values()])
        rows = cursor.fetchall()
    stems = list(words)
    frequency = {
        stem: sum(1 for row in rows if row[2 + index] > 0) for index, stem in enumerate(stems)
    }
    weights = [text.idf(frequency[stem], len(rows)) for stem in stems]
    ranked = []
    for paper_id, submitted, *term_ranks in rows:
        score = sum(w * r for w, r in zip(weights, term_ranks, strict=True))
        if score > 0:
            ranked.append((-score, -submitted.toordinal(), -paper_id))
    ranked.sort()
    best = {-paper_id: -score for score, _, paper_id in ranked[:CANDIDATES]}
    papers = Paper.objects.filter(id__in=best).only(*_PAPER_FIELDS).in_bulk()
    for paper_id, score in best.items():
        papers[paper_id].ask_score = score
    return Retrieval(
        papers=[papers[paper_id] for paper_id in best],
        document_frequency=frequency,
        documents=len(rows),
        backend="postgresql",
        terms=stems,
    )


def topic_papers_for_question_fallback(*, topic: Topic, question: str) -> Retrieval:
    """Database-independent path of :func:`topic_papers_for_question`: reads the topic's
    ``FALLBACK_POOL`` newest papers (one query) and ranks them by BM25 over the title (counted
    ``TITLE_WEIGHT`` times) and abstract. Runs on any database, PostgreSQL included."""
    stems = list(_question_words(question))
    if not stems:
        return Retrieval(papers=[], document_frequency={}, documents=0, backend="python")
    pool = list(topic_papers(topic=topic).only(*_PAPER_FIELDS)[:FALLBACK_POOL])
    bags = []
    frequency = dict.fromkeys(stems, 0)
    for paper in pool:
        bag = Counter(text.terms(paper.title) * TITLE_WEIGHT + text.terms(paper.abstract))
        bags.append(bag)
        for stem in stems:
            if stem in bag:
                frequency[stem] += 1
    weights = {stem: text.idf(frequency[stem], len(pool)) for stem in stems}
    lengths = [sum(bag.values()) for bag in bags]
    average = sum(lengths) / len(lengths) if lengths else 0.0
    scored = []
    for order, (paper, bag, length) in enumerate(zip(pool, bags, lengths, strict=True)):
        score = text.bm25(stems, bag, length=length, average_length=average, weights=weights)
        if score > 0:
            paper.ask_score = score
            scored.append((-score, order, paper))  # ties: the newer paper first
    scored.sort(key=lambda item: item[:2])
    return Retrieval(
        papers=[paper for _, _, paper in scored[:CANDIDATES]],
        document_frequency=frequency,
        documents=len(pool),
        backend="python",
        terms=stems,
    )


def ask_data_version(*, topic: Topic) -> str:
    """A short hex digest that changes whenever an answer about ``topic`` could: an
    assignment in its subtree added, removed or changed, one of those papers changed, or the
    topic moved. One query."""
    stats = Assignment.objects.in_subtree(topic).aggregate(
        count=Count("id"),
        assignments_changed=Max("updated_at"),
        papers_changed=Max("paper__updated_at"),
    )
    raw = "|".join(
        str(value)
        for value in (
            topic.path,
            stats["count"],
            stats["assignments_changed"],
            stats["papers_changed"],
        )
    )
    return hashlib.sha256(raw.encode()).hexdigest()[:16]
