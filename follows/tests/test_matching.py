"""Matching saved searches against stored papers: the ``papers_stored`` receiver, the
``saved_searches_match`` task (run eagerly here; see test_pipeline_saved_searches.py for a real
worker), folding, category scopes, topic scopes applied when reading, idempotency."""

import pytest
from django.db.models import Max

from follows.models import Follow, SearchMatch
from follows.receivers import match_saved_searches
from follows.selectors import follow_papers
from follows.services import follow_search_create, search_matches_create
from follows.tasks import saved_search_backfill, saved_searches_match
from papers.signals import papers_stored

from .conftest import assign, make_paper

pytestmark = pytest.mark.django_db


def matches():
    return set(SearchMatch.objects.values_list("follow__query", "paper__title"))


@pytest.fixture
def searches(reader, other_reader, taxonomy, categories):
    """Saved searches made before any paper exists (so no backfill finds anything)."""
    return {
        "agents": follow_search_create(user=reader, query="agent* -survey"),
        "strasse": follow_search_create(user=reader, query='"STRASSE model"'),
        "lg-only": follow_search_create(user=other_reader, query="agents", categories=["cs.LG"]),
        "in-agents": follow_search_create(user=other_reader, query="planning", topics=["agents"]),
    }


def test_stored_papers_are_matched_by_the_receiver_and_task(searches):
    papers = [
        make_paper("Agentic workflows", abstract="Tools for LLM agents."),
        make_paper("A survey of agents"),
        make_paper("The Straße Model", abstract="Case folding."),
        make_paper("Agents", category="cs.CL", cross_lists=["cs.LG"]),
        make_paper("Agents", category="cs.CV"),
        make_paper("Planning in the open"),
        make_paper("Unrelated"),
    ]

    papers_stored.send(sender=None, paper_ids=[p.pk for p in papers])

    assert matches() == {
        ("agent* -survey", "Agentic workflows"),
        ("agent* -survey", "Agents"),  # both papers titled "Agents"
        ('"STRASSE model"', "The Straße Model"),
        ("agents", "Agents"),
        ("planning", "Planning in the open"),
    }
    # The cs.LG-scoped search took only the cross-listed paper, not the cs.CV one.
    lg = SearchMatch.objects.filter(follow=searches["lg-only"]).get()
    assert lg.paper.cross_lists.filter(code="cs.LG").exists()


def test_running_the_task_twice_leaves_the_same_rows(searches):
    paper = make_paper("Agents")
    first = saved_searches_match([paper.pk, 999_999])
    rows = list(SearchMatch.objects.order_by("pk").values_list("pk", "follow_id", "paper_id"))
    second = saved_searches_match([paper.pk])

    assert first == second == 1  # "agent* -survey" only: the paper is not in cs.LG
    assert list(SearchMatch.objects.order_by("pk").values_list("pk", "follow_id", "paper_id")) == (
        rows
    )


def test_the_topic_scope_is_applied_when_reading(searches, taxonomy):
    paper = make_paper("Planning with tools")
    search_matches_create(paper_ids=[paper.pk])
    follow = searches["in-agents"]
    # Stored as a match (query and categories), but not in the scope topics yet.
    assert SearchMatch.objects.filter(follow=follow, paper=paper).exists()
    assert list(follow_papers(follow=follow)) == []

    # Tagging that finishes after matching: an accepted assignment in a descendant counts.
    assignment = assign(paper, taxonomy["tool-use"])
    assert list(follow_papers(follow=follow)) == [paper]

    # A curator rejects it: out again. An assignment elsewhere does not count.
    assignment.state = "rejected"
    assignment.save()
    assign(paper, taxonomy["vision"])
    assert list(follow_papers(follow=follow)) == []


def test_the_receiver_queues_nothing_without_saved_searches(reader, categories):
    paper = make_paper("Agents")
    assert match_saved_searches(sender=None, paper_ids=[paper.pk]) is False
    follow_search_create(user=reader, query="agents")
    assert match_saved_searches(sender=None, paper_ids=[]) is False
    assert match_saved_searches(sender=None, paper_ids=[paper.pk]) is True
    assert matches() == {("agents", "Agents")}


def test_backfill_task_of_a_deleted_or_topic_follow_does_nothing(reader, taxonomy, categories):
    make_paper("Agents")
    topic_follow = Follow.objects.create(user=reader, topic=taxonomy["agents"])
    missing = (Follow.objects.aggregate(m=Max("pk"))["m"] or 0) + 1
    assert saved_search_backfill(missing) == 0
    assert saved_search_backfill(topic_follow.pk) == 0
    assert not SearchMatch.objects.exists()


def test_a_batch_larger_than_one_chunk_is_matched_whole(searches, monkeypatch):
    monkeypatch.setattr("follows.services.MATCH_BATCH_SIZE", 2)
    papers = [make_paper(f"Agents {n}") for n in range(5)]
    assert search_matches_create(paper_ids=(p.pk for p in papers)) == 5
    assert SearchMatch.objects.filter(follow=searches["agents"]).count() == 5
