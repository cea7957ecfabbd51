"""``search/?q=``: ranked full text over title and abstract, with the paper filters."""

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from papers.models import Paper
from topics import search
from topics.search import full_text_match, full_text_ranked

from .conftest import ids, make_paper

pytestmark = pytest.mark.django_db


def test_results_are_ranked_best_match_first(api_client, world):
    make_paper(
        arxiv_id="2609.00030",
        title="Memory, memory and more memory",
        abstract="Memory for agents: a memory survey.",
    )
    body = api_client.get("/api/v1/search/?q=memory").json()
    assert [p["id"] for p in body["results"]] == ["2609.00030", "2609.00002"]
    ranks = [p["rank"] for p in body["results"]]
    assert ranks[0] > ranks[1] > 0
    assert body["count"] == 2


def test_search_takes_the_paper_filters(api_client, world):
    assert ids(api_client.get("/api/v1/search/?q=agents&topic=llm-agent-training")) == [
        "2609.00001",
        "2609.00002",
    ]
    assert ids(api_client.get("/api/v1/search/?q=agents&primary_category=cs.LG")) == ["2608.00003"]


def test_web_search_syntax_phrases_and_exclusions(api_client, world):
    assert ids(api_client.get('/api/v1/search/?q="language model agents"')) == ["2609.00001"]
    assert ids(api_client.get("/api/v1/search/?q=agents -memory -scaling")) == ["2609.00001"]


def _plan(queryset, *, sort: bool = True) -> str:
    """EXPLAIN of ``queryset`` with sequential scans (and, unless ``sort``, sorts) priced out,
    so the tiny test tables plan as a large table would."""
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        if not sort:
            cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute(f"EXPLAIN {sql}", params)
        return "\n".join(row[0] for row in cursor.fetchall())


def test_the_match_uses_the_stored_vector_and_its_gin_index(world):
    """The match reads the stored column (papers migration 0005), never recomputing it."""
    queryset = full_text_match(Paper.objects.order_by(), "agents").values("id")
    assert "to_tsvector" not in str(queryset.query)
    assert "paper_search_vector_idx" in _plan(queryset)


def test_the_stored_vector_follows_every_write(api_client, world):
    """PostgreSQL computes the column: an ORM update and a raw insert are both searchable."""
    world.old.title = "Strings and holography, withdrawn"
    world.old.save()
    Paper.objects.filter(pk=world.second.pk).update(abstract="Nothing about planning.")
    assert ids(api_client.get("/api/v1/search/?q=holography")) == ["hep-th/0601001"]
    assert ids(api_client.get("/api/v1/search/?q=module")) == []


def test_papers_stored_by_the_copy_backfill_are_searchable(api_client, db):
    from papers.categories import category_sync
    from papers.ingest.backfill import snapshot_import
    from papers.tests.conftest import SNAPSHOT_HEAD

    category_sync()
    snapshot_import(path=SNAPSHOT_HEAD, batch_size=50, tag=False)
    # The first record: "Calculation of prompt diphoton production cross sections at
    # Tevatron and LHC energies".
    assert "0704.0001" in ids(api_client.get("/api/v1/search/?q=diphoton tevatron"))


def test_a_word_in_the_title_outranks_the_same_word_in_the_abstract(api_client, world):
    make_paper(arxiv_id="2609.00040", title="Planning", abstract="A survey.")
    body = api_client.get("/api/v1/search/?q=plan").json()
    assert [p["id"] for p in body["results"]] == ["2609.00040", "2609.00002"]


def test_only_the_newest_matches_are_ranked(world):
    """The window holds the newest ``window`` matches; an older better match stays out, and
    within the window the best match comes first."""
    make_paper(
        arxiv_id="2001.00050",
        title="Agents agents agents",
        abstract="Agents.",
        submitted=dt.date(2020, 1, 6),
    )
    matches = full_text_match(Paper.objects.all(), "agents")
    assert matches.count() == 4
    ranked = full_text_ranked(matches, "agents", window=3)
    by_id = dict(Paper.objects.values_list("id", "arxiv_id"))
    assert {by_id[paper_id] for paper_id, _ in ranked} == {
        "2609.00001",
        "2609.00002",
        "2608.00003",
    }
    ranks = [rank for _, rank in ranked]
    assert ranks == sorted(ranks, reverse=True) and ranks[-1] > 0


def test_count_is_the_ranked_window_not_every_match(api_client, world, monkeypatch):
    monkeypatch.setattr(search, "SEARCH_WINDOW", 2)
    body = api_client.get("/api/v1/search/?q=agents").json()
    assert body["count"] == 2
    assert {p["id"] for p in body["results"]} == {"2609.00001", "2609.00002"}


