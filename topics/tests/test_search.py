"""Hybrid search (``topics.search``): keyword full text and vector similarity fused into one
ranking, the filters applied to both, the keyword fallback, and bad input. The papers are real
arXiv records (24 of the recorded snapshot), embedded by the real encoder."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from papers.embeddings.store import embed_papers
from papers.models import Paper, PaperEmbedding
from papers.tests.conftest import SNAPSHOT_HEAD
from papers.tests.factories import CategoryFactory, PaperFactory
from topics import search
from topics.search import fuse, has_searchable_words, papers_search, query_parts
from topics.tagging.rules import And, Not, RuleSyntaxError, Term
from topics.tests.factories import AssignmentFactory, TopicFactory

pytestmark = pytest.mark.django_db

# 0704.0001, "Calculation of prompt diphoton production cross sections at Tevatron and LHC
# energies", described without a word of its title.
PARAPHRASE = "pairs of photons emitted in hadron collisions at next-to-leading order in QCD"
PARAPHRASED = "0704.0001"
DIPOLE_PAPERS = {"0704.0033", "0704.0035", "0704.0037", "0704.0038"}


def _records() -> list[dict]:
    """The first 20 records of the recorded snapshot and the four discrete dipole
    approximation papers (0704.0033, 0035, 0037, 0038)."""
    with SNAPSHOT_HEAD.open(encoding="utf-8") as lines:
        records = [json.loads(line) for _, line in zip(range(40), lines, strict=False)]
    return records[:20] + [r for r in records if r["id"] in DIPOLE_PAPERS]


@pytest.fixture(autouse=True)
def index_dir(settings, tmp_path):
    """The vector index in a fresh temporary directory: each test starts without one."""
    settings.EMBEDDING_INDEX_DIR = tmp_path / "vectors"
    return settings.EMBEDDING_INDEX_DIR


@pytest.fixture
def corpus(db) -> dict[str, Paper]:
    """24 recorded snapshot papers (:func:`_records`: real titles, abstracts and primary
    categories), one a day from 2007-04-01, every one embedded."""
    papers = {}
    for day, record in enumerate(_records()):
        title = " ".join(record["title"].split())
        abstract = " ".join(record["abstract"].split())
        papers[record["id"]] = PaperFactory(
            arxiv_id=record["id"],
            title=title,
            abstract=abstract,
            primary_category=CategoryFactory(code=record["categories"].split()[0]),
            submitted=dt.date(2007, 4, 1) + dt.timedelta(days=day),
        )
    assert embed_papers([paper.id for paper in papers.values()]) == len(papers)
    return papers


def _arxiv_ids(results) -> list[str]:
    by_id = dict(Paper.objects.values_list("id", "arxiv_id"))
    return [by_id[paper_id] for paper_id, _ in results.ranked]


def test_hybrid_ranks_a_paraphrased_paper_first_where_keywords_find_nothing(corpus):
    keyword = papers_search(q=PARAPHRASE, mode="keyword")
    assert keyword.ranked == [] and keyword.mode == "keyword"

    hybrid = papers_search(q=PARAPHRASE)
    assert hybrid.mode == "hybrid" and hybrid.fallback is None
    assert _arxiv_ids(hybrid)[0] == PARAPHRASED
    semantic = papers_search(q=PARAPHRASE, mode="semantic")
    assert _arxiv_ids(semantic)[0] == PARAPHRASED
    cosines = [score for _, score in semantic.ranked]
    assert cosines == sorted(cosines, reverse=True) and -1 <= cosines[-1] <= cosines[0] <= 1


def test_a_keyword_match_rises_in_the_fused_ranking(corpus):
    """Unquoted, the words are in the titles of four papers: the keyword arm puts those first
    in the fused list, above what the semantic arm adds (the similarity floor keeps this
    corpus's other papers out: none is about light scattering)."""
    keyword = _arxiv_ids(papers_search(q="discrete dipole approximation", mode="keyword"))
    assert set(keyword) == DIPOLE_PAPERS
    hybrid = _arxiv_ids(papers_search(q="discrete dipole approximation"))
    assert set(hybrid[:4]) == DIPOLE_PAPERS
    assert len(hybrid) >= 4


@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
def test_a_quoted_phrase_binds_the_papers_found_by_meaning(corpus, mode):
    """Quotes ask for the words: no paper without the phrase comes in by meaning."""
    found = _arxiv_ids(papers_search(q='"discrete dipole approximation"', mode=mode))
    assert set(found) == DIPOLE_PAPERS
    found = _arxiv_ids(papers_search(q='scattering "discrete dipole approximation"', mode=mode))
    assert found and set(found) <= DIPOLE_PAPERS


@pytest.mark.parametrize(
    "q", ["zzzqqqnonexistentword", "banana bread recipe", "football world cup results"]
)
def test_a_query_about_nothing_here_finds_nothing_by_meaning(corpus, q, settings):
    """The nearest papers to an unrelated query are only the least unrelated: below the
    similarity floor none is offered; with the floor off, the same query lists every paper."""
    for mode in ("hybrid", "semantic"):
        assert papers_search(q=q, mode=mode).ranked == [], (q, mode)
    settings.SEARCH_SEMANTIC_MIN_COSINE = -1.0
    assert len(papers_search(q=q, mode="semantic").ranked) == len(corpus)


def test_filters_apply_to_the_semantic_candidates(corpus, settings):
    settings.SEARCH_SEMANTIC_MIN_COSINE = -1.0  # every paper of the filter, however far
    math = Paper.objects.filter(primary_category__code__startswith="math.")
    results = papers_search(q=PARAPHRASE, queryset=math, mode="semantic")
    assert results.ranked
    assert set(_arxiv_ids(results)) == set(math.values_list("arxiv_id", flat=True))

    april = Paper.objects.filter(submitted__lte=dt.date(2007, 4, 5))
    assert set(_arxiv_ids(papers_search(q=PARAPHRASE, queryset=april))) <= {
        "0704.0001",
        "0704.0002",
        "0704.0003",
        "0704.0004",
        "0704.0005",
    }


def test_the_index_is_asked_for_more_neighbours_while_too_few_pass_the_filter(corpus, monkeypatch):
    monkeypatch.setattr(search, "NEAREST_FIRST", 2)
    monkeypatch.setattr(search, "NEAREST_GROWTH", 2)
    vector = search.query_vector(PARAPHRASE)
    everything = search.semantic_ranked(Paper.objects.all(), vector, limit=len(corpus))
    farthest = everything[-1][0]
    only = Paper.objects.filter(id=farthest)
    assert search.semantic_ranked(only, vector, limit=1) == [everything[-1]]
    monkeypatch.setattr(search, "NEAREST_LIMIT", 4)
    assert search.semantic_ranked(only, vector, limit=1) == []


def test_withdrawn_papers_are_left_out_of_the_semantic_ranking(corpus):
    Paper.objects.filter(arxiv_id=PARAPHRASED).update(withdrawn=True)
    assert PARAPHRASED not in _arxiv_ids(papers_search(q=PARAPHRASE, mode="semantic"))


def test_without_vectors_hybrid_and_semantic_answer_with_keywords_and_say_so(db):
    PaperFactory(title="Diphoton production at the Tevatron", abstract="Photon pairs.")
    for mode in ("hybrid", "semantic"):
        results = papers_search(q="diphoton", mode=mode)
        assert results.mode == "keyword" and results.requested_mode == mode
        assert "no paper has a vector" in results.fallback
        assert len(results.ranked) == 1 and results.ranked[0][1] > 0


def test_vectors_of_another_model_count_as_none(corpus):
    PaperEmbedding.objects.update(model="someone/else")
    results = papers_search(q=PARAPHRASE)
    assert results.mode == "keyword" and results.ranked == []


@pytest.mark.parametrize("q", ["", "   ", "the of and", "!!! ???", '"!"', "-the", "(of) OR the"])
def test_a_query_without_a_searchable_word_finds_nothing_in_every_mode(corpus, q):
    for mode in search.MODES:
        assert papers_search(q=q, mode=mode).ranked == []


def test_has_searchable_words(db):
    assert has_searchable_words("GRPO")
    assert has_searchable_words('"unbalanced quote')
    assert not has_searchable_words("is it the")


def test_without_full_text_stop_words_are_not_searchable_either(db, monkeypatch):
    """On SQLite (the embedded default) search matches substrings: ``the`` alone found every
    paper where PostgreSQL finds none, against the API's documented "a q of only stopwords
    finds nothing"."""

    class SQLite:
        vendor = "sqlite"

    monkeypatch.setattr(search, "connection", SQLite())
    assert not has_searchable_words("the")
    assert not has_searchable_words("Is it THE (of) -and")
    assert not has_searchable_words("!! __ ")
    assert has_searchable_words("the GRPO")
    assert has_searchable_words("agents_of")
    assert search.searchable_words("of the", "grpo", "") == [False, True, False]


def test_an_unknown_mode_is_a_value_error(db):
    with pytest.raises(ValueError, match="Unknown search mode 'fuzzy'"):
        papers_search(q="agents", mode="fuzzy")


def test_fuse_adds_reciprocal_ranks():
    fused = fuse([[(1, 9.0), (2, 5.0)], [(2, 0.9), (3, 0.8)]], k=60)
    assert [paper_id for paper_id, _ in fused] == [2, 1, 3]
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)
    assert fused[1][1] == pytest.approx(1 / 61)
    assert fuse([[], []]) == []


