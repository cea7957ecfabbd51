"""The topics index reads stored counts (``topics.selectors.topic_tree``): a topic deleted
by the admin (Django's delete, no service) must mark its ancestors' counts behind (found by a
breaker)."""

import pytest

from papers.tests.factories import PaperFactory
from topics.selectors import topic_papers, topic_tree
from topics.tests.factories import AssignmentFactory, TopicFactory

pytestmark = pytest.mark.django_db


def _counts(roots):
    out, stack = {}, list(roots)
    while stack:
        node = stack.pop()
        out[node.topic.pk] = node.paper_count
        stack.extend(node.children)
    return out


def test_index_count_after_a_child_topic_is_deleted(django_capture_on_commit_callbacks):
    """The admin deletes a topic with Django's delete (no service, no stats invalidation)."""
    parent = TopicFactory(name="Parent")
    child = TopicFactory(name="Child", parent=parent)
    AssignmentFactory(paper=PaperFactory(), topic=child)
    AssignmentFactory(paper=PaperFactory(), topic=parent)
    assert _counts(topic_tree())[parent.pk] == 2
    with django_capture_on_commit_callbacks(execute=True):
        child.delete()
    assert topic_papers(topic=parent).count() == 1
    assert _counts(topic_tree())[parent.pk] == 1
