"""Searching papers by words and by meaning: keyword full text and vector similarity fused
into one ranking, used by ``/api/v1/search/``, the search page and Ask's retrieval.

Three modes (:data:`MODES`):

- ``keyword``: PostgreSQL full-text search over the stored ``search_vector`` (title weight A,
  abstract weight B, 'english'), ranked by ``ts_rank`` within the newest
  :data:`SEARCH_WINDOW` matches (:func:`full_text_ranked`); on the embedded SQLite default,
  every word as a substring, newest first, unranked.
- ``semantic``: the query embedded with the paper encoder
  (``papers.embeddings.encoder.get_encoder().encode([q])``), its nearest papers from the vector
  index (``papers.embeddings.index.nearest``: live papers, cosine similarity) kept when they
  pass the filters (:func:`semantic_ranked`).
- ``hybrid`` (the default): three rankings fused into one by reciprocal rank fusion
  (:func:`fuse`, ``score = sum 1 / (RRF_K + rank)`` over the rankings a paper is in): the
  keyword ranking, the semantic one, and the candidates of both ranked by how many of the
  query's words they hold (:func:`any_word_ranked`; a query in plain words rarely has every
  word in one abstract, so the keyword match alone often finds nothing). Measured on the
  paraphrased queries of ``bench/bench_retrieval.py`` (its docstring has the figures): the
  third ranking lifts hit@1 from 0.72 to 0.80 on vague descriptions; reciprocal rank fusion
  against a mix of normalised scores: see there.

Queries are written in one language everywhere: the topic-rule language of
``topics.tagging.rules`` (words, ``"phrases"``, ``prefix*``, ``AND``, ``OR``, ``NOT`` or
``-word``, parentheses), parsed by its parser (:func:`~topics.tagging.rules.parse_query`) for
topic rules, saved searches, the search page and ``/api/v1/search/`` alike, and turned here
into a PostgreSQL ``tsquery`` (:func:`full_text_match`) where full text stems its words
(``agent`` finds ``agents``) while rules match words exactly.

When the encoder's model files are missing or no paper has a vector yet, ``hybrid`` and
``semantic`` return the keyword ranking and say so (:attr:`SearchResults.mode` is
``keyword``, :attr:`SearchResults.fallback` the reason). A query without a searchable word
(only stopwords or punctuation) finds nothing in every mode: its vector would be noise.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.conf import settings
from django.contrib.postgres.search import SearchQuery
from django.core.exceptions import EmptyResultSet, ValidationError
from django.db import connection, connections
from django.db.models import DateField, F, Func, Q, QuerySet
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from papers.models import Paper, PaperEmbedding
from topicsite.lookups import Ids
from topicsite.planner import planner_rows, planner_table_rows

from .tagging.classifier import tokenize
from .tagging.rules import And, Not, QueryNode, RuleSyntaxError, Term, fold, parse_query

__all__ = [
    "DEFAULT_MODE",
    "MODES",
    "RRF_K",
    "SEARCH_CONFIG",
    "SEARCH_WINDOW",
    "SEMANTIC_WINDOW",
    "SearchResults",
    "SemanticUnavailable",
    "full_text_match",
    "full_text_ranked",
    "any_word_ranked",
    "fuse",
    "has_searchable_words",
    "searchable_words",
    "papers_search",
    "query_terms",
    "query_validate",
    "query_vector",
    "semantic_ranked",
    "substring_query",
]

logger = logging.getLogger(__name__)

MODES = ("hybrid", "keyword", "semantic")
DEFAULT_MODE = "hybrid"
SEARCH_CONFIG = "english"
# Keyword search ranks at most this many matches: the newest ones (see full_text_ranked).
SEARCH_WINDOW = 1000
# How keyword search reads the newest matches (see _keyword_plan): the margin by which walking
# the newest papers must beat the GIN index; how many matches the GIN path's date range is
# sized to hold, in windows; how many entries of a GIN bitmap, and of the date index (read
# twice: the range's bound, then its bitmap), cost what reading one paper does (measured at
# 1M papers: 0.13 and 0.35 against 4 microseconds).
WALK_PENALTY = 2
RANGE_MARGIN = 2
BITMAP_ENTRIES_A_PAPER = 30
DATE_ENTRIES_A_PAPER = 10
# The words of a query estimated apart at most (a long query's first ones; the rarest of some
# of its words is still an upper bound of its matches).
ESTIMATED_PARTS_MAX = 8
# Semantic search ranks this many nearest papers that pass the filters.
SEMANTIC_WINDOW = 100
# The nearest papers asked of the index first; multiplied by NEAREST_GROWTH while too few of
# them pass the filters (a small topic), up to NEAREST_LIMIT.
NEAREST_FIRST = 200
NEAREST_GROWTH = 8
NEAREST_LIMIT = 12_800
# Reciprocal rank fusion's constant (Cormack, Clarke and Buettcher, SIGIR 2009): 60 there,
# and on this project's queries (bench/bench_retrieval.py).
RRF_K = 60


class SemanticUnavailable(Exception):
    """Semantic ranking cannot run: the encoder's model files are missing, or no paper has a
    vector from the current model. The message says which."""


@dataclass(frozen=True)
class SearchResults:
    """A ranking of papers for a query.

    ``ranked``: ``(paper id, score)`` pairs, best first, at most :data:`SEARCH_WINDOW`
    (keyword, hybrid) or :data:`SEMANTIC_WINDOW` (semantic) long; ``score`` is a float, higher
    is better, on a scale that depends on ``mode`` (keyword: ``ts_rank``; semantic: cosine
    similarity in [-1, 1]; hybrid: the fused reciprocal-rank score). ``mode``: the mode that
    ran; ``requested_mode``: the one asked for; ``fallback``: why they differ (``None`` when
    they do not).
    """

    ranked: list[tuple[int, float]]
    mode: str
    requested_mode: str
    fallback: str | None = None


def query_validate(q: str) -> None:
    """Raise ``django.core.exceptions.ValidationError`` (code ``query_syntax``) when ``q`` does
    not parse in the query language (:func:`~topics.tagging.rules.parse_query`), saying why and
    where: "The query does not parse: unclosed quote at position 7." The one message of the
    search page, ``/api/v1/search/``, ``/api/v1/papers/?q=`` and saved searches."""
    try:
        parse_query(q)
    except RuleSyntaxError as error:
        raise ValidationError(
            "The query does not parse: %(reason)s at position %(position)d.",
            code="query_syntax",
            params={"reason": error.message, "position": error.position},
        ) from None


def _prefix_literal(stem: str) -> str:
    """``stem`` as one quoted lexeme with a prefix mark, in ``to_tsquery``'s syntax."""
    return "'" + stem.replace("\\", "\\\\").replace("'", "''") + "':*"


