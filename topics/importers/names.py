"""Starting rule queries from names: a topic's name and description as quoted phrases joined
by OR, for taxonomy imports to give each imported topic a rule curators then refine."""

from __future__ import annotations

import csv
import functools
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..tagging.rules import fold

__all__ = [
    "GENERIC_PHRASE_MIN_TOPICS",
    "GENERIC_PHRASES_NAMED",
    "MAX_RULE_TERMS",
    "default_generic_phrases",
    "generic_phrases",
    "is_generic_term",
    "rule_query_from_name",
]

# Where a name or a description's sentence splits into candidate terms: punctuation and the
# words that join terms ("X and Y", "X for Y", "including X").
_TERM_SEPARATORS = re.compile(
    r"[,;:()\[\]/]|\s[-–]\s|(?<![\w-])(?:and|or|in|of|for|on|with|within|using|through|via|from|to|"
    r"by|including|includes|such as|focusing|focuses|focus|covering|covers|explores|"
    r"exploring|examining|examines|addressing|addresses|encompasses|encompassing|revolves|"
    r"around|across|among|between|related|based|particularly|especially|like|as well as|"
    r"about|that|which|whose|involved|associated|affecting|influencing|regarding|"
    r"concerning|towards?|into|at|under|over|during|against|versus|vs|"
    r"the study|the role|the use|the impact|the application|the development|this cluster|"
    r"papers)(?![\w-])",
    re.IGNORECASE,
)
# Words that say nothing about a subject on their own; a term made only of them is dropped,
# and they are trimmed from the start of a term.
_GENERIC_WORDS = frozenset(
    """a an the its their this these those various different diverse recent current key new
    novel advanced advances advancements developments development emerging modern innovative
    effective efficient potential specific several multiple other also both such topics topic
    studies study research researches analysis applications application use uses role impact
    impacts effects effect implications issues challenges aspects perspectives trends wide
    range field fields areas area approaches approach strategies strategy techniques technique
    methods method methodologies technologies technology systems theory theories models
    model management practices practice factors their it including papers cluster""".split()
)
# Trimmed from the end of a term of three words or more ("silicon photonics technology").
_TRAILING_WORDS = frozenset(
    """techniques technique methods method methodologies technologies technology applications
    application approaches strategies research studies advances developments issues
    challenges aspects perspectives trends""".split()
)
_ACRONYM = re.compile(r"[A-Z][A-Za-z0-9]*[A-Z][A-Za-z0-9]*s?")
_DESCRIPTION_PREAMBLE = re.compile(
    r"^\s*this cluster of papers\s+\w+(?:\s+(?:on|around|upon|into))?\s+"
    r"(?:a wide range of topics\s+(?:related to|in|within|on)\s+)?",
    re.IGNORECASE,
)
MAX_RULE_TERMS = 10

# A phrase of two to four words found in the names and descriptions of at least this many
# topics of a taxonomy says what many subjects use, not what one is about ("machine learning"
# is in 108 of OpenAlex's 4,516 topics, "climate change" in 170, "Monte Carlo" in 16; a
# subject's own terms are in one to five: "silicon photonics" 2, "genetic programming" 1).
GENERIC_PHRASE_MIN_TOPICS = 8
# Methods every field borrows that a reference taxonomy may name too rarely to count as
# generic by frequency (OpenAlex: "reinforcement learning" in 4 topics): generic whatever the
# data says. Folded.
GENERIC_PHRASES_NAMED = frozenset(
    {
        "machine learning",
        "artificial intelligence",
        "monte carlo",
        "reinforcement learning",
        "deep learning",
        "neural network",
        "neural networks",
        "data analysis",
        "data mining",
        "big data",
        "statistical analysis",
        "numerical simulation",
        "numerical simulations",
        "signal processing",
        "optimization algorithms",
    }
)
OPENALEX_TOPICS_CSV = (
    Path(__file__).resolve().parent.parent / "data" / "openalex" / "openalex_topics_2024-09.csv"
)
_WORD = re.compile(r"\w+", re.UNICODE)


def _plural_variant(phrase: str) -> str | None:
    """The phrase with its last word in the other number ("GUI agents" <-> "GUI agent"), or
    ``None`` where that is not safe to guess (acronyms, "-ics", "-ss", "-us", "-is", "-ing",
    "-ed")."""
    head, _, last = phrase.rpartition(" ")
    if not last.isalpha() or len(last) <= 3 or last.isupper():
        return None
    lower = last.lower()
    if lower.endswith(("ics", "ss", "us", "is", "ing", "ed")):
        return None
    if lower.endswith("ies"):
        other = last[:-3] + "y"
    elif lower.endswith("s"):
        other = last[:-1]
    elif lower.endswith("y") and lower[-2] not in "aeiou":
        other = last[:-1] + "ies"
    elif lower.endswith(("x", "ch", "sh")):
        other = last + "es"
    else:
        other = last + "s"
    return f"{head} {other}" if head else other


def _terms(text: str) -> Iterator[str]:
    """Candidate terms of ``text``: runs of 2 to 4 words between separators, generic words
    trimmed, or a lone acronym (``ALD``, ``VCSELs``)."""
    for part in _TERM_SEPARATORS.split(text):
        words = [word.strip(".'\"!?*-") for word in part.split()]
        words = [word for word in words if any(char.isalnum() for char in word)]
        while words and words[0].lower() in _GENERIC_WORDS:
            words.pop(0)
        while len(words) > 2 and words[-1].lower() in _TRAILING_WORDS:
            words.pop()
        if len(words) == 1 and len(words[0]) >= 3 and _ACRONYM.fullmatch(words[0]):
            yield words[0]
        elif 2 <= len(words) <= 4 and not all(word.lower() in _GENERIC_WORDS for word in words):
            yield " ".join(words)


