"""Withdrawn and deleted papers keep their assignments but count nowhere on the topic side:
paper counts, the topic tree, "latest papers" (the newest ids and the card page), momentum
(both sides of the share) and the topics index; a withdrawal or deletion recounts the stored
figures. On real records: the first 40 of the recorded arXivRaw page, among them the
withdrawn 0801.4122 and 0801.4243 (whose comment still says "5 pages")."""

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from papers.ingest import papers_upsert
from papers.ingest.deleted import papers_mark_deleted
from papers.models import Paper
from papers.tests.conftest import arxiv_raw_records
from topics import index
from topics.cards import topic_card_page
from topics.models import Assignment, Topic
from topics.momentum import WINDOW_DAYS, topic_momentum, topic_momentum_stored, topics_momentum
from topics.selectors import (
    topic_newest_paper_ids,
    topic_paper_count,
    topic_papers,
    topic_subtree_ids,
    topic_tree,
)
from topics.tests.factories import AssignmentFactory, TopicFactory

pytestmark = pytest.mark.django_db

WITHDRAWN = {"0801.4122", "0801.4243"}


@pytest.fixture
def world():
    """40 real papers stored; the first 12 of them plus both withdrawn ones accepted in a
    child topic (one also in a second child), the first paper then marked deleted. Returns
    ``(parent, records, counted ids)``: the arXiv ids of the topic's papers that count."""
    records = arxiv_raw_records()
    chosen = records[:40] + [r for r in records[40:] if r.arxiv_id in WITHDRAWN]
    papers_upsert(records=chosen)
    assert set(Paper.objects.filter(withdrawn=True).values_list("arxiv_id", flat=True)) == (
        WITHDRAWN
    )
    parent = TopicFactory(name="Parent")
    child, other = TopicFactory(name="Child", parent=parent), TopicFactory(parent=parent)
    in_topic = [r.arxiv_id for r in chosen[:12]] + sorted(WITHDRAWN)
    for paper in Paper.objects.filter(arxiv_id__in=in_topic):
        AssignmentFactory(paper=paper, topic=child, state=Assignment.State.ACCEPTED)
    AssignmentFactory(paper=Paper.objects.get(arxiv_id="0801.4243"), topic=other, state="accepted")
    papers_mark_deleted(arxiv_ids=[chosen[0].arxiv_id])
    counted = set(in_topic) - WITHDRAWN - {chosen[0].arxiv_id}
    return parent, chosen, counted


def arxiv_ids(pks):
    return set(Paper.objects.filter(pk__in=list(pks)).values_list("arxiv_id", flat=True))


def test_assignments_carry_whether_their_paper_counts(world):
    parent, records, counted = world
    live = dict(Assignment.objects.values_list("paper__arxiv_id", "paper_live"))
    assert {arxiv_id for arxiv_id, flag in live.items() if flag} == counted

    # Whoever writes the paper: the flag follows it both ways, and a new assignment of a
    # withdrawn paper starts out not counting.
    paper = Paper.objects.get(arxiv_id=sorted(counted)[0])
    Paper.objects.filter(pk=paper.pk).update(withdrawn=True)
    assert not Assignment.objects.get(paper=paper).paper_live
    Paper.objects.filter(pk=paper.pk).update(withdrawn=False)
    assert Assignment.objects.get(paper=paper).paper_live
    added = AssignmentFactory(paper=Paper.objects.get(arxiv_id="0801.4122"), topic=parent)
    added.refresh_from_db()
    assert not added.paper_live


