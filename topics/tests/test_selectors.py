"""Topic reads (``topics.selectors``): the newest papers of a subtree merged per topic, the
stored paper counts and when they are counted again, and a topic's lineage in one query."""

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from papers.tests.factories import PaperFactory
from topics import caches, selectors, services
from topics.assignments import assignment_decide
from topics.models import Assignment, Topic, TopicStats
from topics.tagging.engine import papers_tag
from topics.tests.conftest import paper_in
from topics.tests.factories import TopicFactory, UserFactory

pytestmark = pytest.mark.django_db


def expected_ids(topic):
    return list(selectors.topic_papers(topic=topic).values_list("id", flat=True))


@pytest.mark.parametrize("plan", ["lateral", "merged"])
@pytest.mark.parametrize("offset, limit", [(0, 30), (0, 1), (3, 4), (5, 100), (14, 5), (40, 3)])
def test_newest_ids_are_topic_papers_in_order_from_any_offset(
    papers_tree, offset, limit, plan, monkeypatch
):
    """Both plans (one LATERAL scan per topic below ``MERGED_BRANCHES_MIN_ROWS`` rows, one
    branch per topic merged from it on) give the topics' papers in order, the topics given as
    ids or as a queryset."""
    threshold = 10**9 if plan == "lateral" else 1
    monkeypatch.setattr(selectors, "MERGED_BRANCHES_MIN_ROWS", threshold)
    parent, children, grandchild = papers_tree
    for topic in [parent, *children, grandchild]:
        subtree = selectors.topic_subtree_ids(topic=topic)
        expected = expected_ids(topic)[offset : offset + limit]
        got = selectors.topic_newest_paper_ids(topic_ids=subtree, limit=limit, offset=offset)
        assert got == expected
        as_queryset = Topic.objects.filter(pk__in=subtree)
        got = selectors.topic_newest_paper_ids(topic_ids=as_queryset, limit=limit, offset=offset)
        assert got == expected


@pytest.mark.parametrize("plan", ["lateral", "merged"])
def test_newest_ids_of_a_topic_keyed_past_32_bits_and_of_no_topic(plan, monkeypatch):
    """Topic keys are 64-bit: a key above 2^31 - 1 is read by both plans, as a list and as a
    queryset (the LATERAL plan's array of keys was 32-bit: a 500 on the topic page); a
    queryset that can match nothing gives nothing."""
    monkeypatch.setattr(selectors, "MERGED_BRANCHES_MIN_ROWS", 10**9 if plan == "lateral" else 1)
    topic = TopicFactory(id=2**31 + 5, name="Far key")
    paper = paper_in(topic)
    assert selectors.topic_newest_paper_ids(topic_ids=[topic.pk], limit=10) == [paper.pk]
    as_queryset = Topic.objects.filter(pk=topic.pk)
    assert selectors.topic_newest_paper_ids(topic_ids=as_queryset, limit=10) == [paper.pk]
    assert selectors.topic_newest_paper_ids(topic_ids=Topic.objects.none(), limit=10) == []


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the plan choice is PostgreSQL's")
def test_many_rows_merge_one_branch_per_topic_few_rows_scan_laterally(papers_tree):
    """From ``MERGED_BRANCHES_MIN_ROWS`` rows on, a queryset of topics is read first and each
    topic gets its own branch (PostgreSQL merges their index scans); below it, the topics
    are a subquery of the one statement."""
    parent, _, _ = papers_tree
    subtree = Topic.objects.filter(pk__in=selectors.topic_subtree_ids(topic=parent))
    many = selectors.MERGED_BRANCHES_MIN_ROWS
    with CaptureQueriesContext(connection) as few_rows:
        selectors.topic_newest_paper_ids(topic_ids=subtree, limit=many - 1)
    with CaptureQueriesContext(connection) as many_rows:
        selectors.topic_newest_paper_ids(topic_ids=subtree, limit=many)
    assert len(few_rows) == 1 and "LATERAL" in few_rows[0]["sql"]
    assert len(many_rows) == 2 and "LATERAL" not in many_rows[1]["sql"]
    assert many_rows[1]["sql"].count("UNION ALL") == len(subtree) - 1


def test_newest_ids_count_a_paper_under_two_children_once(papers_tree):
    parent, _, _ = papers_tree
    subtree = selectors.topic_subtree_ids(topic=parent)
    got = selectors.topic_newest_paper_ids(topic_ids=subtree, limit=100)
    assert len(got) == len(set(got)) == 14


def test_newest_ids_refuse_negative_bounds_and_take_no_topics():
    with pytest.raises(ValueError, match="must not be negative"):
        selectors.topic_newest_paper_ids(topic_ids=[1], limit=-1)
    assert selectors.topic_newest_paper_ids(topic_ids=[], limit=30) == []