def test_topic_filter_through_the_api_takes_descendants(corpus, client, settings):
    settings.SEARCH_SEMANTIC_MIN_COSINE = -1.0  # 0704.0002 is far from the description
    parent = TopicFactory(name="Physics", slug="physics")
    child = TopicFactory(name="Colliders", slug="colliders", parent=parent)
    AssignmentFactory(paper=corpus[PARAPHRASED], topic=child)
    AssignmentFactory(paper=corpus["0704.0002"], topic=parent)
    body = client.get("/api/v1/search/", {"q": PARAPHRASE, "topic": "physics"}).json()
    assert body["meta"] == {
        "count": body["count"],
        "count_exact": True,
        "mode": "hybrid",
        "requested_mode": "hybrid",
        "fallback": None,
    }
    assert [paper["id"] for paper in body["results"]] == [PARAPHRASED, "0704.0002"]


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "keyword"])
def test_excluded_words_bind_every_ranking(corpus, mode):
    """``-"phrase"`` and ``-word`` leave out every paper holding them, whichever ranking found
    it: the semantic arm must not bring back what the query excludes."""
    q = 'scattering particles -"discrete dipole approximation"'
    found = set(_arxiv_ids(papers_search(q=q, mode=mode)))
    assert not found & DIPOLE_PAPERS
    if mode != "keyword":
        assert found, "the rest is still ranked by meaning"
    dipole = corpus["0704.0033"]
    words = [w.strip(".,;:()").lower() for w in dipole.abstract.split()]
    word = max((w for w in words if w.isalpha()), key=len)
    for paper_id, _ in papers_search(q=f"light scattering -{word}", mode=mode).ranked:
        paper = Paper.objects.get(pk=paper_id)
        text = f"{paper.title} {paper.abstract}".lower()
        assert not re.search(rf"\b{word}\b", text), (word, paper.arxiv_id)


