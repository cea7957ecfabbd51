"""Saved searches: ``follow_search_create`` checks the query, resolves scopes, is idempotent
and backfills matches on commit; ``follow_update`` and ``follow_delete`` on follows."""

import datetime as dt

import pytest
from django.core.exceptions import ValidationError

from follows.models import Follow, SearchMatch
from follows.services import follow_create, follow_delete, follow_search_create, follow_update
from topics.models import TopicRedirect

from .conftest import make_paper

pytestmark = pytest.mark.django_db


def test_creates_a_normalised_search_with_scopes_and_is_idempotent(reader, taxonomy, categories):
    follow = follow_search_create(
        user=reader,
        query='  "language   model"\n agent*  ',
        topics=["agents", "agents"],
        categories=["cs.CL", "math.MP"],  # an alias: stored as math-ph
        digest_frequency="daily",
    )

    assert (follow.kind, follow.query, follow.digest_frequency) == (
        "search",
        '"language model" agent*',
        "daily",
    )
    assert follow.topic is None
    assert list(follow.topic_scope.values_list("slug", flat=True)) == ["agents"]
    assert sorted(follow.category_scope.values_list("code", flat=True)) == ["cs.CL", "math-ph"]

    again = follow_search_create(user=reader, query='"language model"   agent*')
    assert again.pk == follow.pk
    assert Follow.objects.count() == 1
    assert again.digest_frequency == "daily"  # the existing follow is left as it was


def test_the_same_query_for_two_users_is_two_follows(reader, other_reader):
    follow_search_create(user=reader, query="agents")
    follow_search_create(user=other_reader, query="agents")
    assert Follow.objects.filter(query="agents").count() == 2


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("agents OR", "OR needs a term after it at position 7"),
        ('"unclosed phrase', "unclosed quote at position 0"),
        ("(tool use", "'(' is never closed at position 0"),
        ("  agent AND", "AND needs a term after it at position 8"),
    ],
)
def test_a_query_that_does_not_parse_is_refused_with_reason_and_position(reader, query, message):
    with pytest.raises(ValidationError) as caught:
        follow_search_create(user=reader, query=query)

    errors = caught.value.error_dict["query"]
    assert errors[0].code == "query_syntax"
    assert f"The query does not parse: {message}." in caught.value.messages
    assert not Follow.objects.exists()


def test_blank_and_too_long_queries_are_refused(reader):
    with pytest.raises(ValidationError, match="Enter a search query"):
        follow_search_create(user=reader, query="   \n ")
    with pytest.raises(ValidationError, match="at most 500 are allowed"):
        follow_search_create(user=reader, query="word " * 101)
    assert not Follow.objects.exists()


def test_unknown_topics_and_categories_are_named_and_nothing_is_written(
    reader, taxonomy, categories
):
    with pytest.raises(ValidationError) as caught:
        follow_search_create(
            user=reader,
            query="agents",
            topics=["agents", "no-such-topic", "gone"],
            categories=["cs.CL", "cs.XX", "astro-ph.ZZ"],
        )

    assert caught.value.message_dict == {
        "topics": ["Unknown topic: no-such-topic, gone."],
        "categories": ["Unknown arXiv category: cs.XX, astro-ph.ZZ."],
    }
    assert not Follow.objects.exists()


def test_an_inactive_topic_is_unknown_and_a_renamed_one_follows_its_redirect(reader, taxonomy):
    taxonomy["vision"].active = False
    taxonomy["vision"].save()
    TopicRedirect.objects.create(old_slug="llm-agents", topic=taxonomy["agents"])

    with pytest.raises(ValidationError, match="Unknown topic: vision"):
        follow_search_create(user=reader, query="agents", topics=["vision"])
    follow = follow_search_create(user=reader, query="agents", topics=["llm-agents"])
    assert list(follow.topic_scope.all()) == [taxonomy["agents"]]


def test_a_bad_frequency_is_refused(reader, taxonomy):
    with pytest.raises(ValidationError, match="must be one of daily, weekly, off"):
        follow_search_create(user=reader, query="agents", digest_frequency="hourly")
    with pytest.raises(ValidationError):
        follow_create(user=reader, topic=taxonomy["agents"], digest_frequency="monthly")
    assert not Follow.objects.exists()


def test_creation_backfills_the_last_90_days_on_commit(
    reader, categories, django_capture_on_commit_callbacks
):
    newest = make_paper("Agents everywhere", submitted=dt.date(2026, 9, 29))
    inside = make_paper("Tool-using agents", submitted=dt.date(2026, 7, 2))  # 89 days before
    outside = make_paper("Old agents", submitted=dt.date(2026, 7, 1))  # 90 days before
    make_paper("Vision transformers", submitted=dt.date(2026, 9, 28))

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        follow = follow_search_create(user=reader, query="agents")
    assert not SearchMatch.objects.exists()  # nothing before commit
    assert len(callbacks) == 1
    callbacks[0]()  # saved_search_backfill.delay, run eagerly in tests

    matched = set(SearchMatch.objects.filter(follow=follow).values_list("paper_id", flat=True))
    assert matched == {newest.pk, inside.pk}
    assert outside.pk not in matched


def test_backfill_honours_the_category_scope_primary_or_cross_list(
    reader, categories, django_capture_on_commit_callbacks
):
    primary = make_paper("Agents", category="cs.LG")
    cross_listed = make_paper("Agents", category="cs.CL", cross_lists=["cs.LG"])
    make_paper("Agents", category="cs.CV")

    with django_capture_on_commit_callbacks(execute=True):
        follow = follow_search_create(user=reader, query="agents", categories=["cs.LG"])

    assert set(SearchMatch.objects.filter(follow=follow).values_list("paper_id", flat=True)) == {
        primary.pk,
        cross_listed.pk,
    }


def test_an_existing_search_queues_no_second_backfill(
    reader, categories, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True) as first:
        follow_search_create(user=reader, query="agents")
    with django_capture_on_commit_callbacks(execute=True) as second:
        follow_search_create(user=reader, query="agents")
    assert (len(first), len(second)) == (1, 0)


def test_follow_update_and_delete_touch_only_the_users_own_follow(reader, other_reader, taxonomy):
    mine = follow_create(user=reader, topic=taxonomy["agents"])
    theirs = follow_search_create(user=other_reader, query="agents")

    assert follow_update(follow=mine, digest_frequency="off").digest_frequency == "off"
    with pytest.raises(ValidationError):
        follow_update(follow=mine, digest_frequency="never")
    mine.refresh_from_db()
    assert mine.digest_frequency == "off"

    follow_delete(user=reader, follow=theirs)  # not theirs to delete: nothing happens
    assert Follow.objects.filter(pk=theirs.pk).exists()
    follow_delete(user=other_reader, follow=theirs)
    assert not Follow.objects.filter(pk=theirs.pk).exists()
    with pytest.raises(ValueError):
        follow_delete(user=reader)