def _tsquery(node: QueryNode, *, negate: bool = False):
    """``node`` as a Django ``SearchQuery`` expression ('english'): a word or phrase through
    ``phraseto_tsquery`` (its words in order, stemmed), a prefix through ``to_tsquery`` with
    ``:*``, combined by ``&&``, ``||`` and ``!!``; a negation is pushed down to the terms (De
    Morgan), since Django combines only ``SearchQuery`` terms. A term that is only stopwords
    gives an empty query, which PostgreSQL drops from its combination."""
    if isinstance(node, Term):
        if node.kind == "prefix":
            query = SearchQuery(_prefix_literal(node.text), search_type="raw", config=SEARCH_CONFIG)
        else:
            query = SearchQuery(node.text, search_type="phrase", config=SEARCH_CONFIG)
        return ~query if negate else query
    if isinstance(node, Not):
        return _tsquery(node.operand, negate=not negate)
    parts = [_tsquery(operand, negate=negate) for operand in node.operands]
    combined = parts[0]
    for part in parts[1:]:
        # NOT (a AND b) is (NOT a) OR (NOT b), and the other way round.
        combined = (combined | part) if isinstance(node, And) == negate else (combined & part)
    return combined


def _substring(node: QueryNode) -> Q:
    if isinstance(node, Term):
        text = node.text
        return Q(title__icontains=text) | Q(abstract__icontains=text)
    if isinstance(node, Not):
        return ~_substring(node.operand)
    condition = _substring(node.operands[0])
    for operand in node.operands[1:]:
        condition = (
            (condition & _substring(operand))
            if isinstance(node, And)
            else (condition | _substring(operand))
        )
    return condition