def _phrase_words(text: str) -> list[str]:
    """The folded words of ``text`` (hyphens and punctuation split words)."""
    return _WORD.findall(fold(text))


def generic_phrases(
    texts: Iterable[str], *, min_topics: int = GENERIC_PHRASE_MIN_TOPICS
) -> frozenset[str]:
    """The phrases of two to four words (folded, single spaces) that occur in at least
    ``min_topics`` of ``texts`` (one text per topic: its name and description), plus
    :data:`GENERIC_PHRASES_NAMED`. Raises ``ValueError`` for ``min_topics`` < 2."""
    if min_topics < 2:
        raise ValueError(f"min_topics {min_topics!r}: a phrase of one topic is not generic.")
    frequency: Counter[str] = Counter()
    for text in texts:
        words = _phrase_words(text)
        frequency.update(
            {
                " ".join(words[start : start + size])
                for size in (2, 3, 4)
                for start in range(len(words) - size + 1)
            }
        )
    found = {phrase for phrase, count in frequency.items() if count >= min_topics}
    return frozenset(found | GENERIC_PHRASES_NAMED)


@functools.cache
def default_generic_phrases() -> frozenset[str]:
    """:func:`generic_phrases` of OpenAlex's 4,516 topic names and descriptions (the shipped
    ``topics/data/openalex`` table, read once per process): what :func:`rule_query_from_name`
    leaves out unless given another set."""
    with OPENALEX_TOPICS_CSV.open(encoding="utf-8", newline="") as handle:
        return generic_phrases(
            f"{row['topic_name']}. {row['description']}" for row in csv.DictReader(handle)
        )


def is_generic_term(term: str, generic: frozenset[str]) -> bool:
    """Whether ``term`` says nothing specific: once every phrase of ``generic`` (folded
    phrases, :func:`generic_phrases`) it contains is taken out, only generic words are left
    ("machine learning", "deep learning models", "Monte Carlo methods")."""
    variant = _plural_variant(term)
    if variant is not None and " ".join(_phrase_words(variant)) in generic:
        return True  # "Artificial Intelligences"
    return _covered_by(term, generic)


def _covered_by(term: str, generic: frozenset[str]) -> bool:
    words = _phrase_words(term)
    if not words:
        return True
    covered = [False] * len(words)
    for size in (4, 3, 2):
        for start in range(len(words) - size + 1):
            if " ".join(words[start : start + size]) in generic:
                covered[start : start + size] = [True] * size
    if not any(covered):
        return False
    return all(
        done or word in _GENERIC_WORDS or word in _TRAILING_WORDS
        for word, done in zip(words, covered, strict=True)
    )


def rule_query_from_name(
    name: str, *, description: str = "", generic: frozenset[str] | None = None
) -> str:
    """A starting rule query for a topic, built from its name and description, for curators to
    refine: quoted phrases joined by OR.

    The phrases are the name itself, the terms of two to four words the name joins ("Tool Use"
    in "RL for Tool Use"), and, from the first sentence of ``description``, the terms it lists
    ("...including backpropagation learning, self-organizing maps, ...") and acronyms given
    in parentheses; generic words ("techniques", "advances in") are trimmed; each phrase also
    comes with its last word in the other number ("GUI agent" for "GUI Agents") and, when
    hyphenated, without hyphens. At most :data:`MAX_RULE_TERMS` terms before variants.
    Terms that are generic phrases (``generic``, folded; default
    :func:`default_generic_phrases`: phrases in many OpenAlex topics, and
    :data:`GENERIC_PHRASES_NAMED`) are left out, as are terms made of one and generic words
    ("deep learning models", :func:`is_generic_term`): an "IoT applications" topic whose
    description mentions "machine learning" must not tag every machine-learning paper. The
    name itself is always kept (a topic named "Machine Learning" is about it).
    Returns ``""`` for a blank name. The result always parses (``topics.tagging.rules``).
    """
    if generic is None:
        generic = default_generic_phrases()
    words = [word for word in name.replace('"', " ").split() if any(c.isalnum() for c in word)]
    terms = [" ".join(words)] if words else []
    terms.extend(_terms(name.replace('"', " ")))
    if description.strip():
        first_sentence = re.split(r"(?<=[a-z0-9)])\.\s", description.strip(), maxsplit=1)[0]
        first_sentence = _DESCRIPTION_PREAMBLE.sub("", first_sentence.replace('"', " "))
        terms.extend(_terms(first_sentence))
    phrases: dict[str, str] = {}
    for position, term in enumerate(terms):
        if position and is_generic_term(term, generic):
            continue
        if len({fold(key) for key in phrases}) >= MAX_RULE_TERMS and fold(term) not in phrases:
            break
        for variant in (term, _plural_variant(term)):
            if variant is None:
                continue
            for form in (variant, variant.replace("-", " ")) if "-" in variant else (variant,):
                phrases.setdefault(fold(form), form)
    return " OR ".join(f'"{phrase}"' for phrase in phrases.values())