def test_a_query_of_exclusions_alone_is_answered_by_keywords(corpus):
    results = papers_search(q='-"discrete dipole approximation"')
    assert results.mode == "keyword" and "only excludes" in results.fallback
    assert not set(_arxiv_ids(results)) & DIPOLE_PAPERS


def test_query_parts_split_what_is_asked_from_what_is_excluded():
    positive, excluded = query_parts('agents -"tool use" OR planning -web')
    # OR binds looser than the space: (agents -"tool use") OR (planning -web); no negation
    # binds the whole query.
    assert positive == "agents planning"
    assert excluded is None
    positive, excluded = query_parts('(agents OR planning) -"tool use" NOT web*')
    assert positive == "agents planning"
    assert excluded == And((Not(Term("phrase", "tool use")), Not(Term("prefix", "web"))))
    assert query_parts("Plain Words") == ("plain words", None)
    assert query_parts("   ") == ("", None)


def test_a_malformed_query_raises_with_its_position(db):
    with pytest.raises(RuleSyntaxError, match="unclosed quote at position 7"):
        papers_search(q='agents "tool')


@pytest.mark.parametrize("excluded", ["-the", '-"of the"', "-!!"])
def test_excluding_only_stopwords_excludes_nothing(corpus, excluded):
    """An excluded term full text cannot look for (a stopword, punctuation) leaves nothing
    out, as the keyword match treats it: it must not empty the semantic candidates."""
    plain = papers_search(q=PARAPHRASE, mode="semantic")
    assert plain.ranked
    assert papers_search(q=f"{PARAPHRASE} {excluded}", mode="semantic").ranked == plain.ranked


def _dated_papers(word_years: dict[int, int], *, others: int) -> dict[int, list[Paper]]:
    """``count`` papers holding "lattice" in each year of ``word_years``, and ``others``
    newer papers without it (so that a walk of the newest papers meets them first)."""
    papers: dict[int, list[Paper]] = {}
    for year, count in word_years.items():
        papers[year] = [
            PaperFactory(
                title=f"Lattice gauge study {year}-{index}",
                submitted=dt.date(year, 1 + index % 12, 1 + index % 28),
            )
            for index in range(count)
        ]
    for index in range(others):
        PaperFactory(
            title=f"Fluid flow {index}",
            abstract="Viscous fluids in channels.",
            submitted=dt.date(2025, 1 + index % 12, 1 + index % 28),
        )
    return papers


