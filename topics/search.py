"""Searching papers by words and by meaning: keyword full text and vector similarity fused
into one ranking, used by ``/api/v1/search/``, the search page and Ask's retrieval.

Three modes (:data:`MODES`):

- ``keyword``: PostgreSQL full-text search over the stored ``search_vector`` (title weight A,
  abstract weight B, 'english', web-search syntax), ranked by ``ts_rank`` within the newest
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

When the encoder's model files are missing or no paper has a vector yet, ``hybrid`` and
``semantic`` return the keyword ranking and say so (:attr:`SearchResults.mode` is
``keyword``, :attr:`SearchResults.fallback` the reason). A query without a searchable word
(only stopwords or punctuation) finds nothing in every mode: its vector would be noise.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.contrib.postgres.search import SearchQuery
from django.db import connection
from django.db.models import Q, QuerySet

from papers.models import Paper, PaperEmbedding

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
    "papers_search",
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


def _search_query(q: str) -> SearchQuery:
    return SearchQuery(q, search_type="websearch", config=SEARCH_CONFIG)


# websearch syntax: "a phrase", -excluded, OR between terms, plain words.
_WEBSEARCH_TOKEN = re.compile(r'(-?)"([^"]*)"?|(\S+)')


def substring_query(q: str) -> Q:
    """``q`` in PostgreSQL's websearch syntax as substring conditions on title or abstract, for
    databases without full-text search: every word or ``"phrase"`` must occur (``-term`` must
    not; ``a OR b`` either), case-insensitively. An empty ``q`` matches everything."""
    groups: list[Q] = []  # AND of these; each an OR of terms
    pending_or = False
    for match in _WEBSEARCH_TOKEN.finditer(q):
        negate, phrase, word = match.group(1), match.group(2), match.group(3)
        if word is not None and word.upper() == "OR":
            pending_or = bool(groups)
            continue
        if word is not None and word.startswith("-") and len(word) > 1:
            negate, word = "-", word[1:]
        text = (phrase if phrase is not None else word).strip()
        if not text:
            continue
        term = Q(title__icontains=text) | Q(abstract__icontains=text)
        if negate:
            term = ~term
        if pending_or:
            groups[-1] |= term
        else:
            groups.append(term)
        pending_or = False
    condition = Q()
    for group in groups:
        condition &= group
    return condition


def query_parts(q: str) -> tuple[str, str]:
    """``q`` (websearch syntax) split into what it asks for and what it excludes:
    ``(positive, excluded)``, the first without its ``-word`` and ``-"phrase"`` terms (the text
    the semantic part embeds and ranks by), the second those terms alone, still in websearch
    syntax (``'-agents -"tool use"'``; empty when nothing is excluded), to filter every
    ranking's candidates with :func:`full_text_match`."""
    positive: list[str] = []
    excluded: list[str] = []
    for match in _WEBSEARCH_TOKEN.finditer(q):
        negate, phrase, word = match.group(1), match.group(2), match.group(3)
        if word is not None and word.startswith("-") and len(word) > 1:
            negate, word = "-", word[1:]
        if phrase is not None:
            text = f'"{phrase.strip()}"' if phrase.strip() else ""
        else:
            text = word or ""
        if not text or text == "-":
            continue
        (excluded if negate else positive).append(f"-{text}" if negate else text)
    return " ".join(positive), " ".join(excluded)


def full_text_match(queryset: QuerySet[Paper], q: str) -> QuerySet[Paper]:
    """Papers of ``queryset`` whose title or abstract match ``q`` (websearch syntax: words,
    ``"phrases"``, ``-word``, ``OR``): on PostgreSQL through the stored ``search_vector`` and
    its GIN index (papers migration 0005); elsewhere (the embedded SQLite default) every word
    or phrase as a case-insensitive substring of title or abstract (:func:`substring_query`)."""
    if connection.vendor != "postgresql":
        return queryset.filter(substring_query(q))
    return queryset.filter(search_vector=_search_query(q))