def test_count_is_stored_once_then_read_in_one_query(papers_tree):
    parent, children, _ = papers_tree

    assert selectors.topic_paper_count(topic=parent) == 14
    assert (
        selectors.topic_paper_count(topic=children[1])
        == selectors.topic_papers(topic=children[1]).count()
    )
    with CaptureQueriesContext(connection) as captured:
        assert selectors.topic_paper_count(topic=parent) == 14
    assert len(captured) == 1
    assert TopicStats.objects.get(topic=parent).is_current


def test_curator_decision_makes_the_topic_and_its_ancestors_count_again(
    papers_tree, django_capture_on_commit_callbacks
):
    parent, children, grandchild = papers_tree
    before = {t.pk: selectors.topic_paper_count(topic=t) for t in (parent, children[0])}
    only_here = Assignment.objects.get(topic=grandchild)

    with django_capture_on_commit_callbacks(execute=True):
        assignment_decide(assignment=only_here, state=Assignment.State.REJECTED, user=UserFactory())

    assert not TopicStats.objects.get(topic=parent).is_current
    assert selectors.topic_paper_count(topic=parent) == before[parent.pk] - 1
    assert selectors.topic_paper_count(topic=children[0]) == before[children[0].pk] - 1
    assert selectors.topic_paper_count(topic=parent) == selectors.topic_papers(topic=parent).count()


def test_deleting_a_paper_makes_its_topics_and_their_ancestors_count_again(
    papers_tree, django_capture_on_commit_callbacks
):
    parent, children, grandchild = papers_tree
    before = {t.pk: selectors.topic_paper_count(topic=t) for t in (parent, grandchild)}
    only_here = Assignment.objects.get(topic=grandchild).paper

    with django_capture_on_commit_callbacks(execute=True):
        only_here.delete()

    assert not TopicStats.objects.get(topic=parent).is_current
    assert selectors.topic_paper_count(topic=parent) == before[parent.pk] - 1
    assert selectors.topic_paper_count(topic=grandchild) == before[grandchild.pk] - 1


def test_tagging_makes_the_counts_of_the_topics_it_wrote_count_again(
    django_capture_on_commit_callbacks,
):
    root = services.topic_create(name="Physics")
    topic = services.topic_create(name="Holography", rule_query="holography", parent=root)
    assert selectors.topic_paper_count(topic=root) == 0
    paper = PaperFactory(title="Holography at large")

    with django_capture_on_commit_callbacks(execute=True):
        papers_tag(paper_ids=[paper.pk])

    assert selectors.topic_paper_count(topic=root) == 1
    assert selectors.topic_paper_count(topic=topic) == 1


def test_moving_a_topic_recounts_old_and_new_ancestors(
    papers_tree, django_capture_on_commit_callbacks
):
    parent, children, grandchild = papers_tree
    other = TopicFactory(name="Elsewhere")
    counts = {t.pk: selectors.topic_paper_count(topic=t) for t in (parent, children[0], other)}

    with django_capture_on_commit_callbacks(execute=True):
        services.topic_move(topic=grandchild, parent=other)

    assert selectors.topic_paper_count(topic=children[0]) == counts[children[0].pk] - 1
    assert selectors.topic_paper_count(topic=other) == counts[other.pk] + 1
    for topic in (parent, children[0], other):
        assert (
            selectors.topic_paper_count(topic=topic) == selectors.topic_papers(topic=topic).count()
        )


def test_while_another_request_recounts_the_last_count_is_served(papers_tree):
    parent, children, _ = papers_tree
    before = selectors.topic_papers(topic=children[2]).count()
    assert selectors.topic_paper_count(topic=children[2]) == before
    paper_in(children[2])  # written behind the services' back, then reported
    caches.topic_caches_invalidate([children[2].pk])
    lock = f"topics:count-lock:v1:{children[2].pk}"
    cache.set(lock, 1)
    try:
        assert selectors.topic_paper_count(topic=children[2]) == before
    finally:
        cache.delete(lock)
    assert selectors.topic_paper_count(topic=children[2]) == before + 1


def test_lineage_is_the_ancestors_and_the_subtree_in_one_query(papers_tree):
    parent, children, grandchild = papers_tree
    with CaptureQueriesContext(connection) as captured:
        ancestors, subtree = selectors.topic_lineage(topic=children[0])
    assert len(captured) == 1
    assert ancestors == selectors.topic_ancestors(topic=children[0]) == [parent]
    assert [t.pk for t in subtree] == [t.pk for t in selectors.topic_subtree(topic=children[0])]
    assert grandchild.pk in {t.pk for t in subtree}
    root_ancestors, root_subtree = selectors.topic_lineage(topic=parent)
    assert root_ancestors == [] and len(root_subtree) == len(selectors.topic_subtree(topic=parent))