@pytest.mark.parametrize(
    "plan",
    [(True, None), (False, None), (False, 3), (False, 12), (False, 40)],
    ids=["walk", "gin", "gin-range-too-short", "gin-range", "gin-range-everything"],
)
def test_keyword_ranking_takes_the_newest_matches_by_every_plan(db, monkeypatch, plan):
    """Walking the newest papers, reading every match from the GIN index, and reading those
    among the newest papers first (falling back to every match when the range holds too
    few) must give the same window: the newest matches, ranked."""
    papers = _dated_papers({2015: 6, 2019: 4}, others=8)
    monkeypatch.setattr(search, "_keyword_plan", lambda matches, window, tree: plan)
    matches = search.full_text_match(Paper.objects.all(), "lattice")
    ranked = search.full_text_ranked(matches, "lattice", window=4)
    assert {paper_id for paper_id, _ in ranked} == {paper.pk for paper in papers[2019]}
    assert [rank for _, rank in ranked] == sorted((rank for _, rank in ranked), reverse=True)
    everything = search.full_text_ranked(matches, "lattice", window=20)
    assert len(everything) == 10


def test_the_plan_follows_how_many_papers_match(db, django_assert_max_num_queries):
    """A word in nearly every paper walks the newest papers; a rarer one reads its matches
    from the GIN index, first among as many of the newest papers as should hold two windows
    of them, or all of them when that would be most papers anyway."""
    _dated_papers({2012: 10}, others=60)
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE papers_paper")
    everywhere = search.full_text_match(Paper.objects.all(), "fluid")
    rarer = search.full_text_match(Paper.objects.all(), "lattice")
    with django_assert_max_num_queries(2):
        assert search._keyword_plan(everywhere, 2) == (True, None)
    assert search._keyword_plan(rarer, 5) == (False, None)
    walk, recent = search._keyword_plan(rarer, 1)
    assert not walk and recent is not None and 7 <= recent < 35


def test_words_that_go_together_are_not_taken_for_rare(db):
    """PostgreSQL estimates 'lattice' & 'gauge' as if the words were independent; the plan
    raises the estimate to the rarer word's, so that a pair in every paper still walks."""
    _dated_papers({2012: 10}, others=60)
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE papers_paper")
    both = search.parse_query("fluid viscous")
    matches = search.full_text_match(Paper.objects.all(), both)
    assert search._planner_rows(matches) < 60 * 0.95
    assert search._keyword_plan(matches, 2, both) == (True, None)
    assert search._required_parts(search.parse_query('"fluid flow" -lattice channels')) == (
        Term(kind="word", text="fluid"),
        Term(kind="word", text="flow"),
        Term(kind="word", text="channels"),
    )


def test_a_queryset_filtered_to_nothing_ranks_nothing_without_a_query(db):
    """``none()`` (or ``id__in=[]``) compiles to no SQL: the plan's estimates and the ranking
    answer empty instead of raising."""
    PaperFactory(title="Lattice gauge fields")
    nothing = search.full_text_match(Paper.objects.none(), "lattice")
    assert search.full_text_ranked(nothing, "lattice") == []
    assert (
        search.papers_search(q="lattice", queryset=Paper.objects.none(), mode="keyword").ranked
        == []
    )


def test_any_word_ranking_reads_its_candidates_alone(db):
    """``any_word_ranked`` ranks the given candidates only, by any of the query's words, best
    first; the match is tested on them, never through the full-text index: for a common word
    the planner, unable to estimate the computed query, intersected the word's hundreds of
    thousands of index entries with the candidates' ids."""
    on_word = PaperFactory(title="A model of models", abstract="We model the model.")
    other = PaperFactory(title="Graphs", abstract="Message passing on graphs.")
    PaperFactory(title="Another model", abstract="A model.")  # holds the word, not a candidate
    with CaptureQueriesContext(connection) as queries:
        ranked = search.any_word_ranked([on_word.pk, other.pk], "modelling graphs")
    assert {pk for pk, _ in ranked} == {on_word.pk, other.pk}  # not ``elsewhere``
    assert all(rank > 0 for _, rank in ranked)
    assert [rank for _, rank in ranked] == sorted((rank for _, rank in ranked), reverse=True)
    # A thousand candidates, as hybrid search gives, on a table read as a big one would be.
    with CaptureQueriesContext(connection) as queries:
        search.any_word_ranked([on_word.pk, other.pk, *range(10**9, 10**9 + 998)], "model")
    (sql,) = [q["sql"] for q in queries]
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")
        try:
            cursor.execute("EXPLAIN " + sql)
            plan = "\n".join(row[0] for row in cursor.fetchall())
        finally:
            cursor.execute("RESET enable_seqscan")
    assert "paper_search_vector_idx" not in plan, plan