def substring_query(q: str) -> Q:
    """``q`` (the query language of ``topics.tagging.rules``) as substring conditions on title
    or abstract, for databases without full-text search: a word, stem or phrase must occur
    case-insensitively, combined by the query's ``AND``, ``OR``, ``NOT``/``-`` and
    parentheses. A blank ``q`` matches everything. Raises ``RuleSyntaxError`` (a
    ``ValueError`` with the position) for a malformed ``q``."""
    tree = parse_query(q)
    return Q() if tree is None else _substring(tree)


def query_terms(node: QueryNode | None, *, negated: bool = False) -> Iterable[tuple[Term, bool]]:
    """Every term of ``node`` (a :func:`~topics.tagging.rules.parse_query` tree; ``None``
    has none) with whether an odd number of negations stand above it (``-a``, ``NOT (a OR
    b)``), in the query's order."""
    if node is None:
        return
    if isinstance(node, Term):
        yield node, negated
    elif isinstance(node, Not):
        yield from query_terms(node.operand, negated=not negated)
    else:
        for operand in node.operands:
            yield from query_terms(operand, negated=negated)


def _excluded(tree: QueryNode) -> QueryNode | None:
    """The negations that bind the whole query (``-a`` and ``NOT a`` at its top level), as one
    AND of them; ``None`` when there are none."""
    operands = tree.operands if isinstance(tree, And) else (tree,)
    negations = tuple(operand for operand in operands if isinstance(operand, Not))
    if not negations:
        return None
    return negations[0] if len(negations) == 1 else And(negations)


def _required_phrases(tree: QueryNode) -> QueryNode | None:
    """The quoted phrases that bind the whole query (a phrase alone, or one at the top level
    of an AND), as one AND of them; ``None`` when there are none. A reader who quotes words
    asks for them: the semantic part's papers must hold them too."""
    operands = tree.operands if isinstance(tree, And) else (tree,)
    phrases = tuple(
        operand for operand in operands if isinstance(operand, Term) and operand.kind == "phrase"
    )
    if not phrases:
        return None
    return phrases[0] if len(phrases) == 1 else And(phrases)


def query_parts(q: str) -> tuple[str, QueryNode | None]:
    """``q`` (the query language of ``topics.tagging.rules``) split into what it asks for and
    what it excludes: ``(positive, excluded)``. ``positive`` is the text of its terms that no
    negation covers, one space apart (what the semantic part embeds and ranks by);
    ``excluded`` the negations binding the whole query (``-agents -"tool use"``) as one tree,
    or ``None``, to filter every ranking's candidates with :func:`full_text_match`. Raises
    ``RuleSyntaxError`` for a malformed ``q``."""
    tree = parse_query(q)
    if tree is None:
        return "", None
    positive = " ".join(term.text for term, negated in query_terms(tree) if not negated)
    return positive, _excluded(tree)


def full_text_match(queryset: QuerySet[Paper], q: str | QueryNode) -> QuerySet[Paper]:
    """Papers of ``queryset`` whose title or abstract match ``q``: the query language of
    ``topics.tagging.rules`` (words, ``"phrases"``, ``prefix*``, ``AND``, ``OR``,
    ``NOT``/``-word``, parentheses; or a tree :func:`~topics.tagging.rules.parse_query`
    made). On PostgreSQL through the stored ``search_vector`` and its GIN index (papers
    migration 0005), English stems (``agent`` finds ``agents``); elsewhere (the embedded
    SQLite default) each term as a case-insensitive substring of title or abstract
    (:func:`substring_query`). Raises ``RuleSyntaxError`` (a ``ValueError`` with the
    position) for a malformed ``q``; a blank one matches everything."""
    tree = parse_query(q) if isinstance(q, str) else q
    if tree is None:
        return queryset
    if connection.vendor != "postgresql":
        return queryset.filter(_substring(tree))
    return queryset.filter(search_vector=_tsquery(tree))


def _tsquery_sql(tree: QueryNode) -> tuple[str, list]:
    """The SQL of :func:`_tsquery` (a ``tsquery`` expression) and its parameters."""
    query = Paper.objects.all().query
    compiler = query.get_compiler(connection=connection)
    return compiler.compile(_tsquery(tree).resolve_expression(query))