def test_queries_per_search_do_not_grow_with_page_size(api_client, world):
    for n in range(10):
        make_paper(
            arxiv_id=f"2609.{10100 + n}",
            title=f"Agents number {n}",
            abstract="Agents.",
            authors=[(f"Author {n}", [f"Institute {n}"])],
            affiliations=[f"Institute {n}"],
            topics=[world.agents],
        )
    with CaptureQueriesContext(connection) as small:
        assert len(ids(api_client.get("/api/v1/search/?q=agents&page_size=2"))) == 2
    with CaptureQueriesContext(connection) as large:
        assert len(ids(api_client.get("/api/v1/search/?q=agents&page_size=100"))) == 13
    assert len(large) == len(small)


def test_the_category_list_walks_its_index_newest_first(world):
    """``papers/?primary_category=`` reads the newest papers of the category from
    ``paper_category_newest_idx`` instead of sorting the category's papers."""
    queryset = Paper.objects.filter(primary_category=world.second.primary_category_id).order_by(
        "-submitted", "-id"
    )[:26]
    plan = _plan(queryset, sort=False)
    assert "paper_category_newest_idx" in plan
    assert "Sort" not in plan


def test_the_vector_is_never_loaded_or_written_by_django(world):
    """The field is virtual to Django: not in SELECT or INSERT lists, None on instances."""
    with CaptureQueriesContext(connection) as ctx:
        paper = Paper.objects.get(pk=world.first.pk)
        paper.full_clean()
        paper.save()
        make_paper(arxiv_id="2609.00060", title="Fresh", abstract="Fresh words.")
    assert paper.search_vector is None
    assert not any("search_vector" in query["sql"] for query in ctx.captured_queries)


def test_author_and_affiliation_substrings_can_use_trigram_indexes(world):
    from papers.models import Affiliation, Author

    assert "author_name_trgm_idx" in _plan(
        Author.objects.filter(name__icontains="baker").order_by()
    )
    assert "affiliation_name_trgm_idx" in _plan(
        Affiliation.objects.filter(name__icontains="somewhere").order_by()
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("q", "expected"),
    [
        ("memory agent", {"mem"}),  # every word, any order
        ("agent memory", {"mem"}),
        ('"tool use"', {"tool"}),  # a phrase
        ('"use tool"', set()),
        ("memory OR tool", {"mem", "tool"}),
        ("agent -memory", {"tool"}),
        ("(memory OR diphoton) llm", {"mem"}),  # grouping
        ("agent NOT (tool OR memory)", set()),
        ("", {"mem", "tool", "other"}),
    ],
)
def test_the_substring_fallback_reads_the_query_language(q, expected):
    """What search/ and papers/?q= do on the embedded SQLite default, run here on PostgreSQL
    through the same Q object."""
    from papers.models import Paper
    from papers.tests.factories import PaperFactory
    from topics.search import substring_query

    papers = {
        "mem": PaperFactory(title="Memory for LLM agents", abstract="Agents that remember."),
        "tool": PaperFactory(title="Agents and tool use", abstract="How an agent calls tools."),
        "other": PaperFactory(title="Diphoton production", abstract="Cross sections."),
    }
    found = set(Paper.objects.filter(substring_query(q)).values_list("pk", flat=True))

    assert found == {papers[name].pk for name in expected}


@pytest.mark.parametrize("url", ["/api/v1/search/", "/api/v1/papers/"])
def test_prefix_search_finds_every_word_the_prefix_begins(api_client, world, url):
    make_paper(arxiv_id="2609.00031", title="Agentless program repair", abstract="Plans.")
    with_prefix = set(ids(api_client.get(url, {"q": "agent*"})))
    assert "2609.00031" in with_prefix
    assert with_prefix > set(ids(api_client.get(url, {"q": "agents"})))
    assert "2609.00031" not in ids(api_client.get(url, {"q": "agent* -agentless"}))


@pytest.mark.parametrize("url", ["/api/v1/search/", "/api/v1/papers/"])
def test_grouping_reaches_the_match(api_client, world, url):
    grouped = set(ids(api_client.get(url, {"q": "(memory OR scaling) agents"})))
    flat = set(ids(api_client.get(url, {"q": "memory OR scaling agents"})))
    assert grouped <= flat


