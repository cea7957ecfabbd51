"""What the topic page reads at scale: assignments' copy of the paper's submitted date (kept by
triggers), the newest papers of a subtree merged per topic, the stored paper counts and when
they are counted again, and momentum read from assignments alone."""

import datetime as dt
import re

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from papers.models import Paper
from papers.tests.factories import AuthorshipFactory, PaperFactory
from topics import caches, selectors, services
from topics.assignments import assignment_decide
from topics.models import Assignment, TopicStats
from topics.momentum import topic_momentum, topic_momentum_stored
from topics.tagging.engine import papers_tag
from topics.tests.factories import AssignmentFactory, TopicFactory, UserFactory

pytestmark = pytest.mark.django_db

DAY = dt.date(2026, 9, 29)


def paper_in(*topics, submitted=DAY, state=Assignment.State.ACCEPTED):
    paper = PaperFactory(submitted=submitted)
    for topic in topics:
        AssignmentFactory(paper=paper, topic=topic, state=state)
    return paper


@pytest.fixture
def tree():
    """A parent with three children; papers spread over days, some under two children, ties
    on the submitted date, a rejected assignment and a paper outside the tree."""
    parent = TopicFactory(name="Parent")
    children = [TopicFactory(name=f"Child {i}", parent=parent) for i in range(3)]
    grandchild = TopicFactory(name="Grandchild", parent=children[0])
    outside = TopicFactory(name="Outside")
    for day in range(12):
        submitted = DAY - dt.timedelta(days=day // 2)  # two papers a day: ties on the date
        members = [children[day % 3]] + ([children[(day + 1) % 3]] if day % 4 == 0 else [])
        paper_in(*members, submitted=submitted)
    paper_in(grandchild, submitted=DAY - dt.timedelta(days=3))
    paper_in(parent, submitted=DAY - dt.timedelta(days=20))
    paper_in(children[1], submitted=DAY, state=Assignment.State.REJECTED)
    paper_in(outside, submitted=DAY)
    return parent, children, grandchild


def expected_ids(topic):
    return list(selectors.topic_papers(topic=topic).values_list("id", flat=True))


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


@pytest.mark.parametrize("offset, limit", [(0, 30), (0, 1), (3, 4), (5, 100), (14, 5), (40, 3)])
def test_newest_ids_are_topic_papers_in_order_from_any_offset(tree, offset, limit):
    parent, children, grandchild = tree
    for topic in [parent, *children, grandchild]:
        subtree = selectors.topic_subtree_ids(topic=topic)
        got = selectors.topic_newest_paper_ids(topic_ids=subtree, limit=limit, offset=offset)
        assert got == expected_ids(topic)[offset : offset + limit]


def test_newest_ids_count_a_paper_under_two_children_once(tree):
    parent, _, _ = tree
    subtree = selectors.topic_subtree_ids(topic=parent)
    got = selectors.topic_newest_paper_ids(topic_ids=subtree, limit=100)
    assert len(got) == len(set(got)) == 14


def test_newest_ids_refuse_negative_bounds_and_take_no_topics():
    with pytest.raises(ValueError, match="must not be negative"):
        selectors.topic_newest_paper_ids(topic_ids=[1], limit=-1)
    assert selectors.topic_newest_paper_ids(topic_ids=[], limit=30) == []


# --- stored paper counts --------------------------------------------------------------------


def test_count_is_stored_once_then_read_in_one_query(tree):
    parent, children, _ = tree

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
    tree, django_capture_on_commit_callbacks
):
    parent, children, grandchild = tree
    before = {t.pk: selectors.topic_paper_count(topic=t) for t in (parent, children[0])}
    only_here = Assignment.objects.get(topic=grandchild)

    with django_capture_on_commit_callbacks(execute=True):
        assignment_decide(assignment=only_here, state=Assignment.State.REJECTED, user=UserFactory())

    assert not TopicStats.objects.get(topic=parent).is_current
    assert selectors.topic_paper_count(topic=parent) == before[parent.pk] - 1
    assert selectors.topic_paper_count(topic=children[0]) == before[children[0].pk] - 1
    assert selectors.topic_paper_count(topic=parent) == selectors.topic_papers(topic=parent).count()


