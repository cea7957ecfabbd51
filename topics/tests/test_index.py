"""The topics index (``/topics/``): the bulk momentum selector, the tree, sorting, search,
caching and the query count, on the reference data and on hand-made data with known numbers."""

import datetime as dt
import html
import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from papers.categories import category_sync
from papers.tests.factories import PaperFactory
from topics import caches, index
from topics.models import Assignment, Topic
from topics.momentum import topic_momentum, topics_momentum
from topics.tests.factories import AssignmentFactory, TopicFactory

pytestmark = pytest.mark.django_db

AS_OF = dt.date(2026, 9, 29)  # a Tuesday, the reference page's newest paper
INDEX = "/topics/"


def days_before(n):
    return AS_OF - dt.timedelta(days=n)


def papers_in(topic, n, *, days_ago=0, state=Assignment.State.ACCEPTED):
    """``n`` new papers submitted ``days_ago`` days before ``AS_OF``, assigned to ``topic``."""
    papers = []
    for _ in range(n):
        paper = PaperFactory(submitted=days_before(days_ago))
        AssignmentFactory(paper=paper, topic=topic, state=state)
        papers.append(paper)
    return papers


def text_of(page):
    page = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", page)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"(?s)<[^>]+>", " ", page))).strip()


def get(client, url=INDEX, **params):
    response = client.get(url, params)
    assert response.status_code == 200
    return response.content.decode()


def count_queries(client, url=INDEX):
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200
    return len(ctx.captured_queries)


def ranked_names(page):
    """Display names of the ranked (flat) list, in page order."""
    ranked = re.search(r'(?s)<ol class="topic-ranked">(.*?)</ol>', page).group(1)
    return [html.unescape(name) for name in re.findall(r'<a href="[^"]+">([^<]+)</a>', ranked)]


# --- topics_momentum: the same figures as topic_momentum, in a fixed number of queries ------


@pytest.fixture
def reference_data():
    category_sync()
    call_command("import_reference_page", stdout=StringIO())


def test_bulk_momentum_equals_topic_momentum_on_the_reference_data(reference_data):
    topics = list(Topic.objects.active())
    assert len(topics) == 59

    bulk = topics_momentum()

    assert set(bulk) == {t.pk for t in topics}
    for topic in topics:
        assert bulk[topic.pk] == topic_momentum(topic=topic), topic.name
    parent = Topic.objects.get(slug="llm")
    assert (bulk[parent.pk].recent, bulk[parent.pk].as_of) == (30, AS_OF)
    # A date asked for: the windows move back and the figures still agree.
    earlier = dt.date(2026, 9, 10)
    bulk = topics_momentum(topics=topics, as_of=earlier)
    for topic in topics:
        assert bulk[topic.pk] == topic_momentum(topic=topic, as_of=earlier), topic.name


def test_bulk_momentum_counts_a_paper_under_two_children_once_for_the_parent():
    parent = TopicFactory()
    child_a = TopicFactory(parent=parent)
    child_b = TopicFactory(parent=parent)
    grandchild = TopicFactory(parent=child_a)
    shared = papers_in(child_a, 1)[0]
    AssignmentFactory(paper=shared, topic=child_b)
    AssignmentFactory(paper=shared, topic=parent)
    papers_in(grandchild, 1, days_ago=2)
    papers_in(child_b, 2, days_ago=40)
    papers_in(child_b, 1, days_ago=3, state=Assignment.State.REJECTED)
    papers_in(child_a, 1, days_ago=60)  # in the chart's first weeks, in neither window
    PaperFactory(submitted=days_before(90))  # before the chart: only makes as_of history

    bulk = topics_momentum()

    assert (bulk[parent.pk].recent, bulk[parent.pk].before) == (2, 2)
    assert sum(w.count for w in bulk[parent.pk].weeks) == 5
    assert (bulk[child_b.pk].recent, bulk[child_b.pk].before) == (1, 2)
    for topic in (parent, child_a, child_b, grandchild):
        assert bulk[topic.pk] == topic_momentum(topic=topic)


def test_bulk_momentum_query_count_does_not_grow_with_topics(django_assert_num_queries):
    def make(n):
        topics = []
        for _ in range(n):
            topic = TopicFactory(parent=topics[-1] if topics and len(topics) % 3 else None)
            papers_in(topic, 2, days_ago=len(topics) % 50)
            topics.append(topic)
        return topics

    few = make(5)
    with django_assert_num_queries(2):
        topics_momentum(topics=few, as_of=AS_OF)
    many = few + make(45)
    with django_assert_num_queries(2):
        topics_momentum(topics=many, as_of=AS_OF)
    with django_assert_num_queries(4):  # + the active topics and the newest submitted date
        assert len(topics_momentum()) == 50


def test_bulk_momentum_refuses_a_topic_without_a_path():
    topic = TopicFactory()
    topic.path = ""
    with pytest.raises(ValueError, match=f"topic {topic.pk} has no path"):
        topics_momentum(topics=[topic])


# --- the page: tree, figures, sparkline -----------------------------------------------------