@pytest.mark.parametrize("url", ["/api/v1/search/", "/api/v1/papers/"])
@pytest.mark.parametrize(
    ("q", "says"),
    [
        ('"tool use', "unclosed quote at position 0"),
        ('agents "', "unclosed quote at position 7"),
        ("((agents", "'(' is never closed at position 1"),
        ("-", "'-' must be followed directly by a term at position 0"),
        ("'; --", "'-' must be followed directly by a term at position 4"),
        ("5 * 3", "'*' must end a word of at least one character at position 2"),
        ("agents OR", "OR needs a term after it at position 7"),
    ],
)
def test_a_query_that_does_not_parse_is_a_400_saying_why_and_where(client, url, q, says):
    """The same parser and message as the search page and saved searches."""
    response = client.get(url, {"q": q})
    assert response.status_code == 400
    details = " ".join(response.json()["error"]["details"]["q"])
    assert f"The query does not parse: {says}" in details


def test_a_star_inside_a_phrase_is_not_a_prefix(client):
    assert client.get("/api/v1/search/", {"q": '"rating *"'}).status_code == 200


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"q": "a" * 301}, "at most 300 characters"),
        ({"q": "agents\x00"}, "Null characters are not allowed"),
        ({"q": "agents \x1b[31m"}, "Control character U+001B at position 7"),
        ({"q": "age\x85nts"}, "Control character U+0085 at position 3"),
        (
            {"q": "agents", "mode": "fuzzy"},
            "Unknown mode 'fuzzy'; one of: hybrid, keyword, semantic.",
        ),
        ({"mode": "keyword"}, "This field is required"),
    ],
)
def test_hostile_input_is_a_400_naming_the_parameter(api_client, world, params, says):
    response = api_client.get("/api/v1/search/", params)
    assert response.status_code == 400
    details = response.json()["error"]["details"]
    name = "mode" if "mode" in says else "q"
    assert any(says in message for message in details[name]), details


@pytest.mark.parametrize("q", ["the of and", "'; DROP", "((agents))", "-the", "AND-OR", "))x"[2:]])
@pytest.mark.parametrize("mode", ["hybrid", "keyword", "semantic"])
def test_odd_queries_answer_200(api_client, world, q, mode):
    response = api_client.get("/api/v1/search/", {"q": q, "mode": mode})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["meta"]["requested_mode"] == mode
    if q == "the of and":
        assert body["results"] == [] and body["count"] == 0


def test_tab_and_newline_are_spaces_not_errors(api_client, world):
    assert ids(api_client.get("/api/v1/search/", {"q": "memory\tagents\n"})) == ["2609.00002"]


def test_without_vectors_the_response_says_it_ranked_by_keywords(api_client, world):
    body = api_client.get("/api/v1/search/", {"q": "agents"}).json()
    assert body["meta"]["mode"] == "keyword"
    assert body["meta"]["requested_mode"] == "hybrid"
    assert "no paper has a vector" in body["meta"]["fallback"]
    keyword = api_client.get("/api/v1/search/", {"q": "agents", "mode": "keyword"}).json()
    assert keyword["meta"] == {
        "count": keyword["count"],
        "count_exact": True,
        "mode": "keyword",
        "requested_mode": "keyword",
        "fallback": None,
    }
    assert [p["id"] for p in keyword["results"]] == [p["id"] for p in body["results"]]


def test_meta_counts_the_ranking_and_group_by_facets_every_page(api_client, world):
    body = api_client.get("/api/v1/search/?q=agents&page_size=1").json()
    assert body["meta"]["count"] == body["count"] >= 3
    assert body["meta"]["count_exact"] is True
    assert body["group_by"] is None
    faceted = api_client.get(
        "/api/v1/search/", {"q": "agents", "page_size": 1, "group_by": "primary_category"}
    ).json()
    assert len(faceted["results"]) == 1
    # The facet counts every ranked paper, not the one page shown.
    groups = {g["key"]: g["count"] for g in faceted["group_by"]}
    assert sum(groups.values()) == body["count"]
    ranked = Paper.objects.filter(
        arxiv_id__in=[p["id"] for p in api_client.get("/api/v1/search/?q=agents").json()["results"]]
    )
    for code, count in groups.items():
        assert ranked.filter(primary_category__code=code).count() == count
    by_topic = api_client.get("/api/v1/search/", {"q": "agents", "group_by": "topic"}).json()
    assert {"key", "key_display_name", "count"} <= set(by_topic["group_by"][0])


def test_group_by_of_nothing_found_is_empty_and_a_bad_key_is_a_400(api_client, world):
    body = api_client.get("/api/v1/search/", {"q": "zzzqqqnothing", "group_by": "author"}).json()
    assert body["count"] == 0
    assert body["group_by"] == []
    response = api_client.get("/api/v1/search/", {"q": "agents", "group_by": "colour"})
    assert response.status_code == 400
    assert "group_by" in response.json()["error"]["details"]