def full_text_ranked(
    matches: QuerySet[Paper], q: str | QueryNode, *, window: int | None = None
) -> list[tuple[int, float]]:
    """``(paper id, rank)`` for the newest ``window`` (default :data:`SEARCH_WINDOW`) papers of
    ``matches`` (papers matched to ``q`` by :func:`full_text_match`, and filtered), best
    first: ``rank`` is PostgreSQL's ``ts_rank`` over the stored vector (title weight A above
    abstract weight B; a float, higher is better; 0.0 on SQLite), ties newest first. On
    PostgreSQL three queries, more for a query of several words that must all be present
    (:func:`_keyword_plan`'s estimates) and two more for a word of middling frequency (a date
    bound, and the whole ranking again when the range holds too few); one elsewhere.

    Bounded on purpose: a common word matches a third of all papers, and ranking them all
    costs seconds. Taking the newest ``window`` matches first (an index walk newest first for
    common words, the GIN index for the others, :func:`_keyword_plan`) keeps search fast and
    puts recent relevant papers first; ``papers/?q=`` lists every match, newest first.
    """
    window = SEARCH_WINDOW if window is None else window
    matches = matches.prefetch_related(None).select_related(None)
    newest = matches.order_by("-submitted", "-id")
    if connection.vendor != "postgresql":
        return [(paper_id, 0.0) for paper_id in newest.values_list("id", flat=True)[:window]]
    tree = parse_query(q) if isinstance(q, str) else q
    if tree is None:
        return []
    walk, recent = _keyword_plan(matches, window, tree)
    if walk:
        return _ranked_window(newest, tree, window)
    # The same order through an expression no index holds: PostgreSQL reads the matches from
    # the GIN index and keeps the newest, instead of walking the newest papers.
    newest = matches.order_by(_UNINDEXED_SUBMITTED.desc(), "-id")
    if recent is not None:
        # First among the newest ``recent`` papers only (a bitmap AND of the GIN index and a
        # date range): enough when they hold a window of matches, which then are the newest.
        since = (
            Paper.objects.order_by("-submitted", "-id")
            .values_list("submitted", flat=True)[recent : recent + 1]
            .first()
        )
        if since is not None:
            ranked = _ranked_window(newest.filter(submitted__gte=since), tree, window)
            if len(ranked) >= window:
                return ranked
    return _ranked_window(newest, tree, window)


def _ranked_window(newest: QuerySet[Paper], tree: QueryNode, window: int):
    """``(paper id, ts_rank)`` for the first ``window`` papers of ``newest`` (ordered newest
    first), ranked; one query (none for a queryset filtered to nothing before any query)."""
    try:
        inner, params = newest.values("id", "submitted", "search_vector")[
            :window
        ].query.sql_with_params()
    except EmptyResultSet:
        return []
    tsquery, tsquery_params = _tsquery_sql(tree)
    # Ranked outside the LIMIT: ts_rank runs on the window's rows only.
    sql = (
        f"SELECT w.id, ts_rank(w.search_vector, {tsquery}) AS rank "
        f"FROM ({inner}) AS w ORDER BY rank DESC, w.submitted DESC, w.id DESC"
    )
    with connections[newest.db].cursor() as cursor:
        cursor.execute(sql, [*tsquery_params, *params])
        return cursor.fetchall()


# ``submitted`` as an expression, so that no index on it can give the order.
_UNINDEXED_SUBMITTED = Func(
    F("submitted"), template="(%(expressions)s + 0)", output_field=DateField()
)


def _planner_rows(queryset: QuerySet[Paper]) -> float:
    """PostgreSQL's estimate of the papers ``queryset`` returns (``topicsite.planner``)."""
    return planner_rows(queryset.order_by().values("id"))


def _required_parts(tree: QueryNode) -> tuple[QueryNode, ...]:
    """What every match of ``tree`` must hold, apart: the operands of a top-level AND (and of
    the ANDs in it: ``(black hole) evaporation``) that are not negations, a phrase split into
    its words."""
    operands = tree.operands if isinstance(tree, And) else (tree,)
    parts: list[QueryNode] = []
    for operand in operands:
        if isinstance(operand, Not):
            continue
        if isinstance(operand, And):
            parts += _required_parts(operand)
        elif isinstance(operand, Term) and operand.kind != "prefix" and " " in operand.text.strip():
            parts += [Term(kind="word", text=word) for word in operand.text.split()]
        else:
            parts.append(operand)
    return tuple(parts)


