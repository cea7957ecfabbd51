"""Reads other pages build on: papers of a follow and of all a user's follows, which follows
matched which papers, follower counts; bounded query counts whatever the data."""

import datetime as dt

import pytest
from django.utils import timezone

from follows.models import Follow, SearchMatch
from follows.selectors import follow_papers, follower_count, user_follow_matches, user_papers
from follows.services import follow_create, follow_search_create, search_matches_create
from papers.models import Paper

from .conftest import assign, make_paper

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(reader, other_reader, taxonomy, categories):
    """reader follows ``agents`` (parent of ``tool-use``) and the search "planning"; the other
    reader follows ``vision`` and the search "agents"."""
    p = {
        "parent": make_paper("Agents at large", submitted=dt.date(2026, 9, 20)),
        "child": make_paper("Tool use", submitted=dt.date(2026, 9, 25), withdrawn=True),
        "both": make_paper("Planning agents", submitted=dt.date(2026, 9, 25)),
        "search": make_paper("Planning only", submitted=dt.date(2026, 9, 10)),
        "vision": make_paper("Seeing", submitted=dt.date(2026, 9, 28)),
        "rejected": make_paper("Rejected agents", submitted=dt.date(2026, 9, 29)),
        "deleted": make_paper(
            "Planning, deleted upstream",
            submitted=dt.date(2026, 9, 26),
            deleted_at=timezone.now(),
        ),
    }
    assign(p["parent"], taxonomy["agents"])
    assign(p["child"], taxonomy["tool-use"])
    assign(p["both"], taxonomy["agents"])
    assign(p["both"], taxonomy["tool-use"])  # two paths to one paper: still one row
    assign(p["vision"], taxonomy["vision"])
    assign(p["rejected"], taxonomy["agents"], state="rejected")
    assign(p["deleted"], taxonomy["agents"])
    f = {
        "agents": follow_create(user=reader, topic=taxonomy["agents"]),
        "planning": follow_search_create(user=reader, query="planning"),
        "vision": follow_create(user=other_reader, topic=taxonomy["vision"]),
        "their-search": follow_search_create(user=other_reader, query="agents"),
    }
    search_matches_create(paper_ids=[x.pk for x in p.values()])
    return p, f


def test_follow_papers_include_descendants_but_not_withdrawn_or_deleted_papers(world):
    p, f = world
    # "child" is withdrawn, "deleted" deleted upstream: in the topic and the search, not here.
    assert list(follow_papers(follow=f["agents"])) == [p["both"], p["parent"]]
    assert list(follow_papers(follow=f["planning"])) == [p["both"], p["search"]]


def test_user_papers_is_one_distinct_query_newest_first_and_only_the_users(
    world, reader, django_assert_num_queries
):
    p, _ = world
    with django_assert_num_queries(1):
        papers = list(user_papers(user=reader))
    assert papers == [p["both"], p["parent"], p["search"]]


def test_user_papers_since_keeps_papers_stored_from_then(world, reader):
    p, _ = world
    later = timezone.now() + dt.timedelta(hours=1)
    Paper.objects.filter(pk=p["search"].pk).update(created_at=later + dt.timedelta(minutes=1))
    assert list(user_papers(user=reader, since=later)) == [p["search"]]
    assert len(user_papers(user=reader, since=dt.date(2000, 1, 1))) == 3


def test_user_papers_of_a_user_following_nothing_is_empty(world, django_user_model):
    assert list(user_papers(user=django_user_model.objects.create(username="new"))) == []


def test_user_follow_matches_names_the_follows_of_each_paper(world, reader, other_reader):
    p, f = world
    # Every paper of user_papers: the withdrawn "child" and the deleted one are not.
    assert user_follow_matches(user=reader) == {
        p["both"].pk: [f["agents"], f["planning"]],
        p["parent"].pk: [f["agents"]],
        p["search"].pk: [f["planning"]],
    }
    ids = [p["vision"].pk, p["both"].pk, p["rejected"].pk]
    assert user_follow_matches(user=other_reader, paper_ids=ids) == {
        p["vision"].pk: [f["vision"]],
        p["both"].pk: [f["their-search"]],
        p["rejected"].pk: [f["their-search"]],
    }


def test_user_follow_matches_honours_since_and_topic_scopes(world, reader, taxonomy):
    p, f = world
    Paper.objects.exclude(pk=p["both"].pk).update(created_at=timezone.now() - dt.timedelta(days=9))
    since = timezone.now() - dt.timedelta(days=1)
    assert list(user_follow_matches(user=reader, since=since)) == [p["both"].pk]
    assert list(user_follow_matches(user=reader, paper_ids=[p["search"].pk], since=since)) == []

    scoped = follow_search_create(user=reader, query="planning agents", topics=["vision"])
    search_matches_create(paper_ids=[p["both"].pk])
    assert SearchMatch.objects.filter(follow=scoped).exists()
    assert scoped not in user_follow_matches(user=reader, paper_ids=[p["both"].pk])[p["both"].pk]
    assign(p["both"], taxonomy["vision"])
    assert scoped in user_follow_matches(user=reader, paper_ids=[p["both"].pk])[p["both"].pk]


def test_user_follow_matches_queries_do_not_grow_with_papers_or_follows(
    world, reader, taxonomy, django_assert_max_num_queries
):
    p, _ = world
    with django_assert_max_num_queries(5):
        user_follow_matches(user=reader)
    for n in range(20):
        paper = make_paper(f"Planning {n}")
        assign(paper, taxonomy["tool-use"])
        follow_search_create(user=reader, query=f"planning {n}")
    search_matches_create(paper_ids=Paper.objects.values_list("pk", flat=True))
    with django_assert_max_num_queries(5):
        result = user_follow_matches(user=reader)
    assert len(result) == 23


def test_follower_count_counts_followers_of_the_topic_itself(world, taxonomy, other_reader):
    assert follower_count(topic=taxonomy["agents"]) == 1
    assert follower_count(topic=taxonomy["tool-use"]) == 0
    follow_create(user=other_reader, topic=taxonomy["agents"])
    assert follower_count(topic=taxonomy["agents"]) == 2
    assert Follow.objects.filter(kind="search").count() == 2  # searches are not followers


def test_topic_follow_states_count_followers_and_say_who_follows_in_one_query(
    reader, other_reader, taxonomy, django_assert_num_queries
):
    from django.contrib.auth.models import AnonymousUser

    from follows.selectors import topic_follow_states

    followed, quiet = taxonomy["agents"], taxonomy["vision"]
    follow_create(user=reader, topic=followed)
    follow_create(user=other_reader, topic=followed)

    with django_assert_num_queries(1):
        states = topic_follow_states(user=reader, topic_ids=[followed.pk, quiet.pk, 10**9])
    assert states == {
        followed.pk: (followed.slug, 2, True),
        quiet.pk: (quiet.slug, 0, False),
    }
    assert topic_follow_states(user=AnonymousUser(), topic_ids=[followed.pk]) == {
        followed.pk: (followed.slug, 2, False)
    }
    assert follower_count(topic=followed) == 2
