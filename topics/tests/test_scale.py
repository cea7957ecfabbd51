"""What the topic page reads at scale: assignments' copy of the paper's submitted date (kept by
triggers), the page's queries, the cached cards, and momentum read from assignments alone and
stored. The reads themselves are tested in ``test_selectors.py`` and ``test_cards.py``."""

import datetime as dt
import re

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from papers.models import Paper
from papers.tests.factories import PaperFactory
from topics import caches, selectors, services
from topics.assignments import assignment_decide
from topics.models import Assignment
from topics.momentum import topic_momentum, topic_momentum_stored
from topics.tagging.engine import papers_tag
from topics.tests.conftest import DAY, paper_in
from topics.tests.factories import AssignmentFactory, TopicFactory, UserFactory

pytestmark = pytest.mark.django_db


# --- the submitted date on assignments --------------------------------------------------------


def test_an_assignment_carries_its_papers_submitted_date_whoever_writes_it():
    topic = TopicFactory()
    paper = PaperFactory(submitted=dt.date(2020, 1, 2))
    AssignmentFactory(paper=paper, topic=topic)  # the ORM, as factories and curation write
    other = PaperFactory(submitted=dt.date(2021, 3, 4))
    Assignment.objects.bulk_create(
        [Assignment(paper=other, topic=topic, source=Assignment.Source.RULE)]
    )

    stored = dict(Assignment.objects.values_list("paper_id", "submitted"))
    assert stored == {paper.pk: dt.date(2020, 1, 2), other.pk: dt.date(2021, 3, 4)}


def test_tagging_writes_the_submitted_date_too():
    topic = services.topic_create(name="Holography", rule_query="holography")
    paper = PaperFactory(title="Holography at large", submitted=dt.date(2019, 5, 6))

    papers_tag(paper_ids=[paper.pk])

    assert Assignment.objects.get(paper=paper, topic=topic).submitted == dt.date(2019, 5, 6)


def test_tagging_gives_each_new_assignment_its_papers_date_and_whether_it_counts():
    # Tagging's bulk INSERT joins the paper for both columns (the insert trigger runs only
    # where ``submitted`` is not given, migration 0013): a withdrawn or deleted paper's new
    # assignment starts out not counting, whatever the batch holds.
    topic = services.topic_create(name="Holography", rule_query="holography")
    papers = {
        "live": PaperFactory(title="Holography one", submitted=dt.date(2019, 5, 6)),
        "withdrawn": PaperFactory(
            title="Holography two", submitted=dt.date(2020, 6, 7), withdrawn=True
        ),
        "deleted": PaperFactory(title="Holography three", submitted=dt.date(2021, 7, 8)),
    }
    Paper.objects.filter(pk=papers["deleted"].pk).update(
        deleted_at=dt.datetime(2022, 1, 1, tzinfo=dt.UTC)
    )

    papers_tag(paper_ids=[paper.pk for paper in papers.values()])

    stored = {
        paper_id: (submitted, live)
        for paper_id, submitted, live in Assignment.objects.filter(topic=topic).values_list(
            "paper_id", "submitted", "paper_live"
        )
    }
    counted = set(Paper.objects.live().values_list("pk", flat=True))
    assert stored == {paper.pk: (paper.submitted, paper.pk in counted) for paper in papers.values()}
    assert [key for key, paper in papers.items() if stored[paper.pk][1]] == ["live"]


def test_saving_an_assignment_read_before_its_papers_date_changed_keeps_the_new_date():
    # Django's save() writes every column, the copied date as it was read included; the
    # trigger on an update naming paper_id (every save does) takes it from the paper again.
    paper = paper_in(TopicFactory(), submitted=dt.date(2020, 1, 2))
    assignment = Assignment.objects.get(paper=paper)
    Paper.objects.filter(pk=paper.pk).update(submitted=dt.date(2020, 1, 9))

    assignment.state = Assignment.State.REJECTED
    assignment.save()

    assert Assignment.objects.get(pk=assignment.pk).submitted == dt.date(2020, 1, 9)


def test_a_papers_new_date_reaches_its_assignments_and_moving_one_takes_the_new_papers():
    topics = [TopicFactory(), TopicFactory()]
    paper = paper_in(*topics, submitted=dt.date(2020, 1, 2))
    other = PaperFactory(submitted=dt.date(2022, 2, 2))

    Paper.objects.filter(pk=paper.pk).update(submitted=dt.date(2020, 1, 9))
    assert set(Assignment.objects.values_list("submitted", flat=True)) == {dt.date(2020, 1, 9)}

    moved = Assignment.objects.filter(topic=topics[0])
    moved.update(paper=other)
    assert moved.get().submitted == dt.date(2022, 2, 2)
    assert Assignment.objects.get(topic=topics[1]).submitted == dt.date(2020, 1, 9)


# --- the newest papers of a subtree ---------------------------------------------------------


# --- stored paper counts --------------------------------------------------------------------


# --- the page and momentum ------------------------------------------------------------------