def test_counts_tree_and_latest_papers_leave_them_out(world):
    parent, records, counted = world
    subtree_ids = topic_subtree_ids(topic=parent)

    assert topic_paper_count(topic=parent) == len(counted) == 11
    assert set(topic_papers(topic=parent).values_list("arxiv_id", flat=True)) == counted
    (node,) = topic_tree()
    assert node.paper_count == len(counted)
    newest = topic_newest_paper_ids(topic_ids=subtree_ids, limit=100)
    assert arxiv_ids(newest) == counted and len(newest) == len(counted)
    as_queryset = topic_newest_paper_ids(
        topic_ids=Topic.objects.filter(pk__in=subtree_ids), limit=100
    )
    assert as_queryset == newest
    page = topic_card_page(topic=parent, number=1, per_page=30)
    assert {card.pk for card in page.papers} == set(newest) and page.paper_count == 11
    # Papers from elsewhere (a saved search's) are merged the same way.
    withdrawn = Paper.objects.filter(arxiv_id__in=WITHDRAWN)
    assert topic_newest_paper_ids(topic_ids=[], limit=10, extra_papers=withdrawn) == []


def test_counting_reads_assignments_alone(world):
    parent, records, counted = world
    subtree_ids = topic_subtree_ids(topic=parent)
    with CaptureQueriesContext(connection) as captured:
        topic_newest_paper_ids(topic_ids=subtree_ids, limit=30)
        topic_paper_count(topic=parent, subtree_ids=subtree_ids)
    assert captured.captured_queries
    assert not any(Paper._meta.db_table in q["sql"] for q in captured.captured_queries)


def test_momentum_counts_papers_that_count_on_both_sides_of_the_share(world):
    parent, records, counted = world
    as_of = max(r.submitted for r in records)
    window = {
        r.arxiv_id
        for r in records
        if as_of - dt.timedelta(days=WINDOW_DAYS) < r.submitted <= as_of and not r.withdrawn
    } - {records[0].arxiv_id}

    momentum = topic_momentum(topic=parent)

    assert momentum.as_of == as_of
    assert momentum.recent == len(counted) == 11
    assert sum(week.count for week in momentum.weeks) == 11
    assert momentum.share == pytest.approx(11 / len(window))
    assert len(window) == 39  # 42 stored, all in the window: 2 withdrawn, 1 deleted
    assert topics_momentum(topics=[parent], as_of=as_of)[parent.pk] == momentum


def test_the_topics_index_leaves_them_out(world):
    parent, records, counted = world
    built = index.topic_index()
    (item,) = [t for t in built.topics if t.pk == parent.pk]
    assert item.paper_count == 11 and item.momentum.recent == 11
    assert built.all_recent == topic_momentum(topic=parent).recent / item.momentum.share


def test_a_withdrawal_or_deletion_recounts_the_stored_figures(
    world, django_capture_on_commit_callbacks
):
    parent, records, counted = world
    assert topic_paper_count(topic=parent) == 11  # counted and stored
    assert topic_momentum_stored(topic=parent).recent == 11
    before = index.topic_index().cache_key

    with django_capture_on_commit_callbacks(execute=True):
        papers_mark_deleted(arxiv_ids=[sorted(counted)[0]])

    assert topic_paper_count(topic=parent) == 10
    assert topic_momentum_stored(topic=parent).recent == 10
    assert index.topic_index().cache_key != before


def test_followed_authors_papers_merge_live_only_and_newest_first(world):
    """``author_ids`` merges an author's papers with the topics', newest first, leaving out
    withdrawn and deleted papers (one range scan per author on PostgreSQL)."""
    from papers.models import Author, Authorship

    parent, records, counted = world
    author = Author.objects.create(name="Ada Walk", keyname="Walk", forenames="Ada")
    papers = list(Paper.objects.order_by("-submitted", "-id"))
    for paper in papers:
        Authorship.objects.create(author=author, paper=paper, position=99)
    followed = Author.objects.filter(pk=author.pk).values("pk")
    live = [paper.pk for paper in papers if paper.arxiv_id not in WITHDRAWN]
    live = list(Paper.objects.live().filter(pk__in=live).order_by("-submitted", "-id"))
    merged = topic_newest_paper_ids(topic_ids=[], limit=100, author_ids=followed)
    assert merged == [paper.pk for paper in live]
    assert topic_newest_paper_ids(topic_ids=[], limit=3, author_ids=followed) == merged[:3]
    with pytest.raises(ValueError, match="before"):
        topic_newest_paper_ids(
            topic_ids=[], limit=3, author_ids=followed, before=(live[0].submitted, live[0].pk)
        )
