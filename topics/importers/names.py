"""Starting rule queries from names: a topic's name and description as quoted phrases joined
by OR, for taxonomy imports to give each imported topic a rule curators then refine."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..tagging.rules import fold

__all__ = ["MAX_RULE_TERMS", "rule_query_from_name"]

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


def rule_query_from_name(name: str, *, description: str = "") -> str:
    """A starting rule query for a topic, built from its name and description, for curators to
    refine: quoted phrases joined by OR.

    The phrases are the name itself, the terms of two to four words the name joins ("Tool Use"
    in "RL for Tool Use"), and, from the first sentence of ``description``, the terms it lists
    ("...including backpropagation learning, self-organizing maps, ...") and acronyms given
    in parentheses; generic words ("techniques", "advances in") are trimmed; each phrase also
    comes with its last word in the other number ("GUI agent" for "GUI Agents") and, when
    hyphenated, without hyphens. At most :data:`MAX_RULE_TERMS` terms before variants.
    Returns ``""`` for a blank name. The result always parses (``topics.tagging.rules``).
    """
    words = [word for word in name.replace('"', " ").split() if any(c.isalnum() for c in word)]
    terms = [" ".join(words)] if words else []
    terms.extend(_terms(name.replace('"', " ")))
    if description.strip():
        first_sentence = re.split(r"(?<=[a-z0-9)])\.\s", description.strip(), maxsplit=1)[0]
        first_sentence = _DESCRIPTION_PREAMBLE.sub("", first_sentence.replace('"', " "))
        terms.extend(_terms(first_sentence))
    phrases: dict[str, str] = {}
    for term in terms:
        if len({fold(key) for key in phrases}) >= MAX_RULE_TERMS and fold(term) not in phrases:
            break
        for variant in (term, _plural_variant(term)):
            if variant is None:
                continue
            for form in (variant, variant.replace("-", " ")) if "-" in variant else (variant,):
                phrases.setdefault(fold(form), form)
    return " OR ".join(f'"{phrase}"' for phrase in phrases.values())
