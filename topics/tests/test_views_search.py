"""The search page ``/search/`` (``topics.views.search``, ``topics.search_page``): the same
ranking as ``/api/v1/search/``, filters, sorts, highlights (escaped), paging, the empty
states, bad input as 400/404 naming what was wrong, saving the search, a query count that does
not grow with the results."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from papers.tests.factories import CategoryFactory, PaperFactory
from topics import search_page as page_module
from topics.search import papers_search
from topics.search_page import cards_highlight, highlight_terms, words_query
from topics.tagging.rules import compile_rule
from topics.tests.factories import AssignmentFactory, TopicFactory

pytestmark = pytest.mark.django_db

URL = "/search/"


@pytest.fixture
def papers():
    """Five papers: three about agents (one cross-listed to cs.LG, one in the topic "Agents",
    one from 2025), one about graphs, one with TeX and markup in its title."""
    cl, lg = CategoryFactory(code="cs.CL"), CategoryFactory(code="cs.LG")
    topic = TopicFactory(name="Agents", slug="agents")
    first = PaperFactory(
        title="Tool use agents trained with reinforcement learning",
        abstract="We train tool use agents. Agents call tools.",
        primary_category=cl,
        submitted=dt.date(2026, 9, 1),
    )
    second = PaperFactory(
        title="Agentic planning for web tasks",
        abstract="A planner for agentic systems on the web.",
        primary_category=cl,
        submitted=dt.date(2026, 9, 20),
    )
    second.cross_lists.add(lg)
    third = PaperFactory(
        title="An old survey of agents",
        abstract="Agents, surveyed.",
        primary_category=lg,
        submitted=dt.date(2025, 1, 5),
    )
    graphs = PaperFactory(
        title="Graph neural networks",
        abstract="Message passing on graphs.",
        primary_category=lg,
        submitted=dt.date(2026, 9, 10),
    )
    tex = PaperFactory(
        title="Superconducting SrTiO$_3$ agents <script>alert(1)</script>",
        abstract="Oxide agents at $T < 1$ K & <b>bold</b> claims.",
        primary_category=cl,
        submitted=dt.date(2026, 8, 1),
    )
    AssignmentFactory(paper=first, topic=topic)
    return {"first": first, "second": second, "third": third, "graphs": graphs, "tex": tex}


def _titles(response) -> list[str]:
    return [card.title for card in response.context["result_page"].cards]


def test_the_page_ranks_with_the_api_ranking(client, papers):
    response = client.get(URL, {"q": "agents", "mode": "keyword"})
    assert response.status_code == 200
    expected = [pk for pk, _ in papers_search(q="agents", mode="keyword").ranked]
    assert [card.pk for card in response.context["result_page"].cards] == expected
    assert papers["graphs"].title not in _titles(response)
    assert "4 papers found" in response.content.decode()


def test_hybrid_is_the_default_and_says_when_it_fell_back_to_words(client, papers):
    response = client.get(URL, {"q": "agents"})
    results = response.context["result_page"].results
    assert results.requested_mode == "hybrid"
    if results.fallback:  # no paper has a vector here, or no model: said on the page
        assert "Matched by words only" in response.content.decode()


def test_filters_by_topic_category_and_dates(client, papers):
    by_topic = client.get(URL, {"q": "agents", "mode": "keyword", "topic": "agents"})
    assert _titles(by_topic) == [papers["first"].title]
    # cs.LG as primary (the survey) or as a cross-list (the planner).
    by_category = client.get(URL, {"q": "agents", "mode": "keyword", "category": "cs.LG"})
    assert set(_titles(by_category)) == {papers["second"].title, papers["third"].title}
    by_dates = client.get(
        URL,
        {
            "q": "agents",
            "mode": "keyword",
            "submitted_after": "2026-01-01",
            "submitted_before": "2026-09-15",
        },
    )
    assert set(_titles(by_dates)) == {papers["first"].title, papers["tex"].title}


def test_sort_by_newest(client, papers):
    response = client.get(URL, {"q": "agents", "mode": "keyword", "sort": "newest"})
    dates = [card.submitted for card in response.context["result_page"].cards]
    assert dates == sorted(dates, reverse=True)
    assert len(dates) == 4


def test_matches_are_highlighted_and_everything_else_escaped(client, papers):
    response = client.get(URL, {"q": "agents", "mode": "keyword"})
    html = response.content.decode()
    assert "<mark>agents</mark>" in html
    assert "<mark>Agents</mark>" in html
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;b&gt;bold&lt;/b&gt;" in html
    # TeX stays whole for KaTeX.
    assert "SrTiO$_3$" in html


def test_a_hostile_query_is_escaped_in_the_page(client, papers):
    response = client.get(URL, {"q": 'agents "<img src=x onerror=alert(1)>"'})
    html = response.content.decode()
    assert response.status_code == 200
    assert "<img src=x" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


def test_prefix_highlights_every_word_it_begins():
    words, prefixes = highlight_terms('agent* "tool use" -survey NOT graphs OR (planning)')
    assert prefixes == "agent"
    assert words == "tool use planning"


def test_the_ranking_reads_the_whole_query_language():
    """Grouping, prefixes and NOT reach the ranking as written: the search page and the API
    take the saved searches' language, not a websearch approximation of it."""
    found = {
        name: PaperFactory(title=title, abstract=abstract)
        for name, title, abstract in [
            ("agentic", "Agentic workflows", "Planning with tools."),
            ("planner", "A planner for robots", "Motion planning with graphs."),
            ("survey", "Agentic systems: a survey", "We review the field."),
            ("other", "Diphoton production", "Cross sections at the LHC."),
        ]
    }

    def keyword(q):
        ranked = papers_search(q=q, mode="keyword").ranked
        return {name for name, paper in found.items() if paper.pk in dict(ranked)}

    assert keyword("(agent* OR planner) NOT survey") == {"agentic", "planner"}
    assert keyword("agent*") == {"agentic", "survey"}
    # (a OR b) c is not a OR (b c).
    assert keyword("(agentic OR planner) graphs") == {"planner"}
    assert keyword("agentic OR planner graphs") == {"agentic", "survey", "planner"}
    assert keyword('"motion planning" -graphs') == set()