def full_text_ranked(
    matches: QuerySet[Paper], q: str, *, window: int | None = None
) -> list[tuple[int, float]]:
    """``(paper id, rank)`` for the newest ``window`` (default :data:`SEARCH_WINDOW`) papers of
    ``matches`` (papers matched to ``q`` by :func:`full_text_match`, and filtered), best
    first: ``rank`` is PostgreSQL's ``ts_rank`` over the stored vector (title weight A above
    abstract weight B; a float, higher is better; 0.0 on SQLite), ties newest first. One query.

    Bounded on purpose: a common word matches a third of all papers, and ranking them all
    costs seconds. Taking the newest ``window`` matches first (an index walk newest first for
    common words, the GIN index for rare ones) keeps search fast and puts recent relevant
    papers first; ``papers/?q=`` lists every match, newest first.
    """
    window = SEARCH_WINDOW if window is None else window
    newest = matches.prefetch_related(None).select_related(None).order_by("-submitted", "-id")
    if connection.vendor != "postgresql":
        return [(paper_id, 0.0) for paper_id in newest.values_list("id", flat=True)[:window]]
    inner, params = newest.values("id", "submitted", "search_vector")[
        :window
    ].query.sql_with_params()
    # Ranked outside the LIMIT: ts_rank runs on the window's rows only.
    sql = (
        "SELECT w.id, ts_rank(w.search_vector, websearch_to_tsquery(%s::regconfig, %s)) AS rank "
        f"FROM ({inner}) AS w ORDER BY rank DESC, w.submitted DESC, w.id DESC"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [SEARCH_CONFIG, q, *params])
        return cursor.fetchall()


def has_searchable_words(q: str) -> bool:
    """Whether ``q`` holds a word full-text search can look for: on PostgreSQL, whether its
    'english' query keeps a lexeme (``"the of and"`` and ``"!!"`` do not); elsewhere, whether
    it holds a letter or digit. One query on PostgreSQL."""
    if connection.vendor != "postgresql":
        return any(character.isalnum() for character in q)
    with connection.cursor() as cursor:
        cursor.execute("SELECT numnode(plainto_tsquery(%s::regconfig, %s))", [SEARCH_CONFIG, q])
        return cursor.fetchone()[0] > 0


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
        FROM papers_paper p, words
        WHERE p.id = ANY(%s) AND p.search_vector @@ words.query
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
            .filter(id__any=[paper_id for paper_id, _ in neighbours])
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
    docstring). ``q`` is websearch syntax for the keyword part and plain text for the
    semantic part; a blank ``q`` or one without a searchable word finds nothing.

    Queries: keyword 2; semantic adds one checking for vectors, the encoder's work, a
    vector-index lookup and one query filtering its neighbours; hybrid all of those and one
    ranking the candidates by any word (:func:`any_word_ranked`). Raises ``ValueError`` for an
    unknown ``mode``.
    """
    if mode not in MODES:
        raise ValueError(f"Unknown search mode {mode!r}; one of: {', '.join(MODES)}.")
    queryset = Paper.objects.all() if queryset is None else queryset
    q = q.strip()
    if not q or not has_searchable_words(q):
        return SearchResults(ranked=[], mode=mode, requested_mode=mode)
    keyword: list[tuple[int, float]] | None = None
    if mode != "semantic":
        keyword = full_text_ranked(full_text_match(queryset, q), q)
        if mode == "keyword":
            return SearchResults(ranked=keyword, mode="keyword", requested_mode=mode)
    # Excluded terms bind every ranking: the semantic part embeds only what is asked for and
    # looks among the papers without the excluded terms (the keyword part excludes them itself).
    positive, excluded = query_parts(q)
    if excluded:
        # An excluded stopword or punctuation ("-the", "-!!") excludes nothing, as in the
        # keyword match: an empty tsquery would match no paper and empty the candidates.
        if has_searchable_words(excluded):
            queryset = full_text_match(queryset, excluded)
        if not has_searchable_words(positive):
            if keyword is None:
                keyword = full_text_ranked(full_text_match(queryset, q), q)
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
            keyword = full_text_ranked(full_text_match(queryset, q), q)
        return SearchResults(
            ranked=keyword, mode="keyword", requested_mode=mode, fallback=str(error)
        )
    semantic = semantic_ranked(queryset, vector)
    if mode == "semantic":
        return SearchResults(ranked=semantic, mode="semantic", requested_mode=mode)
    candidates = list(dict.fromkeys(paper_id for paper_id, _ in [*keyword, *semantic]))
    words = any_word_ranked(candidates, positive)
    return SearchResults(
        ranked=fuse([keyword, semantic, words])[:SEARCH_WINDOW],
        mode="hybrid",
        requested_mode=mode,
    )
