"""Plain-Python text handling for asking a topic: words, light stemming, sentences and BM25.

Knows nothing of Django, so it can be tested and reused alone. Scores follow Okapi BM25
(Robertson and Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond", 2009) with
the usual ``k1 = 1.2`` and ``b = 0.75``.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping

__all__ = [
    "BM25_B",
    "BM25_K1",
    "bm25",
    "idf",
    "normalise_question",
    "question_terms",
    "sentences",
    "stem",
    "strip_markers",
    "surface_words",
    "terms",
]

BM25_K1 = 1.2
BM25_B = 0.75

# Words that say nothing about a paper's subject, including the words questions are made of
# ("which papers propose ...?"). Dropped from questions and texts before matching.
STOPWORDS = frozenset(
    """a about above after again against all also am an and any are aren as at be because been
    before being below between both but by can cannot could did do does doing done down during
    each either else etc few for from further get gets got had has have having he her here hers
    how however i if in into is isn it its itself just let lets many may me might more most
    much must my neither no nor not now of off on once one only or other others our ours out
    over own per same several she should so some such than that the their theirs them then
    there these they this those through thus to too toward towards under until up upon us use
    used uses using very via was we were what whatever when where whether which while who whom
    whose why will with within without would yet you your yours

    paper papers work works study studies propose proposes proposed present presents show
    shows shown approach approaches method methods new novel existing recent recently
    tell explain describe anyone someone something thing things way ways kind kinds
    anything everything nothing anybody somebody everybody please know find finds found look
    looking want need help give list lists mention mentions mentioned discuss discusses
    research researcher researchers topic topics question questions answer answers""".split()
)
# Hyphenated compounds count as their parts ("multi-turn" is "multi" and "turn").
_WORD = re.compile(r"[a-z0-9]+")
# A citation-looking marker ("[3]", "[1, 2]", "[12-14]") inside a paper's own text: removed so
# that an abstract cannot pass one off as a citation of ours.
_MARKER = re.compile(r"\[\s*\d+(?:\s*[-,–]\s*\d+)*\s*\]")
# Abbreviations whose full stop does not end a sentence.
_ABBREVIATIONS = re.compile(
    r"\b(e\.g|i\.e|et al|etc|vs|cf|fig|figs|eq|eqs|approx|resp|dr|prof)\.",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_PROTECTED_DOT = "\u2024"  # one-dot leader: stands in for a protected full stop while splitting


def _fold(text: str) -> str:
    """Lower case, accents removed (NFKD), so "Café" and "cafe" are the same word."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light English stemmer: plural and ``-ing``/``-ed`` endings and a final ``e`` removed,
    so "trains", "training", "trained" and "train" meet, as do "measure" and "measured".

    ``word`` is lower case. Deliberately weaker than Porter's: it never merges words with
    different meanings that a reader would keep apart ("agentic" stays apart from "agent").
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is", "ias")):
        word = word[:-1]
    for ending in ("ing", "ed"):
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            word = word[: -len(ending)]
            # "running" -> "runn" -> "run"; "fill" and "pass" keep their double letter.
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


def surface_words(text: str) -> list[str]:
    """The content words of ``text`` as written (case folded, accents removed), in order,
    repeats kept; stopwords and one-character words dropped."""
    return [word for word in _WORD.findall(_fold(text)) if len(word) > 1 and word not in STOPWORDS]


def terms(text: str) -> list[str]:
    """The stemmed content words of ``text``, in order, repeats kept (stopwords dropped)."""
    return [stem(word) for word in surface_words(text)]


def question_terms(question: str) -> list[str]:
    """The distinct stemmed content words of ``question``, in the order they first appear."""
    return list(dict.fromkeys(terms(question)))


def normalise_question(question: str) -> str:
    """The question as a cache key sees it: case folded, accents and punctuation removed,
    whitespace collapsed ("What is  GRPO?" and "what is grpo" are the same question)."""
    return " ".join(_WORD.findall(_fold(question)))


def strip_markers(text: str) -> str:
    """``text`` without citation-looking markers such as ``[3]`` or ``[1, 2]``, whitespace
    tidied."""
    return re.sub(r"\s+([.,;:])", r"\1", re.sub(r"\s{2,}", " ", _MARKER.sub("", text))).strip()


def sentences(text: str) -> list[str]:
    """``text`` split into sentences at ``.``, ``!`` or ``?`` followed by space and a capital
    letter or digit; abbreviations ("e.g.", "et al.") and decimals do not end a sentence.
    Blank sentences are dropped."""
    protected = _ABBREVIATIONS.sub(lambda m: m.group(0)[:-1] + _PROTECTED_DOT, text)
    parts = _SENTENCE_END.split(" ".join(protected.split()))
    return [part.replace(_PROTECTED_DOT, ".").strip() for part in parts if part.strip()]


def idf(document_frequency: int, documents: int) -> float:
    """BM25's inverse document frequency, always positive: ``ln(1 + (N - df + 0.5) / (df +
    0.5))`` for a term in ``document_frequency`` of ``documents`` documents."""
    return math.log(1 + (documents - document_frequency + 0.5) / (document_frequency + 0.5))


def bm25(
    query: Iterable[str],
    document: Counter,
    *,
    length: int,
    average_length: float,
    weights: Mapping[str, float],
) -> float:
    """The BM25 score of a document (its term counts and length in terms) for the query terms,
    each weighted by ``weights[term]`` (its idf). Terms without a weight count 0."""
    if average_length <= 0:
        return 0.0
    norm = BM25_K1 * (1 - BM25_B + BM25_B * length / average_length)
    score = 0.0
    for term in query:
        count = document.get(term, 0)
        if count:
            score += weights.get(term, 0.0) * count * (BM25_K1 + 1) / (count + norm)
    return score