def count_queries(client, url):
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def test_page_queries_do_not_grow_with_the_number_of_subtopics(client):
    leaf = TopicFactory(name="Leaf")
    paper_in(leaf)
    parent = TopicFactory(name="Parent of twenty")
    for i in range(20):
        child = TopicFactory(name=f"Child {i}", parent=parent)
        paper_in(child, submitted=DAY - dt.timedelta(days=i))
    for topic in (leaf, parent):  # store the counts
        client.get(topic.get_absolute_url())

    assert count_queries(client, leaf.get_absolute_url()) == count_queries(
        client, parent.get_absolute_url()
    )


def test_a_page_past_the_last_shows_the_last_and_bad_numbers_the_first(client):
    topic = TopicFactory()
    for day in range(31):
        paper_in(topic, submitted=DAY - dt.timedelta(days=day))

    far = client.get(topic.get_absolute_url() + "?page=9").content.decode()
    bad = client.get(topic.get_absolute_url() + "?page=x").content.decode()

    assert far.count('<article class="card">') == 1 and "Page 2 of 2" in far
    assert bad.count('<article class="card">') == 30 and "Page 1 of 2" in bad


def test_momentum_counts_papers_once_across_the_subtree(papers_tree):
    parent, children, _ = papers_tree
    m = topic_momentum(topic=parent, as_of=DAY)
    # Fourteen distinct papers, all but one (20 days back) in the last four weeks... and that
    # one too: 20 days is inside 28.
    assert m.recent == 14 and m.before == 0
    assert sum(w.count for w in m.weeks) == 14
    child = topic_momentum(topic=children[1], as_of=DAY)
    assert child.recent == selectors.topic_papers(topic=children[1]).count()


# --- the cached cards -----------------------------------------------------------------------


def card_titles(client, topic):
    page = client.get(topic.get_absolute_url()).content.decode()
    return re.findall(r'<h3 class="card-title"><a href="[^"]+">([^<]+)</a></h3>', page)


def test_cards_come_from_the_cache_until_curation_changes_the_topic(
    client, django_capture_on_commit_callbacks
):
    topic = TopicFactory()
    papers = [paper_in(topic, submitted=DAY - dt.timedelta(days=i)) for i in range(3)]
    first = count_queries(client, topic.get_absolute_url())
    cached = count_queries(client, topic.get_absolute_url())
    assert cached < first  # the page's ids, papers, authors, affiliations and chips not read

    with django_capture_on_commit_callbacks(execute=True):
        assignment_decide(
            assignment=Assignment.objects.get(paper=papers[0], topic=topic),
            state=Assignment.State.REJECTED,
            user=UserFactory(),
        )

    assert card_titles(client, topic) == [papers[1].title, papers[2].title]


def test_while_one_request_rebuilds_the_cards_others_serve_the_old_ones(client):
    topic = TopicFactory()
    old = paper_in(topic, submitted=DAY - dt.timedelta(days=1))
    assert card_titles(client, topic) == [old.title]
    new = paper_in(topic, submitted=DAY)
    caches.topic_caches_invalidate([topic.pk])
    lock = f"topics:cards:v1:{topic.pk}:1:lock"
    cache.set(lock, 1)
    try:
        assert card_titles(client, topic) == [old.title]
    finally:
        cache.delete(lock)
    assert card_titles(client, topic) == [new.title, old.title]


# --- stored momentum ------------------------------------------------------------------------


def test_stored_momentum_equals_the_computed_one_and_is_read_in_two_queries(papers_tree):
    parent, children, _ = papers_tree
    for topic in (parent, children[1]):
        expected = topic_momentum(topic=topic)
        assert topic_momentum_stored(topic=topic) == expected
        with CaptureQueriesContext(connection) as captured:
            assert topic_momentum_stored(topic=topic) == expected
        assert len(captured) == 2


def test_stored_momentum_follows_new_papers_and_curator_decisions(
    papers_tree, django_capture_on_commit_callbacks
):
    parent, children, grandchild = papers_tree
    before = topic_momentum_stored(topic=parent)

    newcomer = paper_in(children[2], submitted=DAY)  # a new paper: the newest id moves on
    assert topic_momentum_stored(topic=parent).recent == before.recent + 1

    with django_capture_on_commit_callbacks(execute=True):
        assignment_decide(
            assignment=Assignment.objects.get(paper=newcomer),
            state=Assignment.State.REJECTED,
            user=UserFactory(),
        )
    after = topic_momentum_stored(topic=parent)
    assert after == topic_momentum(topic=parent)
    assert (after.recent, after.weeks) == (before.recent, before.weeks)  # the share has grown


def test_stored_momentum_of_another_day_is_computed_for_that_day(papers_tree):
    parent, _, _ = papers_tree
    topic_momentum_stored(topic=parent)
    earlier = DAY - dt.timedelta(days=10)
    assert topic_momentum_stored(topic=parent, as_of=earlier) == topic_momentum(
        topic=parent, as_of=earlier
    )