def test_deleting_a_paper_makes_its_topics_and_their_ancestors_count_again(
    tree, django_capture_on_commit_callbacks
):
    parent, children, grandchild = tree
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


def test_moving_a_topic_recounts_old_and_new_ancestors(tree, django_capture_on_commit_callbacks):
    parent, children, grandchild = tree
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


def test_while_another_request_recounts_the_last_count_is_served(tree):
    parent, children, _ = tree
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


def test_momentum_counts_papers_once_across_the_subtree(tree):
    parent, children, _ = tree
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


def test_stored_momentum_equals_the_computed_one_and_is_read_in_two_queries(tree):
    parent, children, _ = tree
    for topic in (parent, children[1]):
        expected = topic_momentum(topic=topic)
        assert topic_momentum_stored(topic=topic) == expected
        with CaptureQueriesContext(connection) as captured:
            assert topic_momentum_stored(topic=topic) == expected
        assert len(captured) == 2


def test_stored_momentum_follows_new_papers_and_curator_decisions(
    tree, django_capture_on_commit_callbacks
):
    parent, children, grandchild = tree
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


def test_stored_momentum_of_another_day_is_computed_for_that_day(tree):
    parent, _, _ = tree
    topic_momentum_stored(topic=parent)
    earlier = DAY - dt.timedelta(days=10)
    assert topic_momentum_stored(topic=parent, as_of=earlier) == topic_momentum(
        topic=parent, as_of=earlier
    )


def test_paper_cards_hold_what_a_card_shows_in_the_order_asked():
    shown, hidden = TopicFactory(name="B shown"), TopicFactory(name="A hidden", active=False)
    other = TopicFactory(name="A other")
    arxiv = paper_in(shown, hidden, other)
    local = PaperFactory(arxiv_id=None, import_key="reference:1")
    for position in (3, 0, 2, 1):
        AuthorshipFactory(paper=arxiv, position=position)

    cards = selectors.paper_cards(paper_ids=[local.pk, 10**9, arxiv.pk])

    assert [c.pk for c in cards] == [local.pk, arxiv.pk]
    assert cards[0].get_absolute_url() == local.get_absolute_url()
    assert cards[1].get_absolute_url() == arxiv.get_absolute_url()
    names = list(
        arxiv.authorships.filter(position__lt=3)
        .order_by("position")
        .values_list("author__name", flat=True)
    )
    assert [a.author.name for a in cards[1].shown_authorships] == names
    assert [(c.topic.name, c.topic_url) for c in cards[1].topic_assignments] == [
        ("A other", other.get_absolute_url()),
        ("B shown", shown.get_absolute_url()),
    ]


def test_the_portable_card_rows_equal_the_one_query_rows(tree):
    """SQLite (the demo) reads the cards in four queries; on the same data they must give what
    PostgreSQL's one query gives."""
    paper = Assignment.objects.filter(topic=tree[2]).get().paper
    for position in (2, 0, 1, 3):
        AuthorshipFactory(paper=paper, position=position)
    ids = list(Paper.objects.order_by("-pk").values_list("pk", flat=True))

    one_query = sorted(selectors._card_rows_postgresql(ids))
    portable = sorted(selectors._card_rows_portable(ids))

    assert portable == one_query
    assert any(row[-3] for row in portable) and any(row[-1] for row in portable)


def test_lineage_is_the_ancestors_and_the_subtree_in_one_query(tree):
    parent, children, grandchild = tree
    with CaptureQueriesContext(connection) as captured:
        ancestors, subtree = selectors.topic_lineage(topic=children[0])
    assert len(captured) == 1
    assert ancestors == selectors.topic_ancestors(topic=children[0]) == [parent]
    assert [t.pk for t in subtree] == [t.pk for t in selectors.topic_subtree(topic=children[0])]
    assert grandchild.pk in {t.pk for t in subtree}
    root_ancestors, root_subtree = selectors.topic_lineage(topic=parent)
    assert root_ancestors == [] and len(root_subtree) == len(selectors.topic_subtree(topic=parent))