def _estimable_parts(parts: tuple[QueryNode, ...]) -> tuple[QueryNode, ...]:
    """``parts`` without those the planner cannot bound: stop words (``the``, the ``a`` of
    ``"a black hole"``: no lexeme, estimated at one paper) and prefixes (``black*``, also
    estimated at one), which would make a word that goes with the others look rare. One
    query for the words' stop-word test."""
    words = [part for part in parts if isinstance(part, Term) and part.kind != "prefix"]
    searchable = dict(zip(words, searchable_words(*(word.text for word in words)), strict=True))
    return tuple(
        part
        for part in parts
        if not isinstance(part, Term) or (part.kind != "prefix" and searchable[part])
    )


def _keyword_plan(
    matches: QuerySet[Paper], window: int, tree: QueryNode | None = None
) -> tuple[bool, int | None]:
    """How to read the newest ``window`` papers of ``matches``: ``(walk, recent)``.

    ``walk``: walk the newest papers (``paper_newest_idx``) testing each. Otherwise read the
    matches from the GIN index and keep the newest: first among the newest ``recent``
    papers alone when ``recent`` is a number (a date range the GIN bitmap is ANDed with,
    sized to hold :data:`RANGE_MARGIN` windows of matches), then, if that range held fewer
    than a window, all of them.

    With ``m`` of ``n`` papers matching (the planner's estimates; two queries of statistics,
    none reading the table), spread evenly over time, the walk reads about ``window * n / m``
    papers; the whole GIN path reads ``m`` papers and a bitmap of ``m`` entries
    (:data:`BITMAP_ENTRIES_A_PAPER` of them cost a paper's read); the ranged one reads
    ``RANGE_MARGIN * window`` papers, the same bitmap, and ``recent = RANGE_MARGIN * window *
    n / m`` entries of the date index (:data:`DATE_ENTRIES_A_PAPER` a paper). The cheapest
    is taken, the walk's cost counted :data:`WALK_PENALTY` times: matches are not always
    spread evenly, and a word whose papers are mostly old makes the walk read many times its
    estimate (at 1M papers, 137,000 papers for 1,000 of a word's 26,000 matches: 0.6 s),
    while PostgreSQL's own plan, costing the walk lower still, took it down to about 20,000
    matches. At 1M papers and a window of 1,000: the whole GIN path up to about 15,000
    matches, the ranged one up to about 220,000 (a word in a fifth of all papers), the walk
    above. Measured at 1M papers, side by side (``bench/README.md``): a word in 5% of papers
    233 ms by PostgreSQL's own plan, 37 ms by this one.

    PostgreSQL estimates words that must all be present (``black hole``: ``'black' &
    'hole'``, or a quoted phrase) as if they were independent, far below their matches when
    they go together (1,655 for 33,491), which would send a common pair down the whole GIN
    path. So for several such words (``tree``'s top-level AND and its phrases' words) the
    estimate is raised by the ratio of the rarest word's estimate (an upper bound) to theirs
    together, over all papers: one query more than the words (at most
    :data:`ESTIMATED_PARTS_MAX` of them). An estimate above the matches
    only narrows the range, and a range short of a window falls back to all matches."""
    return _keyword_choice(matches, window, tree)[0]


def _keyword_choice(
    matches: QuerySet[Paper], window: int, tree: QueryNode | None, together: float | None = None
) -> tuple[tuple[bool, int | None], int | None]:
    """:func:`_keyword_plan`'s choice, and the range it costed (None with no estimate).
    ``together``: :func:`words_together_factor` of ``tree`` when the caller has it."""
    if together is None:
        together = words_together_factor(tree)
    estimated = _planner_rows(matches) * together
    papers = planner_table_rows(Paper, using=matches.db)
    if estimated <= 0 or papers <= 0:
        return (False, None), None
    recent = math.ceil(RANGE_MARGIN * window * papers / estimated)
    costs = {  # in papers read
        (True, None): WALK_PENALTY * window * papers / estimated,
        (False, None): estimated * (1 + 1 / BITMAP_ENTRIES_A_PAPER),
        (False, recent): RANGE_MARGIN * window
        + estimated / BITMAP_ENTRIES_A_PAPER
        + recent / DATE_ENTRIES_A_PAPER,
    }
    return min(costs, key=costs.get), recent


