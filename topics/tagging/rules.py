"""A topic rule's keyword query: a small query language over a paper's title and abstract.

Syntax (operators are written in capitals; lowercase ``or``/``and``/``not`` are ordinary words):

- ``agent`` a bare word; ``"reinforcement learning"`` a phrase (its words in order, any
  whitespace between them); ``agent*`` a word prefix (``agent``, ``agents``, ``agentic``);
- ``a b`` or ``a AND b`` both; ``a OR b`` either; ``NOT a`` or ``-a`` not; ``( ... )`` groups.
- Precedence: ``NOT`` binds tighter than ``AND``, which binds tighter than ``OR``:
  ``a b OR NOT c d`` reads ``(a AND b) OR ((NOT c) AND d)``.

Matching is case-insensitive (Unicode case folding after NFKC normalisation, so ``STRASSE``
matches ``Straße`` and a decomposed ``ö`` matches a composed one) and respects word boundaries:
``agent`` does not match ``reagent`` nor ``agents``. A term may contain punctuation
(``gpt-4``, ``c++``); it must then appear with that punctuation.

Syntax errors raise :class:`RuleSyntaxError` with the 0-based character position in the query.
Plain Python, no Django: the tagging engine compiles each rule once per batch and calls
:meth:`Rule.matches_folded` on text folded once per paper with :func:`fold`; with many rules it
looks up the ones that may match a paper in a :class:`RuleIndex`.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = [
    "And",
    "Not",
    "Or",
    "QueryNode",
    "Rule",
    "RuleIndex",
    "RuleSyntaxError",
    "compile_rule",
    "Term",
    "fold",
    "parse_query",
    "rule_index",
    "rule_terms",
]

OPERATORS = frozenset({"AND", "OR", "NOT"})
# Characters that end a bare word; everything else (letters, digits, "-", "+", ".") is kept.
_WORD_END = re.compile(r'[\s()"]')
# Boundaries by lookaround rather than \b, so terms that start or end with punctuation ("c++")
# still need a non-word character (or the text's edge) on each side.
_AFTER = r"(?!\w)"


class RuleSyntaxError(ValueError):
    """A rule query is malformed.

    ``position`` is the 0-based character offset in the query where the problem is (for a
    dangling operator, the operator; for an unclosed parenthesis or quote, the opening one);
    ``message`` says what is wrong. ``str(error)`` reads "<message> at position <n>".
    """

    def __init__(self, message: str, position: int):
        self.message = message
        self.position = position
        super().__init__(f"{message} at position {position}")


def fold(text: str) -> str:
    """Normalise ``text`` for matching: NFKC, then Unicode case folding. Returns a new str."""
    return unicodedata.normalize("NFKC", text).casefold()


@dataclass(frozen=True)
class _Token:
    kind: str  # "word", "phrase", "lparen", "rparen", "and", "or", "not", "end"
    text: str
    position: int


def _tokenize(query: str) -> list[_Token]:
    tokens: list[_Token] = []
    index = 0
    length = len(query)
    while index < length:
        char = query[index]
        if char.isspace():
            index += 1
        elif char == "(":
            tokens.append(_Token("lparen", char, index))
            index += 1
        elif char == ")":
            tokens.append(_Token("rparen", char, index))
            index += 1
        elif char == '"':
            close = query.find('"', index + 1)
            if close == -1:
                raise RuleSyntaxError("unclosed quote", index)
            phrase = query[index + 1 : close]
            if not phrase.strip():
                raise RuleSyntaxError("empty quotes", index)
            tokens.append(_Token("phrase", phrase, index))
            index = close + 1
        elif char == "-" and (index + 1 >= length or query[index + 1].isspace()):
            raise RuleSyntaxError("'-' must be followed directly by a term", index)
        elif char == "-":
            # A leading minus negates the term, group or phrase right after it ("-word").
            tokens.append(_Token("not", char, index))
            index += 1
        else:
            match = _WORD_END.search(query, index)
            end = match.start() if match else length
            word = query[index:end]
            if word in OPERATORS:
                tokens.append(_Token(word.lower(), word, index))
            else:
                tokens.append(_Token("word", word, index))
            index = end
    tokens.append(_Token("end", "", length))
    return tokens


MAX_NESTING = 50

# The parsed query is a tree of tuples: ("term", regex, literal, kind, text) | ("not", node) |
# ("and"|"or", [nodes]); ``literal`` is a substring every match contains; ``kind`` is "word",
# "prefix" or "phrase" and ``text`` the folded word, stem or phrase (words one space apart).
_Node = tuple


class _Parser:
    """Recursive descent over tokens, one method per precedence level (OR < AND < NOT)."""

    def __init__(self, query: str):
        self.tokens = _tokenize(query)
        self.index = 0
        self.depth = 0

    def nest(self, token: _Token) -> None:
        """Count one more level of NOT or parentheses; refuse queries nested absurdly deep,
        which no curator writes and which would exhaust Python's recursion limit."""
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise RuleSyntaxError(f"nested more than {MAX_NESTING} levels deep", token.position)

    @property
    def current(self) -> _Token:
        return self.tokens[self.index]

    def advance(self) -> _Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def parse(self) -> _Node | None:
        if self.current.kind == "end":
            return None
        node = self.parse_or()
        # parse_or stops only at the end or at a ")" that no "(" opened.
        if self.current.kind == "rparen":
            raise RuleSyntaxError("')' without a matching '('", self.current.position)
        return node

    def parse_or(self) -> _Node:
        if self.current.kind == "or":
            raise RuleSyntaxError("OR needs a term before it", self.current.position)
        operands = [self.parse_and()]
        while self.current.kind == "or":
            operator = self.advance()
            operands.append(self.parse_and(after=operator))
        return operands[0] if len(operands) == 1 else ("or", operands)

    def parse_and(self, after: _Token | None = None) -> _Node:
        if self.current.kind == "and":
            raise RuleSyntaxError("AND needs a term before it", self.current.position)
        operands = [self.parse_not(after=after)]
        while self.current.kind in ("and", "not", "word", "phrase", "lparen"):
            operator = self.advance() if self.current.kind == "and" else None
            operands.append(self.parse_not(after=operator))
        return operands[0] if len(operands) == 1 else ("and", operands)

    def parse_not(self, after: _Token | None = None) -> _Node:
        if self.current.kind == "not":
            operator = self.advance()
            self.nest(operator)
            node = ("not", self.parse_not(after=operator))
            self.depth -= 1
            return node
        return self.parse_primary(after=after)

    def parse_primary(self, after: _Token | None) -> _Node:
        token = self.current
        if token.kind == "word":
            self.advance()
            return _word_term(token)
        if token.kind == "phrase":
            self.advance()
            return _phrase_term(token)
        if token.kind == "lparen":
            self.advance()
            self.nest(token)
            if self.current.kind == "rparen":
                raise RuleSyntaxError("empty parentheses", token.position)
            if self.current.kind == "end":
                raise RuleSyntaxError("'(' is never closed", token.position)
            node = self.parse_or()
            if self.current.kind != "rparen":
                raise RuleSyntaxError("'(' is never closed", token.position)
            self.advance()
            self.depth -= 1
            return node
        # Anything else where a term belongs: blame the operator left dangling, if any.
        if after is not None and token.kind in ("end", "rparen", "or", "and"):
            raise RuleSyntaxError(f"{_operator_name(after)} needs a term after it", after.position)
        if token.kind == "rparen":
            raise RuleSyntaxError("')' without a matching '('", token.position)
        raise RuleSyntaxError(f"expected a term, found {token.text or 'the end'!r}", token.position)