def test_tree_orders_children_by_name_with_distinct_counts_momentum_and_sparkline(client):
    root = TopicFactory(name="Large Language Model", short_name="LLM")
    gamma = TopicFactory(name="Gamma", parent=root)
    beta = TopicFactory(name="beta", parent=root)
    alpha = TopicFactory(name="Alpha", parent=root)
    TopicFactory(name="Hidden", parent=root, active=False)
    TopicFactory(name="Astrophysics")
    shared = papers_in(alpha, 1)[0]  # this week
    AssignmentFactory(paper=shared, topic=beta)
    papers_in(alpha, 2, days_ago=8)  # last week
    papers_in(beta, 1, days_ago=30)  # in the four weeks before
    papers_in(gamma, 1, state=Assignment.State.REJECTED)

    page = get(client)
    text = text_of(page)

    assert "Hidden" not in text
    assert text.index("Astrophysics") < text.index("LLM: Large Language Model")
    assert text.index("Alpha") < text.index("beta") < text.index("Gamma")
    assert "LLM: Large Language Model 4 papers 3 in the last four weeks, up 200%" in text
    assert "Alpha 3 papers 3 in the last four weeks, new" in text
    assert "beta 2 papers 1 in the last four weeks, no change" in text
    assert "Gamma 0 papers No new papers in the last four weeks" in text
    nested = re.search(
        rf'(?s)<a href="{root.get_absolute_url()}">.*?<ul class="topic-tree">(.*?)</ul>', page
    ).group(1)
    for child in (alpha, beta, gamma):
        assert child.get_absolute_url() in nested
    # One SVG per topic, 12 points, the weekly counts in its accessible label.
    svgs = re.findall(r'(?s)<svg class="sparkline"[^>]*aria-label="([^"]+)"[^>]*>(.*?)</svg>', page)
    assert len(svgs) == 5
    labels = dict((label, body) for label, body in svgs)
    alpha_label = "12-week papers: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 1"
    assert alpha_label in labels
    points = re.search(r'points="([^"]+)"', labels[alpha_label]).group(1).split()
    assert len(points) == 12
    # The busiest week (2 papers) at the top, empty weeks on the baseline.
    assert points[10].endswith(",1.0") and points[0].endswith(",19.0")
    assert "Sep 2 – Sep 29, 2026" in text


def test_empty_taxonomy_says_so(client):
    assert "No topics yet." in text_of(get(client))


# --- sorting ----------------------------------------------------------------------------------


@pytest.fixture
def ranked_topics():
    """Four root topics with known numbers; all new papers: 20 in the last four weeks, 10 in
    the four weeks before, so shares (last / before) are Alpha 30% / 30%, Beta 15% / 60%,
    Gamma 10% / 0% (2 papers: too few to rank), Delta 20% / 0%."""
    alpha = TopicFactory(name="Alpha")
    beta = TopicFactory(name="Beta")
    gamma = TopicFactory(name="Gamma")
    delta = TopicFactory(name="Delta")
    papers_in(alpha, 6, days_ago=1)
    papers_in(alpha, 3, days_ago=30)
    papers_in(beta, 3, days_ago=2)
    papers_in(beta, 6, days_ago=31)
    papers_in(beta, 1, days_ago=400)  # all-time size only
    papers_in(gamma, 2, days_ago=3)
    papers_in(delta, 4, days_ago=4)
    PaperFactory(submitted=AS_OF)  # the newest paper: as_of
    for _ in range(4):
        PaperFactory(submitted=days_before(5))
    PaperFactory(submitted=days_before(35))
    return alpha, beta, gamma, delta


def test_sort_by_size_is_a_ranked_list_largest_first(client, ranked_topics):
    page = get(client, sort="size")
    assert ranked_names(page) == ["Beta", "Alpha", "Delta", "Gamma"]
    assert "Beta 10 papers" in text_of(page)


def test_sort_by_rising_ranks_share_gain_and_puts_small_topics_last(client, ranked_topics):
    page = get(client, sort="rising")
    text = text_of(page)

    # Gamma gained 10 points but has 2 papers in each window at most: ranked after the rest.
    assert ranked_names(page) == ["Delta", "Alpha", "Beta", "Gamma"]
    assert "Delta 4 papers 4 in the last four weeks, new +20.00 points" in text
    assert "Alpha 9 papers 6 in the last four weeks, up 100% 0.00 points" in text
    assert "Beta 10 papers 3 in the last four weeks, down 50% -45.00 points" in text
    assert "Gamma 2 papers 2 in the last four weeks, new too few papers to rank" in text
    assert "fewer than 3 papers in both windows come last" in text
    assert "minus its share in the four weeks before (Aug 5 – Sep 1)" in text


