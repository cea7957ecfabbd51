"""A topic merge moves its follows to the target (``follows.receivers`` on
``topics.signals.topics_merged``), once per user, after the merge commits."""

import datetime as dt

import pytest
from django.utils import timezone

from follows.models import Follow
from follows.receivers import move_follows_of_merged_topic
from follows.services import follow_create
from topics.services import topic_create, topic_merge
from topics.tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def topics():
    return topic_create(name="Tool use", slug="tool-use"), topic_create(
        name="Agents", slug="agents"
    )


def follows():
    return set(Follow.objects.values_list("user__username", "topic__slug"))


def test_merge_moves_follows_to_the_target_once_per_user(
    topics, django_capture_on_commit_callbacks, client
):
    source, target = topics
    only_source, both, only_target = (UserFactory(username=n) for n in ("ann", "bob", "cy"))
    old = timezone.now() - dt.timedelta(days=30)
    moved = follow_create(user=only_source, topic=source)
    Follow.objects.filter(pk=moved.pk).update(created_at=old)
    follow_create(user=both, topic=source)
    kept = follow_create(user=both, topic=target)
    follow_create(user=only_target, topic=target)

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        topic_merge(source=source, target=target, user=UserFactory(is_staff=True))
    # Nothing moves before the merge commits.
    assert ("ann", "tool-use") in follows()
    for callback in callbacks:
        callback()

    assert follows() == {("ann", "agents"), ("bob", "agents"), ("cy", "agents")}
    moved.refresh_from_db()
    assert (moved.topic_id, moved.created_at) == (target.pk, old)  # the same follow, moved
    assert Follow.objects.get(user=both).pk == kept.pk
    # The follow button on the target page shows the moved follower as following.
    client.force_login(only_source)
    page = client.get("/topics/agents/").content.decode()
    assert 'value="unfollow"' in page


def test_the_receiver_run_twice_changes_nothing_more(topics):
    source, target = topics
    follow_create(user=UserFactory(username="ann"), topic=source)

    assert move_follows_of_merged_topic(sender=None, source_id=source.pk, target_id=target.pk) == 1
    assert move_follows_of_merged_topic(sender=None, source_id=source.pk, target_id=target.pk) == 0
    assert follows() == {("ann", "agents")}


def test_a_refused_merge_moves_no_follows(topics, django_capture_on_commit_callbacks):
    source, target = topics
    follow_create(user=UserFactory(username="ann"), topic=source)
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(ValueError):
        topic_merge(source=source, target=source, user=UserFactory())
    assert follows() == {("ann", "tool-use")}