def _operator_name(token: _Token) -> str:
    return "'-'" if token.text == "-" else token.text


def _word_term(token: _Token) -> _Node:
    word = token.text
    if word == "*":
        raise RuleSyntaxError("'*' must end a word of at least one character", token.position)
    if "*" in word[:-1]:
        raise RuleSyntaxError("'*' is only allowed at the end of a word", token.position)
    if word.endswith("*"):
        stem = fold(word[:-1])
        return ("term", _starting(stem) + r"\w*" + _AFTER, stem, "prefix", stem)
    folded = fold(word)
    return ("term", _starting(folded) + _AFTER, folded, "word", folded)


def _phrase_term(token: _Token) -> _Node:
    words = fold(token.text).split()
    if not words:
        raise RuleSyntaxError("empty quotes", token.position)
    rest = "".join(r"\s+" + re.escape(word) for word in words[1:])
    return ("term", _starting(words[0]) + rest + _AFTER, words[0], "phrase", " ".join(words))


def _starting(literal: str) -> str:
    """A pattern matching ``literal`` where no word character stands before it.

    The same as ``(?<!\\w)literal`` but with the check after the literal (a look-behind over
    the character before it and the literal itself): a pattern that begins with a literal lets
    the regular-expression engine scan for it in C, where a leading look-behind is tried at
    every position of the text; 40 times faster on an abstract holding the literal inside a
    longer word."""
    return re.escape(literal) + r"(?<!\w.{" + str(len(literal)) + "})"