def test_rising_figure_is_the_change_of_share_in_points(ranked_topics):
    topics_index = index.topic_index()
    by_name = {t.name: t for t in topics_index.topics}
    assert (topics_index.all_recent, topics_index.all_before) == (20, 10)
    assert by_name["Delta"].rising == pytest.approx(20.0)
    assert by_name["Beta"].rising == pytest.approx(-45.0)
    assert by_name["Gamma"].rising == pytest.approx(10.0)
    assert not by_name["Gamma"].rising_ranked and by_name["Alpha"].rising_ranked
    with pytest.raises(ValueError, match="unknown sort 'bogus'"):
        index.topic_index_ranked(topics_index, sort="bogus")


def test_unknown_sort_falls_back_to_the_name_tree(client, ranked_topics):
    page = get(client, sort="<bogus>")
    assert page == get(client, sort="name") == get(client)
    assert '<ul class="topic-tree">' in page and "topic-ranked" not in page
    assert "&lt;bogus&gt;" not in page and "<bogus>" not in page


# --- search -----------------------------------------------------------------------------------


@pytest.fixture
def named_tree():
    root = TopicFactory(name="Large Language Model", short_name="LLM")
    training = TopicFactory(name="Agent Training", parent=root)
    tools = TopicFactory(name="Tool Agents", parent=training)
    TopicFactory(name="Astrophysics")
    papers_in(tools, 2)
    return root, training, tools


def test_search_matches_words_of_names_case_insensitively_with_their_path(client, named_tree):
    page = get(client, q="AGENT")
    text = text_of(page)

    assert ranked_names(page) == ["Agent Training", "Tool Agents"]
    assert "2 topics match “AGENT”" in text
    assert "LLM: Large Language Model › Agent Training › Tool Agents 2 papers" in text
    assert "Astrophysics" not in text
    # Words in any order; the short name is part of the display name.
    assert ranked_names(get(client, q="training agent")) == ["Agent Training"]
    assert ranked_names(get(client, q="llm")) == ["LLM: Large Language Model"]


def test_search_results_follow_the_sort(client, named_tree):
    assert ranked_names(get(client, q="agent", sort="size")) == ["Agent Training", "Tool Agents"]
    page = get(client, q="agent", sort="rising")
    assert len(ranked_names(page)) == 2 and 'sort=rising" aria-current="true"' in page


def test_search_without_a_hit_says_so(client, named_tree):
    page = get(client, q="quantum gravity")
    assert "No topic name matches “quantum gravity”." in text_of(page)
    assert "topic-ranked" not in page


def test_hostile_query_is_shown_escaped_and_long_query_is_capped(client, named_tree):
    hostile = '<script>alert("x")</script>'
    page = get(client, q=hostile)
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page

    page = get(client, q="a" * 5000)
    assert f'value="{"a" * 100}"' in page and "a" * 101 not in page
    assert "shortened to its first 100 characters" in text_of(page)
    assert "No topic name matches" in text_of(page)


# --- performance and caching ------------------------------------------------------------------


def test_query_count_does_not_depend_on_the_number_of_topics(client):
    def make(n):
        for i in range(n):
            topic = TopicFactory(parent=Topic.objects.order_by("-pk").first() if i % 2 else None)
            papers_in(topic, 1, days_ago=i % 80)

    make(5)
    few = count_queries(client)
    make(45)
    assert Topic.objects.count() == 50
    many = count_queries(client)  # the fingerprint changed: computed again

    # Counted and stored: the topics with their stats, the count, the missing stats rows
    # created and read back, the counts stored, beside the fingerprint and momentum.
    assert few == many == 9
    assert count_queries(client) == 1  # cached: the fingerprint only
    caches.topic_index_cache_invalidate()
    assert count_queries(client) == 5  # every stored count current: read, not counted


def test_cached_index_shows_new_data_at_once_and_state_changes_after_invalidation(client):
    topic = TopicFactory(name="Alpha")
    (paper,) = papers_in(topic, 1)
    assert "Alpha 1 paper " in text_of(get(client))

    TopicFactory(name="Beta")  # a new topic changes the fingerprint
    assert "Beta 0 papers" in text_of(get(client))

    # A state change the fingerprint cannot see: served from the cache until invalidated, as
    # every service that writes assignments does after its commit (the index and the
    # topic's stored count).
    Assignment.objects.filter(paper=paper).update(state=Assignment.State.REJECTED)
    assert "Alpha 1 paper " in text_of(get(client))
    caches.topic_index_cache_invalidate()
    assert "Alpha 1 paper " in text_of(get(client))  # the stored count, not yet marked behind
    caches.topic_caches_invalidate([topic.pk])
    assert "Alpha 0 papers" in text_of(get(client))


# --- addresses --------------------------------------------------------------------------------


def test_front_page_redirects_to_the_index_keeping_the_query(client, named_tree):
    assert reverse("topics:index") == INDEX
    response = client.get("/")
    assert (response.status_code, response["Location"]) == (302, INDEX)
    response = client.get("/?sort=size&q=agent")
    assert response["Location"] == f"{INDEX}?sort=size&q=agent"
    response = client.get("/", {"sort": "size", "q": "agent"}, follow=True)
    assert response.status_code == 200
    assert ranked_names(response.content.decode()) == ["Agent Training", "Tool Agents"]