def test_words_query_always_parses():
    for text in ['What is "RL - based (x', "a ( - b", "NOT AND OR", "gpt-4 agents*?"]:
        compile_rule(words_query(text))
    assert words_query("Which agents use (tools)?") == "Which agents use tools ?"


def test_no_query_shows_tips(client, papers):
    response = client.get(URL)
    assert response.status_code == 200
    assert "How to search" in response.content.decode()
    assert response.context["result_page"] is None


def test_no_results_suggest_dropping_the_filters(client, papers):
    response = client.get(URL, {"q": "quasars", "mode": "keyword", "category": "cs.LG"})
    html = response.content.decode()
    assert response.status_code == 200
    assert "No papers found" in html
    assert "Search again without the filters" in html
    assert 'href="?q=quasars"' in html


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            {"q": "(agents"},
            "The query does not parse: &#x27;(&#x27; is never closed at position 0.",
        ),
        ({"q": "agents OR"}, "OR needs a term after it at position 7"),
        ({"q": '"tool use'}, "unclosed quote at position 0"),
        ({"q": "a" * 301}, "at most 300 are allowed"),
        ({"q": "agents\x00"}, "Null characters are not allowed."),
        ({"q": "agents\x1b[31m"}, "Control character U+001B at position 6"),
        ({"q": "agents", "topic": "no-such-topic"}, "Unknown topic no-such-topic"),
        ({"q": "agents", "category": "xx.YY"}, "Unknown arXiv category xx.YY"),
        ({"q": "agents", "submitted_after": "2026-13-01"}, "Enter a date as YYYY-MM-DD."),
        (
            {"q": "agents", "submitted_after": "2026-09-10", "submitted_before": "2026-09-01"},
            "The range ends (2026-09-01) before it starts (2026-09-10).",
        ),
        ({"q": "agents", "sort": "oldest"}, "Unknown sort oldest; one of: relevance, newest."),
        ({"q": "agents", "mode": "fuzzy"}, "Unknown mode fuzzy; one of: hybrid, keyword"),
        ({"q": "agents", "page": "two"}, "page must be a whole number from 1."),
        ({"q": "agents", "page": "0"}, "greater than or equal to 1"),
    ],
)
def test_bad_input_is_a_400_naming_what_was_wrong(client, papers, params, message):
    response = client.get(URL, params)
    assert response.status_code == 400
    assert message in response.content.decode()


def test_a_page_past_the_last_is_a_404_naming_the_last(client, papers):
    response = client.get(URL, {"q": "agents", "mode": "keyword", "page": "9"})
    assert response.status_code == 404
    assert "There is no page 9 of these results; the last is page 1." in (response.content.decode())