def _build(node: _Node) -> Callable[[str], bool]:
    kind = node[0]
    if kind == "term":
        search, literal = re.compile(node[1]).search, node[2]
        # The substring test runs in C and rules out most texts before the regex (whose
        # leading lookbehind makes it try every position) has to run.
        return lambda text: literal in text and search(text) is not None
    if kind == "not":
        inner = _build(node[1])
        return lambda text: not inner(text)
    parts = [_build(child) for child in node[1]]
    if kind == "and":
        return lambda text: all(part(text) for part in parts)
    return lambda text: any(part(text) for part in parts)


def _needs(node: _Node) -> frozenset[str] | None:
    """Literals of which any text ``node`` matches holds one as a substring (every term's
    pattern starts with its literal): a term's own; any of an OR's children's, if each has
    some; the fewest of an AND's children's; ``None`` for a negation, which a text matches by
    lacking its words."""
    kind = node[0]
    if kind == "term":
        return frozenset((node[2],)) if node[2] else None
    if kind == "not":
        return None
    needed = [_needs(child) for child in node[1]]
    if kind == "or":
        if any(literals is None for literals in needed):
            return None
        return frozenset().union(*needed)
    known = [literals for literals in needed if literals is not None]
    return min(known, key=len) if known else None


class Rule:
    """A compiled keyword query. Build with :func:`compile_rule`.

    ``query`` is the source text; ``is_empty`` is true for a blank query, which matches every
    text (the topic then filters by categories only).
    """

    __slots__ = ("query", "is_empty", "needs", "_match")

    def __init__(self, query: str, tree: _Node | None):
        self.query = query
        self.is_empty = tree is None
        # Folded literals of which a text the query matches holds at least one as a
        # substring; None when no literal is needed (a blank query, or a negation).
        self.needs: frozenset[str] | None = None if tree is None else _needs(tree)
        self._match = (lambda text: True) if tree is None else _build(tree)

    def matches(self, text: str) -> bool:
        """True when ``text`` (any case, any Unicode normal form) satisfies the query."""
        return self._match(fold(text))

    def matches_folded(self, folded: str) -> bool:
        """Like :meth:`matches` for text already passed through :func:`fold` (saves re-folding
        the same title and abstract for every topic)."""
        return self._match(folded)

    def __repr__(self):
        return f"Rule({self.query!r})"


@dataclass(frozen=True)
class Term:
    """A term of a parsed query: ``kind`` ``"word"``, ``"prefix"`` (``agent*``, ``text`` the
    stem) or ``"phrase"`` (``text`` its words one space apart); ``text`` is folded."""

    kind: str
    text: str


@dataclass(frozen=True)
class Not:
    operand: QueryNode


@dataclass(frozen=True)
class And:
    operands: tuple[QueryNode, ...]


@dataclass(frozen=True)
class Or:
    operands: tuple[QueryNode, ...]


QueryNode = Term | Not | And | Or


def _public(node: _Node) -> QueryNode:
    kind = node[0]
    if kind == "term":
        return Term(node[3], node[4])
    if kind == "not":
        return Not(_public(node[1]))
    operands = tuple(_public(child) for child in node[1])
    return And(operands) if kind == "and" else Or(operands)


def parse_query(query: str) -> QueryNode | None:
    """``query`` (the syntax above) as a tree of :class:`Term`, :class:`Not`, :class:`And` and
    :class:`Or`; ``None`` for a blank query. The one parser behind topic rules, saved
    searches, the search page and the API's ``q``, so all four take the same language and
    give the same errors. Raises :class:`RuleSyntaxError` as :func:`compile_rule` does."""
    tree = _Parser(query).parse()
    return None if tree is None else _public(tree)


def compile_rule(query: str) -> Rule:
    """Parse and compile ``query`` (see the module docstring for the syntax) into a :class:`Rule`.

    Each term becomes one compiled regular expression, so compile once and match many texts.
    Raises :class:`RuleSyntaxError` (a ``ValueError``) with the 0-based position of the error:
    unbalanced parentheses, a dangling ``OR``/``AND``/``NOT``/``-``, empty quotes or
    parentheses, an unclosed quote, a misplaced ``*``, nesting deeper than ``MAX_NESTING``.
    """
    return Rule(query, _Parser(query).parse())


# --- the rule index ----------------------------------------------------------------------