def words_together_factor(tree: QueryNode | None) -> float:
    """How far to raise PostgreSQL's estimate of the papers matching ``tree`` (a float, at
    least 1.0): for words that must all be present (``tree``'s top-level AND and its phrases'
    words, at most :data:`ESTIMATED_PARTS_MAX`), the ratio of the rarest word's estimate (an
    upper bound of their matches; stop words and prefixes, which it estimates at one paper,
    left out of the bound) to the planner's estimate of them together, which takes them as
    independent (``black hole``: 1,371 for 30,558 at 1M papers). 1.0 for one word or
    none, and off PostgreSQL. One ``EXPLAIN`` a word and one for them together."""
    if tree is None or connection.vendor != "postgresql":
        return 1.0
    conjuncts = _required_parts(tree)[:ESTIMATED_PARTS_MAX]
    if len(conjuncts) < 2:
        return 1.0
    bounds = _estimable_parts(conjuncts)
    if not bounds:
        return 1.0
    # Together: all of them, as the planner estimates the whole query; the bound: the
    # rarest of those it can estimate.
    together = _planner_rows(Paper.objects.filter(search_vector=_tsquery(And(conjuncts))))
    rarest = min(
        _planner_rows(Paper.objects.filter(search_vector=_tsquery(part))) for part in bounds
    )
    return max(1.0, rarest / max(together, 1.0))


def newest_matches_range(
    matches: QuerySet[Paper], window: int, tree: QueryNode, together: float | None = None
) -> int | None:
    """Among how many of the newest papers to look for the newest ``window`` papers of
    ``matches`` (papers matched to ``tree``, and filtered): a number when a date floor there
    (the GIN index ANDed with a date range) is cheaper than reading every match from the GIN
    index, by :func:`_keyword_plan`'s costs with the estimate :func:`words_together_factor`
    raises; None when every match should be read (few of them), and off PostgreSQL. The
    caller falls back to every match when the range holds fewer than ``window``. Three to
    ``words + 3`` queries of statistics, none reading the table; two when the caller passes
    ``together`` (:func:`words_together_factor` of ``tree``).

    PostgreSQL itself, estimating words that go together as independent, reads every match:
    a page of ``papers/?q=black hole`` took all 30,000 of them to keep 26 (138 ms at 1M)."""
    if connection.vendor != "postgresql":
        return None
    choice, recent = _keyword_choice(matches, window, tree, together)
    return None if choice == (False, None) else recent


def has_searchable_words(q: str) -> bool:
    """Whether ``q`` (plain text) holds a word full-text search can look for: on PostgreSQL,
    whether its 'english' query keeps a lexeme (``"the of and"`` and ``"!!"`` do not);
    elsewhere, whether it holds a word that is not an English stop word (scikit-learn's
    list: substring search would otherwise find ``the`` in every paper). One query on
    PostgreSQL."""
    return searchable_words(q)[0]


def _has_word_beyond_stop_words(text: str) -> bool:
    return any(word not in ENGLISH_STOP_WORDS for word in tokenize(fold(text)))


def searchable_words(*texts: str) -> list[bool]:
    """:func:`has_searchable_words` for each of ``texts`` (plain text), in one query on
    PostgreSQL (none for blank texts or elsewhere)."""
    if connection.vendor != "postgresql" or not any(text.strip() for text in texts):
        return [_has_word_beyond_stop_words(text) for text in texts]
    columns = ", ".join("numnode(plainto_tsquery(%s::regconfig, %s)) > 0" for _ in texts)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {columns}", [value for text in texts for value in (SEARCH_CONFIG, text)]
        )
        return list(cursor.fetchone())


