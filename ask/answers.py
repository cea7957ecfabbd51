"""Answering a question about a topic from the topic's papers, with numbered citations.

:func:`topic_answer` is the one entry point (the page and the API both call it):

1. the topic's papers ranked for the question (:mod:`ask.selectors`);
2. passages: each candidate abstract split into sentences, each sentence scored by BM25 for the
   question's terms (idf over the topic's papers) plus its paper's rank;
3. no answer when the best paper covers less than ``MIN_COVERAGE`` of the question (terms
   weighted by idf): the reader is pointed elsewhere instead of getting weak matches;
4. the extractive answer: the best sentences, grouped by paper, each followed by its paper's
   citation number; papers numbered in order of relevance;
5. with a generator configured, the generator's answer from the same passages, its citation
   markers checked against them; on any failure the extractive answer, saying why.

Answers are cached per topic, data version and normalised question.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import urlencode

from django.conf import settings
from django.core.cache import cache
from django.urls import reverse

from topics.models import Topic
from topics.search_page import words_query

from . import selectors, text
from .generator import GeneratorError, Passage, generator_answer, generator_configured

__all__ = [
    "MIN_COVERAGE",
    "Answer",
    "Citation",
    "answer_cache_key",
    "answer_compose",
    "topic_answer",
]

logger = logging.getLogger(__name__)

# The share of the question's idf weight the best paper must hold for an answer (calibrated
# with bench/bench_ask.py: answerable questions of the reference topic score 0.51 and more,
# off-topic ones 0.31 and less).
MIN_COVERAGE = 0.4
# How much a sentence's score owes to its paper's rank (the rest to the sentence itself).
PAPER_WEIGHT = 0.4
MAX_SENTENCES = 4
MAX_PAPERS = 3
MAX_SENTENCES_PER_PAPER = 2
# A sentence joins the answer only when it scores at least this share of the best one.
MIN_RELATIVE_SCORE = 0.5
# Papers and sentences per paper the generator is given.
GENERATOR_PAPERS = 5
GENERATOR_SENTENCES = 3
CACHE_VERSION = 1

NO_ANSWER_TEXT = (
    "Nothing in this topic's papers is relevant enough to answer this question. "
    "Try asking a broader topic, or searching the whole site."
)
_MARKER_GROUP = re.compile(r"\[\s*(\d+(?:\s*,\s*\d+)*)\s*\]")
_CITATION = re.compile(r"\[(\d+)\]")


@dataclass
class Citation:
    """A cited paper: ``number`` as in the answer's ``[n]`` markers, ``id`` its arXiv
    identifier (or ``local:<pk>`` for a paper from outside arXiv, as in the API), ``url`` the
    path of its page on this site."""

    number: int
    id: str
    title: str
    url: str


@dataclass
class Answer:
    """An answer about ``topic`` (slug) to ``question``.

    ``answer``: plain text with ``[n]`` citation markers; ``citations`` in order of relevance
    (numbers 1, 2, ...); ``mode``: ``"extractive"`` or ``"generated"``; ``found``: False when
    nothing relevant was found (then no citations, and ``suggestions``: ``{"label", "url"}``
    places to ask instead); ``fallback_reason``: why a configured generator was not used;
    ``cached``: served from the cache; ``took_ms``: time to answer this call (ms);
    ``backend``: the retrieval path (``"postgresql"`` or ``"python"``); ``coverage``: the
    share (0-1) of the question's idf weight the best candidate paper holds.
    """

    topic: str
    question: str
    answer: str
    citations: list[Citation]
    mode: str = "extractive"
    found: bool = True
    fallback_reason: str = ""
    suggestions: list[dict] = field(default_factory=list)
    backend: str = ""
    coverage: float = 0.0
    cached: bool = False
    took_ms: int = 0

    def segments(self) -> list[tuple[str, int | None]]:
        """The answer as ``(text, None)`` and ``(marker, number)`` pieces, for templates that
        link each citation marker while escaping everything else."""
        numbers = {citation.number for citation in self.citations}
        pieces: list[tuple[str, int | None]] = []
        position = 0
        for match in _CITATION.finditer(self.answer):
            number = int(match.group(1))
            if number not in numbers:
                continue
            if match.start() > position:
                pieces.append((self.answer[position : match.start()], None))
            pieces.append((match.group(0), number))
            position = match.end()
        if position < len(self.answer):
            pieces.append((self.answer[position:], None))
        return pieces

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Answer:
        data = dict(data)
        data["citations"] = [Citation(**citation) for citation in data["citations"]]
        return cls(**data)


@dataclass
class _Sentence:
    paper_index: int
    position: int
    text: str
    score: float = 0.0


def answer_cache_key(*, topic: Topic, question: str, version: str) -> str:
    """The cache key of an answer: topic, data version, normalised question and the
    generator setting (an answer made without the generator is not served once it is set)."""
    generator = (
        f"{settings.ASK_LLM_BASE_URL}|{settings.ASK_LLM_MODEL}" if generator_configured() else ""
    )
    digest = hashlib.sha256(
        f"{version}|{generator}|{text.normalise_question(question)}".encode()
    ).hexdigest()[:32]
    return f"ask:answer:v{CACHE_VERSION}:{topic.pk}:{digest}"


def _coverage(paper_terms: set[str], weights: dict[str, float]) -> float:
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    return sum(weight for term, weight in weights.items() if term in paper_terms) / total


def _scored_sentences(
    retrieval: selectors.Retrieval,
) -> tuple[list[_Sentence], float]:
    """Every sentence of the candidates' abstracts, scored, best first; and the best paper's
    coverage of the question."""
    documents = max(retrieval.documents, 1)
    weights = {
        term: text.idf(retrieval.document_frequency.get(term, 0), documents)
        for term in retrieval.terms
    }
    best_coverage = 0.0
    top_rank = max((paper.ask_score for paper in retrieval.papers), default=0.0) or 1.0
    sentences: list[_Sentence] = []
    bags: list[Counter] = []
    paper_signal: list[float] = []
    for index, paper in enumerate(retrieval.papers):
        paper_terms = set(text.terms(paper.title)) | set(text.terms(paper.abstract))
        coverage = _coverage(paper_terms, weights)
        best_coverage = max(best_coverage, coverage)
        paper_signal.append(0.5 * paper.ask_score / top_rank + 0.5 * coverage)
        for position, sentence in enumerate(text.sentences(text.strip_markers(paper.abstract))):
            sentences.append(_Sentence(paper_index=index, position=position, text=sentence))
            bags.append(Counter(text.terms(sentence)))
    if not sentences:
        return [], best_coverage
    lengths = [sum(bag.values()) for bag in bags]
    average = sum(lengths) / len(lengths)
    raw = [
        text.bm25(retrieval.terms, bag, length=length, average_length=average, weights=weights)
        for bag, length in zip(bags, lengths, strict=True)
    ]
    top = max(raw) or 1.0
    for sentence, score in zip(sentences, raw, strict=True):
        if score > 0:
            sentence.score = (1 - PAPER_WEIGHT) * score / top + PAPER_WEIGHT * paper_signal[
                sentence.paper_index
            ]
    ranked = [sentence for sentence in sentences if sentence.score > 0]
    ranked.sort(key=lambda s: (-s.score, s.paper_index, s.position))
    return ranked, best_coverage


def _choose(ranked: list[_Sentence]) -> dict[int, list[_Sentence]]:
    """Paper index -> its chosen sentences, papers in order of relevance (their best
    sentence). Breadth first: the best sentence of each of up to ``MAX_PAPERS`` papers, then
    second sentences, up to ``MAX_SENTENCES`` in all and ``MAX_SENTENCES_PER_PAPER`` a paper;
    every sentence scoring at least ``MIN_RELATIVE_SCORE`` of the best."""
    floor = MIN_RELATIVE_SCORE * ranked[0].score
    eligible = [sentence for sentence in ranked if sentence.score >= floor]
    chosen: dict[int, list[_Sentence]] = {}
    for sentence in eligible:
        if sentence.paper_index not in chosen and len(chosen) < MAX_PAPERS:
            chosen[sentence.paper_index] = [sentence]
    count = len(chosen)
    for sentence in eligible:
        if count >= MAX_SENTENCES:
            break
        picked = chosen.get(sentence.paper_index)
        if picked is None or sentence in picked or len(picked) >= MAX_SENTENCES_PER_PAPER:
            continue
        picked.append(sentence)
        count += 1
    return chosen


def _citation(number: int, paper) -> Citation:
    return Citation(
        number=number, id=paper.identifier, title=paper.title, url=paper.get_absolute_url()
    )


def _suggestions(topic: Topic, question: str) -> list[dict]:
    """Where to ask instead: the search page over all papers (``/search/?q=``), and the
    parent topic."""
    search = reverse("topics:search")
    query = words_query(question)
    suggestions = [{"label": "Search all papers", "url": f"{search}?{urlencode({'q': query})}"}]
    parent = Topic.objects.active().filter(pk=topic.parent_id).first() if topic.parent_id else None
    if parent is not None:
        url = reverse("ask:topic", kwargs={"slug": parent.slug})
        suggestions.append(
            {"label": f"Ask {parent.display_name}", "url": f"{url}?{urlencode({'q': question})}"}
        )
    return suggestions


def _renumber_generated(answer: str, valid: set[int]) -> tuple[str, list[int]]:
    """The generated ``answer`` with markers for numbers outside ``valid`` removed and the
    rest renumbered 1, 2, ... in passage order; returns the text and the passage numbers kept,
    in their new order."""
    used = sorted(
        {
            int(number)
            for group in _MARKER_GROUP.findall(answer)
            for number in group.split(",")
            if int(number) in valid
        }
    )
    new_number = {old: new for new, old in enumerate(used, start=1)}

    def replace(match: re.Match) -> str:
        numbers = [int(n) for n in match.group(1).split(",")]
        kept = [f"[{new_number[n]}]" for n in dict.fromkeys(numbers) if n in new_number]
        return "".join(kept)

    rewritten = _MARKER_GROUP.sub(replace, answer)
    rewritten = re.sub(r"[ \t]+([.,;:!?])", r"\1", re.sub(r"[ \t]{2,}", " ", rewritten))
    return rewritten.strip(), used


def _generate(
    base: Answer, question: str, papers: list, chosen_order: list[int], ranked: list[_Sentence]
) -> Answer:
    """The generated answer from the ``GENERATOR_PAPERS`` best papers' best sentences, or
    ``base`` (extractive) with ``fallback_reason`` set when the generator fails."""
    passages = []
    by_paper: dict[int, list[_Sentence]] = {}
    for sentence in ranked:
        by_paper.setdefault(sentence.paper_index, []).append(sentence)
    order = chosen_order + [i for i in by_paper if i not in chosen_order]
    order = order[:GENERATOR_PAPERS]
    for number, index in enumerate(order, start=1):
        best = sorted(by_paper[index][:GENERATOR_SENTENCES], key=lambda s: s.position)
        passages.append(
            Passage(
                number=number,
                title=papers[index].title,
                text=" ".join(sentence.text for sentence in best),
            )
        )
    try:
        generated = generator_answer(question=question, passages=passages)
    except GeneratorError as error:
        logger.warning("ask: generator failed, extractive answer instead: %s", error)
        return dataclasses.replace(base, fallback_reason=f"{error}; extractive answer given")
    rewritten, used = _renumber_generated(generated, set(range(1, len(passages) + 1)))
    if not used:
        return dataclasses.replace(
            base,
            fallback_reason="the generator's answer cited no retrieved paper; "
            "extractive answer given",
        )
    citations = [_citation(new, papers[order[old - 1]]) for new, old in enumerate(used, start=1)]
    return dataclasses.replace(base, answer=rewritten, citations=citations, mode="generated")


def answer_compose(
    *, topic: Topic, question: str, retrieval: selectors.Retrieval | None = None
) -> Answer:
    """Compose the answer (no cache): retrieval (``retrieval`` if given, else
    :func:`ask.selectors.topic_papers_for_question`), passages, extractive answer or no
    answer, then the generator when configured. Returns an :class:`Answer`."""
    if retrieval is None:
        retrieval = selectors.topic_papers_for_question(topic=topic, question=question)
    ranked, coverage = _scored_sentences(retrieval)
    if not ranked or coverage < MIN_COVERAGE:
        return Answer(
            topic=topic.slug,
            question=question,
            answer=NO_ANSWER_TEXT,
            citations=[],
            found=False,
            suggestions=_suggestions(topic, question),
            backend=retrieval.backend,
            coverage=round(coverage, 3),
        )
    chosen = _choose(ranked)
    order = list(chosen)
    citations = [
        _citation(number, retrieval.papers[index]) for number, index in enumerate(order, 1)
    ]
    parts = []
    for number, index in enumerate(order, start=1):
        for sentence in sorted(chosen[index], key=lambda s: s.position):
            parts.append(f"{sentence.text} [{number}]")
    answer = Answer(
        topic=topic.slug,
        question=question,
        answer=" ".join(parts),
        citations=citations,
        backend=retrieval.backend,
        coverage=round(coverage, 3),
    )
    if generator_configured():
        answer = _generate(answer, question, retrieval.papers, order, ranked)
    return answer


def topic_answer(*, topic: Topic, question: str, use_cache: bool = True) -> Answer:
    """Answer ``question`` (plain text, already length-checked) from ``topic``'s papers.

    Returns an :class:`Answer`. Served from the cache when the same normalised question was
    answered for the same topic data (one query for the data version, none for retrieval);
    otherwise composed and cached for ``ASK_CACHE_SECONDS`` (answers that fell back from a
    failing generator for a minute only, so that a recovered generator is used again).
    Never raises for generator failures; database errors propagate.
    """
    started = time.perf_counter()
    question = " ".join(question.split())
    key = None
    if use_cache:
        key = answer_cache_key(
            topic=topic, question=question, version=selectors.ask_data_version(topic=topic)
        )
        stored = cache.get(key)
        if stored is not None:
            answer = Answer.from_dict(stored)
            answer.question = question
            answer.cached = True
            answer.took_ms = round((time.perf_counter() - started) * 1000)
            return answer
    answer = answer_compose(topic=topic, question=question)
    if key is not None:
        timeout = 60 if answer.fallback_reason else settings.ASK_CACHE_SECONDS
        cache.set(key, answer.to_dict(), timeout)
    answer.took_ms = round((time.perf_counter() - started) * 1000)
    return answer