# A query made only of terms joined by OR: quoted phrases and plain words (what
# rule_query_from_name builds, and most curated rules).
_OR_OF_TERMS = re.compile(r'\s*(?:"[^"]*"|[^\s()"]+)(?:\s+OR\s+(?:"[^"]*"|[^\s()"]+))*\s*')
_QUERY_TERM = re.compile(r'"([^"]*)"|([^\s()"]+)')
_WORD_RUN = re.compile(r"\w+")


@functools.lru_cache(maxsize=65536)
def rule_terms(query: str) -> tuple[frozenset[str], ...] | None:
    """For each term of a rule query, the runs of word characters (folded) of its words, all
    of which a text the term matches contains as whole ``\\w+`` runs; ``None`` when the query is
    not only terms joined by OR, or a term is a prefix (``agent*``) or a negation, or has no
    word character. Cached: rules are few and change rarely.

    A phrase or word term matches only where its words stand between whitespace or non-word
    characters (above), so every run of word characters inside them (``self`` and
    ``improving`` of ``self-improving``) is a whole run of the text: a paper whose runs hold
    all the runs of no term cannot match, and the rule need not be tried.
    """
    if not _OR_OF_TERMS.fullmatch(query):
        return None
    terms = []
    for phrase, word in _QUERY_TERM.findall(query):
        if word == "OR":
            continue
        if word in ("AND", "NOT") or word.startswith("-") or word.endswith("*"):
            return None
        runs = frozenset(_WORD_RUN.findall(fold(phrase or word)))
        if not runs:
            return None
        terms.append(runs)
    return tuple(terms) or None


@dataclass(frozen=True)
class RuleIndex:
    """Rules by word, so a tagger with many rules tries on a paper only those that may match
    it: for each rule term, under its longest word run (likely the rarest), the rule's position
    in the list the index was built from and all the term's runs; and the positions to try on
    every paper (empty queries, matching by categories alone, and queries that cannot be
    indexed, see :func:`rule_terms`). Build with :meth:`build` or :func:`rule_index`."""

    by_word: dict[str, tuple[tuple[int, frozenset[str]], ...]]
    words: frozenset[str]
    always: tuple[int, ...]

    @classmethod
    def build(cls, rules: Sequence[Rule]) -> RuleIndex:
        """Index ``rules``; positions in the index are positions in ``rules``."""
        by_word: dict[str, list[tuple[int, frozenset[str]]]] = defaultdict(list)
        always = []
        for position, rule in enumerate(rules):
            terms = None if rule.is_empty else rule_terms(rule.query)
            if terms is None:
                always.append(position)
            for runs in terms or ():
                by_word[max(runs, key=lambda run: (len(run), run))].append((position, runs))
        return cls(
            by_word={word: tuple(found) for word, found in by_word.items()},
            words=frozenset(by_word),
            always=tuple(always),
        )

    def candidates(self, folded: str) -> set[int]:
        """Positions of the rules that may match the folded text."""
        positions = set(self.always)
        runs = set(_WORD_RUN.findall(folded))
        for word in runs & self.words:
            for position, term_runs in self.by_word[word]:
                if term_runs <= runs:
                    positions.add(position)
        return positions


@dataclass(frozen=True)
class LiteralIndex:
    """Rules by the literals they need (:attr:`Rule.needs`), for a tagger with few rules:
    one substring test per distinct literal (in C) tells which rules a paper may match, where
    trying each rule costs a Python call per term. Positions are positions in the list the
    index was built from; ``always``: rules needing no literal (blank queries, negations).
    Build with :meth:`build`."""

    literals: tuple[tuple[str, tuple[int, ...]], ...]
    always: frozenset[int]

    @classmethod
    def build(cls, rules: Sequence[Rule]) -> LiteralIndex:
        by_literal: dict[str, list[int]] = defaultdict(list)
        always = set()
        for position, rule in enumerate(rules):
            if rule.needs is None:
                always.add(position)
            for literal in rule.needs or ():
                by_literal[literal].append(position)
        return cls(
            literals=tuple((literal, tuple(found)) for literal, found in by_literal.items()),
            always=frozenset(always),
        )

    def candidates(self, folded: str) -> set[int]:
        """Positions of the rules that may match the folded text (a superset of those that
        do)."""
        positions = set(self.always)
        for literal, found in self.literals:
            if literal in folded:
                positions.update(found)
        return positions


@functools.lru_cache(maxsize=4)
def rule_index(rules: tuple[Rule, ...]) -> RuleIndex:
    """:meth:`RuleIndex.build`, once per process and set of rules."""
    return RuleIndex.build(rules)