def test_paging(client, papers, monkeypatch):
    monkeypatch.setattr("topics.views.SEARCH_RESULTS_PER_PAGE", 3)
    first = client.get(URL, {"q": "agents", "mode": "keyword"})
    second = client.get(URL, {"q": "agents", "mode": "keyword", "page": "2"})
    assert len(first.context["result_page"].cards) == 3
    assert len(second.context["result_page"].cards) == 1
    assert 'href="?q=agents&amp;mode=keyword&amp;page=2"' in first.content.decode()
    assert 'rel="prev"' in second.content.decode()


def test_query_count_does_not_grow_with_the_results(client, papers):
    def count(q: str) -> int:
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as queries:
            assert client.get(URL, {"q": q, "mode": "keyword", "sort": "newest"}).status_code
        return len(queries)

    few = count("graphs")
    for n in range(25):
        PaperFactory(title=f"Graphs of {n} kinds", abstract="Graphs, many of them.")
    assert count("graphs") == few


def test_signed_out_save_leads_to_login_and_back(client, papers):
    html = client.get(URL, {"q": "agents"}).content.decode()
    assert "/accounts/login/?next=/search/%3Fq%3Dagents" in html


def test_the_header_search_box_is_on_every_page(client, papers):
    html = client.get("/topics/").content.decode()
    assert 'action="/search/"' in html
    assert 'name="q"' in html


def test_highlights_leave_cards_without_a_match_plain(papers):
    from topics.cards import paper_cards

    cards = paper_cards(paper_ids=[papers["graphs"].pk])
    cards_highlight(cards, query="agents")
    assert cards[0].teaser_html is None
    assert cards[0].title_html == "Graph neural networks"


def test_sorts_are_checked():
    with pytest.raises(ValueError, match="Unknown sort"):
        page_module.search_page(
            query="a", scope=None, mode="keyword", sort="x", number=1, per_page=1
        )


def test_hybrid_on_embedded_papers_is_the_api_ranking_page_for_page(
    client, papers, settings, tmp_path
):
    from papers.embeddings.store import embed_papers

    settings.EMBEDDING_INDEX_DIR = tmp_path / "vectors"
    # The made-up papers are short: let the semantic arm offer all of them, however far.
    settings.SEARCH_SEMANTIC_MIN_COSINE = -1.0
    assert embed_papers([paper.pk for paper in papers.values()]) == len(papers)
    response = client.get(URL, {"q": "software agents that call tools"})
    results = response.context["result_page"].results
    assert (results.mode, results.fallback) == ("hybrid", None)
    expected = papers_search(q="software agents that call tools", mode="hybrid").ranked
    assert [card.pk for card in response.context["result_page"].cards] == [pk for pk, _ in expected]
    # A paper found by meaning alone is listed, its card plain (nothing to highlight).
    assert papers["graphs"].pk in [pk for pk, _ in expected]
    assert "Matched by words only" not in response.content.decode()


def test_the_filter_menus_list_every_topic_and_category_escaped_and_keep_the_choice(client, papers):
    """The menus are built in Python (topics.views._options_html): every active topic and
    stored category once, names escaped, the chosen ones selected, an unknown choice (a 400)
    selecting nothing."""
    TopicFactory(name='Risky <b>"quoted"</b> & topic', slug="risky")
    html = client.get(URL, {"q": "agents", "topic": "agents", "category": "cs.LG"}).content
    html = html.decode()
    topic_menu = html.split('id="search-topic"')[1].split("</select>")[0]
    category_menu = html.split('id="search-category"')[1].split("</select>")[0]
    assert re.findall(r'<option value="([^"]*)"', topic_menu) == ["", "agents", "risky"]
    assert re.findall(r'<option value="([^"]*)"', category_menu) == ["", "cs.CL", "cs.LG"]
    assert '<option value="agents" selected>Agents</option>' in topic_menu
    assert '<option value="cs.LG" selected>' in category_menu
    assert "Risky &lt;b&gt;&quot;quoted&quot;&lt;/b&gt; &amp; topic" in topic_menu
    assert "<b>" not in topic_menu
    assert topic_menu.count(" selected") == 1 and category_menu.count(" selected") == 1

    unknown = client.get(URL, {"q": "agents", "topic": "no-such-topic"})
    assert unknown.status_code == 400
    menu = unknown.content.decode().split('id="search-topic"')[1].split("</select>")[0]
    assert " selected" not in menu