def any_word_ranked(paper_ids: Sequence[int], q: str) -> list[tuple[int, float]]:
    """``(paper id, rank)`` for the papers among ``paper_ids`` holding any word of ``q``, best
    first: ``rank`` is ``ts_rank`` of the stored vector against q's words OR-ed ('english'
    stems; title weight A above abstract weight B). A long query in plain words rarely has
    every word in one abstract, so the websearch match of :func:`full_text_ranked` finds
    nothing where the words still tell candidates apart. One query over ``paper_ids`` only
    (the candidates of the other rankings); ``[]`` on databases other than PostgreSQL."""
    if not paper_ids or connection.vendor != "postgresql":
        return []
    # Each stem quoted and OR-ed under the 'simple' configuration, which leaves stems as they
    # are; a stem holding a quote or a colon stays one literal.
    sql = """
        WITH words AS (
            SELECT to_tsquery('simple', string_agg(quote_literal(word), ' | ')) AS query
            FROM unnest(tsvector_to_array(to_tsvector(%s::regconfig, %s))) AS word
        )
        SELECT p.id, ts_rank(p.search_vector, words.query) AS rank
        FROM (
            -- The candidates by primary key, fenced (OFFSET 0) so that the match below is
            -- tested on them alone: the planner cannot estimate the words' query (it is
            -- computed), and for a common word it read the word's 316,000 entries of the
            -- full-text index to intersect them with 1,000 ids (23 of the search's 66 ms).
            SELECT id, submitted, search_vector FROM papers_paper WHERE id = ANY(%s) OFFSET 0
        ) p, words
        WHERE p.search_vector @@ words.query
        ORDER BY rank DESC, p.submitted DESC, p.id DESC
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [SEARCH_CONFIG, q, list(paper_ids)])
        return cursor.fetchall()


def query_vector(q: str):
    """``q`` embedded by the paper encoder: a float32 array of shape ``(dimension,)``,
    L2-normalised, comparable with the stored paper vectors. Raises
    :class:`SemanticUnavailable` when the encoder's model files are missing or no paper has a
    vector from its model (the index would answer nothing)."""
    from papers.embeddings.encoder import EncoderUnavailable, get_encoder

    try:
        encoder = get_encoder()
    except EncoderUnavailable as error:
        raise SemanticUnavailable(f"the embedding model is not available ({error})") from None
    if not PaperEmbedding.objects.filter(model=encoder.model_id).exists():
        raise SemanticUnavailable(
            "no paper has a vector from the current embedding model yet (manage.py embed)"
        )
    return encoder.encode([q])[0]


def semantic_ranked(
    queryset: QuerySet[Paper], vector, *, limit: int = SEMANTIC_WINDOW
) -> list[tuple[int, float]]:
    """``(paper id, cosine similarity)`` for the ``limit`` papers of ``queryset`` nearest to
    ``vector`` (from :func:`query_vector`), best first; only live papers (the index holds no
    others). Asks the index for :data:`NEAREST_FIRST` neighbours and keeps those in
    ``queryset`` (one query), asking for :data:`NEAREST_GROWTH` times more while fewer than
    ``limit`` pass and the index had more, up to :data:`NEAREST_LIMIT`: a filter to a small
    topic or a narrow date range keeps what the nearest :data:`NEAREST_LIMIT` hold."""
    from papers.embeddings.index import nearest

    k = max(NEAREST_FIRST, limit)
    while True:
        neighbours = nearest(vector, k)
        kept = set(
            queryset.order_by()
            .filter(id__any=Ids(paper_id for paper_id, _ in neighbours))
            .values_list("id", flat=True)
        )
        ranked = [(paper_id, score) for paper_id, score in neighbours if paper_id in kept]
        if len(ranked) >= limit or len(neighbours) < k or k >= NEAREST_LIMIT:
            return ranked[:limit]
        k = min(k * NEAREST_GROWTH, NEAREST_LIMIT)


def fuse(
    rankings: Iterable[Sequence[tuple[int, float]]], *, k: int = RRF_K
) -> list[tuple[int, float]]:
    """Reciprocal rank fusion of ``rankings`` (each ``(paper id, score)`` pairs, best first;
    the scores are not read): ``(paper id, sum of 1 / (k + rank))`` with ranks from 1 over
    the rankings a paper is in, best first; ties keep the order in which the papers were
    first met (the first ranking's order first)."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, (paper_id, _) in enumerate(ranking, start=1):
            fused[paper_id] = fused.get(paper_id, 0.0) + 1.0 / (k + rank)
    return sorted(fused.items(), key=lambda item: -item[1])


def papers_search(
    *, q: str, queryset: QuerySet[Paper] | None = None, mode: str = DEFAULT_MODE
) -> SearchResults:
    """Papers of ``queryset`` (default: every paper; pass it already filtered by topic,
    category, dates...) ranked for ``q`` in ``mode`` (one of :data:`MODES`; see the module
    docstring). ``q`` is in the query language of ``topics.tagging.rules`` (saved searches'
    and topic rules': words, ``"phrases"``, ``prefix*``, ``AND``, ``OR``, ``NOT``/``-word``,
    parentheses): the keyword part matches it whole, the semantic part embeds the text of its
    terms that no negation covers and offers only papers at least
    ``settings.SEARCH_SEMANTIC_MIN_COSINE`` similar (its comment says how it was chosen), and
    negations and quoted phrases binding the whole query filter every ranking. A blank ``q``
    or one without a searchable word finds nothing. Raises ``RuleSyntaxError`` (a
    ``ValueError`` with the position) for a malformed ``q``.

    Queries on PostgreSQL: keyword one and :func:`full_text_ranked`'s; semantic adds one
    checking for vectors, the encoder's work, a vector-index lookup and one query filtering
    its neighbours; hybrid all of those and one ranking the candidates by any word
    (:func:`any_word_ranked`). Raises ``ValueError`` for an unknown ``mode``.
    """
    if mode not in MODES:
        raise ValueError(f"Unknown search mode {mode!r}; one of: {', '.join(MODES)}.")
    queryset = Paper.objects.all() if queryset is None else queryset
    tree = parse_query(q)
    nothing = SearchResults(ranked=[], mode=mode, requested_mode=mode)
    if tree is None:
        return nothing
    terms = list(query_terms(tree))
    excluded = _excluded(tree)
    positive = " ".join(term.text for term, negated in terms if not negated)
    # One query tells which parts hold a word full-text search can look for.
    any_searchable, positive_searchable, excluded_searchable = searchable_words(
        " ".join(term.text for term, _ in terms),
        positive,
        " ".join(term.text for term, _ in query_terms(excluded)) if excluded is not None else "",
    )
    if not any_searchable:
        return nothing
    keyword: list[tuple[int, float]] | None = None
    if mode != "semantic":
        keyword = full_text_ranked(full_text_match(queryset, tree), tree)
        if mode == "keyword":
            return SearchResults(ranked=keyword, mode="keyword", requested_mode=mode)
    # Excluded terms bind every ranking: the semantic part embeds only what is asked for and
    # looks among the papers without the excluded terms (the keyword part excludes them itself).
    if excluded_searchable:
        # An excluded stopword or punctuation ("-the") excludes nothing, as in the keyword
        # match: an empty tsquery would match no paper and empty the candidates.
        queryset = full_text_match(queryset, excluded)
    if not positive_searchable:
        if keyword is None:
            keyword = full_text_ranked(full_text_match(queryset, tree), tree)
        return SearchResults(
            ranked=keyword,
            mode="keyword",
            requested_mode=mode,
            fallback="the query only excludes words; nothing to search for by meaning",
        )
    try:
        vector = query_vector(positive)
    except SemanticUnavailable as error:
        logger.info("search falls back to keywords: %s", error)
        if keyword is None:
            keyword = full_text_ranked(full_text_match(queryset, tree), tree)
        return SearchResults(
            ranked=keyword, mode="keyword", requested_mode=mode, fallback=str(error)
        )
    # Quoted phrases bind the semantic part as they bind the keyword part; neighbours below
    # the similarity floor are not offered at all (a query about nothing here finds nothing).
    phrases = _required_phrases(tree)
    if phrases is not None:
        queryset = full_text_match(queryset, phrases)
    floor = settings.SEARCH_SEMANTIC_MIN_COSINE
    semantic = [(pk, score) for pk, score in semantic_ranked(queryset, vector) if score >= floor]
    if mode == "semantic":
        return SearchResults(ranked=semantic, mode="semantic", requested_mode=mode)
    candidates = list(dict.fromkeys(paper_id for paper_id, _ in [*keyword, *semantic]))
    words = any_word_ranked(candidates, positive)
    return SearchResults(
        ranked=fuse([keyword, semantic, words])[:SEARCH_WINDOW],
        mode="hybrid",
        requested_mode=mode,
    )
