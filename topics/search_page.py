"""Reads behind the search page (``/search/``): the reader's query in the topic-rule language
(``topics.tagging.rules``, the language of saved searches), the form of it that the one
ranking (``topics.search.papers_search``, the same as ``/api/v1/search/``) reads, the papers a
search may find (filters), and the page of paper cards with the query's words highlighted.

No side effects. A page costs a fixed number of queries whatever the number of results: the
ranking's (see ``papers_search``), one reordering the ranked ids by date when sorted by
newest, one for the page's cards (``topics.cards.paper_cards``) and one for the highlights
(:func:`cards_highlight`).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from django.db import connection
from django.db.models import Q, QuerySet
from django.utils.html import escape, linebreaks
from django.utils.safestring import mark_safe

from papers.models import Category, Paper
from topicsite.bidi import needs_isolation
from topicsite.lookups import Ids

from .cards import PaperCard, paper_cards
from .models import Assignment, Topic
from .search import SEARCH_CONFIG, SearchResults, papers_search, query_terms
from .tagging.rules import parse_query

__all__ = [
    "SORTS",
    "PageOutOfRange",
    "SearchPage",
    "cards_highlight",
    "highlight_terms",
    "search_page",
    "search_papers_scope",
    "words_query",
]

# relevance: the ranking's order; newest: the same papers by submitted date, newest first.
SORTS = ("relevance", "newest")
# A teaser (the abstract's line under a card's title) holds at most this many words.
TEASER_WORDS = 30

# Highlight markers ts_headline puts around matches: control characters, which no card text
# holds (removed before highlighting) and escaping leaves as they are.
_START, _STOP = "\x02", "\x03"
# TeX a page renders with KaTeX: highlights inside it would split the formula.
_TEX = re.compile(r"\$\$.+?\$\$|\$[^$]+\$|\\\(.+?\\\)|\\\[.+?\\\]", re.DOTALL)


# What makes plain text an operator or a syntax error in the rule language: quotes,
# parentheses and "*"; then a "-" starting a word; then the operators.
_RULE_PUNCTUATION = re.compile(r'["()*]')
_LEADING_MINUS = re.compile(r"(?<!\S)-+")
_OPERATOR = re.compile(r"(?<!\S)(?:AND|OR|NOT)(?!\S)")


def words_query(text: str) -> str:
    """``text`` (a question, a title: anything a reader typed for another purpose) as a query
    of the topic-rule language that parses and asks for its words: quotes, parentheses,
    ``*``, leading ``-`` and the operators ``AND``/``OR``/``NOT`` removed, whitespace made one
    space."""
    text = _LEADING_MINUS.sub(" ", _RULE_PUNCTUATION.sub(" ", text))
    return " ".join(_OPERATOR.sub(" ", text).split())


def highlight_terms(query: str) -> tuple[str, str]:
    """The words ``query`` (topic-rule language, already checked) asks for, to highlight:
    ``(words, prefixes)``, each a space-separated str; phrases give their words, ``agent*``
    gives ``agent`` among the prefixes; negated terms and operators give nothing."""
    words, prefixes = [], []
    for term, negated in query_terms(parse_query(query)):
        if not negated:
            (prefixes if term.kind == "prefix" else words).append(term.text)
    return " ".join(words), " ".join(prefixes)


def search_papers_scope(
    *,
    topic: Topic | None = None,
    category: Category | None = None,
    submitted_after: dt.date | None = None,
    submitted_before: dt.date | None = None,
) -> QuerySet[Paper]:
    """The papers a search looks among: with an accepted assignment to ``topic`` or one of its
    descendants; with ``category`` as primary category or cross-list; submitted (v1) from
    ``submitted_after`` to ``submitted_before``, both inclusive. Each filter is a subquery or
    a column condition, so no row is repeated (no ``DISTINCT``). Runs no query."""
    papers = Paper.objects.all()
    if topic is not None:
        in_topic = Assignment.objects.accepted().in_subtree(topic).order_by().values("paper_id")
        papers = papers.filter(id__in=in_topic)
    if category is not None:
        cross_listed = (
            Paper.cross_lists.through.objects.filter(category=category)
            .order_by()
            .values("paper_id")
        )
        papers = papers.filter(Q(primary_category=category) | Q(id__in=cross_listed))
    if submitted_after is not None:
        papers = papers.filter(submitted__gte=submitted_after)
    if submitted_before is not None:
        papers = papers.filter(submitted__lte=submitted_before)
    return papers


def _marked(text: str, *, source: str) -> str:
    """``text`` (``source`` with ts_headline's markers) escaped, the markers as ``<mark>``;
    markers inside TeX dropped (KaTeX renders the formula whole)."""
    text = _TEX.sub(lambda m: m.group().replace(_START, "").replace(_STOP, ""), text)
    html = escape(text).replace(_START, "<mark>").replace(_STOP, "</mark>")
    # A marker ts_headline left unclosed (it never does; the text held none of its own).
    if html.count("<mark>") != html.count("</mark>"):
        return escape(source)
    return html


def cards_highlight(cards: list[PaperCard], *, query: str) -> None:
    """Set ``title_html``, ``abstract_html`` and, where the abstract holds a match,
    ``teaser_html`` on each of ``cards``: the card's (clipped) text escaped, with each word
    of ``query`` (topic-rule language; English stems, ``prefix*`` by prefix) in ``<mark>``.
    Titles with right-to-left text go in ``<bdi>`` (as ``topicsite.bidi.isolate``). One query
    on PostgreSQL, by ``ts_headline``; none elsewhere or without cards (the cards keep their
    plain text)."""
    words, prefixes = highlight_terms(query)
    if not cards or connection.vendor != "postgresql" or not (words or prefixes):
        return
    texts = []
    for card in cards:
        texts += [card.title, card.abstract]
    texts = [text.replace(_START, "").replace(_STOP, "") for text in texts]
    # The query's English stems (prefixes with ":*"), each quoted and OR-ed under 'simple',
    # which leaves them as they are (as topics.search.any_word_ranked builds its query).
    sql = """
        WITH words AS (
            SELECT to_tsquery('simple', coalesce(string_agg(term, ' | '), '')) AS query
            FROM (
                SELECT quote_literal(lexeme) AS term
                FROM unnest(tsvector_to_array(to_tsvector(%(config)s::regconfig, %(words)s)))
                    AS lexeme
                UNION ALL
                SELECT quote_literal(lexeme) || ':*'
                FROM unnest(tsvector_to_array(to_tsvector(%(config)s::regconfig, %(prefixes)s)))
                    AS lexeme
            ) AS terms
        )
        SELECT
            ts_headline(%(config)s::regconfig, text, words.query, %(whole)s),
            ts_headline(%(config)s::regconfig, text, words.query, %(teaser)s)
        FROM unnest(%(texts)s::text[]) WITH ORDINALITY AS t(text, n), words
        ORDER BY n
    """
    marks = f'StartSel="{_START}", StopSel="{_STOP}"'
    params = {
        "config": SEARCH_CONFIG,
        "words": words,
        "prefixes": prefixes,
        "whole": f"{marks}, HighlightAll=true",
        "teaser": f"{marks}, MaxWords={TEASER_WORDS}, MinWords={TEASER_WORDS // 2}",
        "texts": texts,
    }
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    for index, card in enumerate(cards):
        (title, _), (abstract, teaser) = rows[2 * index], rows[2 * index + 1]
        title_html = _marked(title, source=texts[2 * index])
        if needs_isolation(card.title):
            title_html = f"<bdi>{title_html}</bdi>"
        card.title_html = mark_safe(title_html)  # noqa: S308 - escaped by _marked
        abstract_text = texts[2 * index + 1]
        if abstract_text:
            card.abstract_html = mark_safe(  # noqa: S308 - escaped by _marked
                linebreaks(_marked(abstract, source=abstract_text), autoescape=False)
            )
        if _START in teaser:
            plain = teaser.replace(_START, "").replace(_STOP, "")
            html = _marked(teaser, source=plain)
            if not abstract_text.startswith(plain):
                html = "… " + html
            if not abstract_text.rstrip().endswith(plain.rstrip()):
                html += " …"
            card.teaser_html = mark_safe(html)  # noqa: S308 - escaped by _marked


@dataclass
class SearchPage:
    """One page of search results: ``cards`` (:class:`topics.cards.PaperCard`, highlighted),
    ``number`` (1-based), ``per_page``, ``count`` (papers ranked, at most
    ``topics.search.SEARCH_WINDOW``), and ``results`` (the ranking's
    :class:`topics.search.SearchResults`: which mode ran, and why it fell back)."""

    cards: list[PaperCard]
    number: int
    per_page: int
    count: int
    results: SearchResults

    @property
    def num_pages(self) -> int:
        return max(-(-self.count // self.per_page), 1)

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def has_next(self) -> bool:
        return self.number < self.num_pages

    @property
    def start_index(self) -> int:
        return (self.number - 1) * self.per_page + 1 if self.count else 0

    @property
    def end_index(self) -> int:
        return min(self.number * self.per_page, self.count)


class PageOutOfRange(LookupError):
    """The page asked for is past the last page of results; ``num_pages`` says how many
    there are."""

    def __init__(self, number: int, num_pages: int):
        self.number = number
        self.num_pages = num_pages
        super().__init__(f"page {number} is past the last page of results ({num_pages})")


def search_page(
    *,
    query: str,
    scope: QuerySet[Paper],
    mode: str,
    sort: str,
    number: int,
    per_page: int,
) -> SearchPage:
    """Page ``number`` of the papers of ``scope`` (:func:`search_papers_scope`) found for
    ``query`` (topic-rule language, already checked by ``compile_rule``), ranked by
    ``topics.search.papers_search`` in ``mode`` (one of ``topics.search.MODES``), in the
    ranking's order (``sort="relevance"``) or newest submitted first (``"newest"``; ties by
    id), ``per_page`` cards, highlighted (:func:`cards_highlight`).

    Raises :class:`PageOutOfRange` for a ``number`` past the last page (page 1 of no results
    is an empty page), ``ValueError`` for an unknown ``mode`` or ``sort``.
    """
    if sort not in SORTS:
        raise ValueError(f"Unknown sort {sort!r}; one of: {', '.join(SORTS)}.")
    results = papers_search(q=query, queryset=scope, mode=mode)
    ids = [paper_id for paper_id, _ in results.ranked]
    if sort == "newest" and ids:
        ids = list(
            Paper.objects.filter(id__any=Ids(ids))
            .order_by("-submitted", "-id")
            .values_list("id", flat=True)
        )
    page = SearchPage(cards=[], number=number, per_page=per_page, count=len(ids), results=results)
    if number > page.num_pages:
        raise PageOutOfRange(number, page.num_pages)
    offset = (number - 1) * per_page
    page.cards = paper_cards(paper_ids=ids[offset : offset + per_page])
    cards_highlight(page.cards, query=query)
    return page
