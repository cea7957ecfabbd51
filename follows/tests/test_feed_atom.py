"""Atom feeds, read back with feedparser: the public per-topic feed (and its announcement on
the topic page) and the private per-user feed at a signed, regenerable URL."""

import datetime as dt

import feedparser
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from follows.feed_selectors import ATOM_AUTHORS
from follows.feed_services import feed_visit, private_feed_key_regenerate, private_feed_token
from follows.models import FeedState, Follow, SearchMatch
from papers.models import Paper
from papers.tests.factories import AuthorshipFactory, CategoryFactory, PaperFactory
from topics.cards import CARD_ABSTRACT_CHARS, CARD_TITLE_CHARS
from topics.models import Assignment, TopicRedirect
from topics.tests.factories import AssignmentFactory, TopicFactory, UserFactory

pytestmark = pytest.mark.django_db

SITE = "https://papers.example.org"


@pytest.fixture(autouse=True)
def _site_url(settings):
    settings.SITE_URL = SITE


def paper_in(topic, **kwargs):
    paper = PaperFactory(**kwargs)
    AssignmentFactory(paper=paper, topic=topic)
    return paper


def topic_feed_url(topic):
    return reverse("topic-feed:atom", kwargs={"slug": topic.slug})


def private_feed_url(user):
    state = FeedState.objects.get_or_create(user=user)[0]
    return reverse("feed:atom", kwargs={"token": private_feed_token(state=state)})


def parse(response):
    assert response.status_code == 200
    assert response["Content-Type"] == "application/atom+xml; charset=utf-8"
    feed = feedparser.parse(response.content)
    assert feed.bozo == 0, feed.get("bozo_exception")
    assert feed.version == "atom10"
    return feed


def test_topic_feed_entries(client):
    parent = TopicFactory(name="Large Language Model", short_name="LLM")
    topic = TopicFactory(name="Agent Training", parent=parent)
    older = paper_in(
        parent,
        arxiv_id="2609.00001",
        title="Older paper",
        abstract="An abstract with <b>angle brackets</b> & an ampersand.",
        submitted=dt.date(2026, 9, 28),
        updated=dt.date(2026, 10, 5),
        primary_category=CategoryFactory(code="cs.CL"),
    )
    older.cross_lists.set([CategoryFactory(code="cs.LG"), CategoryFactory(code="cs.AI")])
    for position, name in enumerate(["Ada Lovelace", "Alan Turing"]):
        AuthorshipFactory(paper=older, position=position, author__name=name)
    # A descendant's paper counts for the parent; one outside arXiv has our URL as its id.
    newer = paper_in(topic, arxiv_id=None, import_key="ref:1", submitted=dt.date(2026, 9, 29))
    rejected = paper_in(parent, submitted=dt.date(2026, 9, 30))
    Assignment.objects.filter(paper=rejected).update(state=Assignment.State.REJECTED)
    PaperFactory(submitted=dt.date(2026, 9, 30))  # in no topic

    feed = parse(client.get(topic_feed_url(parent)))

    assert feed.feed.title == "LLM: Large Language Model · topicsite"
    assert feed.feed.link == f"{SITE}/topics/{parent.slug}/"
    assert [link.href for link in feed.feed.links if link.rel == "self"] == [
        f"{SITE}/topics/{parent.slug}/feed/"
    ]
    assert [e.title for e in feed.entries] == [newer.title, older.title]
    first, second = feed.entries
    assert first.link == f"{SITE}{newer.get_absolute_url()}"
    assert first.id == first.link
    assert second.link == f"{SITE}{older.get_absolute_url()}"
    assert second.id == "https://arxiv.org/abs/2609.00001"
    assert second.published == "2026-09-28T00:00:00+00:00"
    assert second.updated == "2026-10-05T00:00:00+00:00"
    assert [a.name for a in second.authors] == ["Ada Lovelace", "Alan Turing"]
    assert [t.term for t in second.tags] == ["cs.CL", "cs.AI", "cs.LG"]
    # The abstract is plain text: markup-looking characters come back as typed.
    assert second.summary_detail.type == "text/plain"
    assert second.summary == older.abstract


def test_topic_feed_holds_the_latest_fifty(client):
    topic = TopicFactory()
    papers = [
        paper_in(topic, submitted=dt.date(2026, 8, 1) + dt.timedelta(days=i)) for i in range(51)
    ]

    feed = parse(client.get(topic_feed_url(topic)))

    assert len(feed.entries) == 50
    assert feed.entries[0].title == papers[-1].title
    assert papers[0].title not in {e.title for e in feed.entries}


def test_hostile_title_is_escaped_in_the_xml_and_read_back_as_text(client):
    topic = TopicFactory()
    paper_in(topic, title="<script>alert(1)</script>", abstract="<img src=x onerror=alert(1)>")

    response = client.get(topic_feed_url(topic))

    xml = response.content.decode()
    assert "<script>" not in xml and "<img" not in xml
    assert "<title>&lt;script&gt;alert(1)&lt;/script&gt;</title>" in xml
    entry = parse(response).entries[0]
    assert entry.title == "<script>alert(1)</script>"
    assert entry.title_detail.type == "text/plain"
    assert entry.summary == "<img src=x onerror=alert(1)>"


def test_control_characters_are_dropped_not_a_server_error(client):
    topic = TopicFactory()
    paper_in(topic, title="Vertical\x0btab", abstract="Form\x0cfeed")

    entry = parse(client.get(topic_feed_url(topic))).entries[0]

    assert (entry.title, entry.summary) == ("Verticaltab", "Formfeed")


def test_topic_feed_of_an_empty_topic_is_valid(client):
    feed = parse(client.get(topic_feed_url(TopicFactory())))

    assert feed.entries == []


def test_old_slug_redirects_permanently_and_unknown_topics_are_404(client):
    topic = TopicFactory(slug="agent-training")
    TopicRedirect.objects.create(old_slug="llm-agents", topic=topic)
    inactive = TopicFactory(active=False)

    response = client.get("/topics/llm-agents/feed/")

    assert response.status_code == 301
    assert response["Location"] == "/topics/agent-training/feed/"
    assert client.get("/topics/no-such-topic/feed/").status_code == 404
    assert client.get(topic_feed_url(inactive)).status_code == 404


def test_topic_page_announces_its_feed(client):
    topic = TopicFactory(name="Agent Training")

    html = client.get(topic.get_absolute_url()).content.decode()

    feed_url = topic_feed_url(topic)
    assert (
        f'<link rel="alternate" type="application/atom+xml" title="Agent Training (Atom feed)"'
        f' href="{feed_url}">'
    ) in html
    head = html.split("</head>")[0]
    assert "application/atom+xml" in head
    assert f'<a class="feed-link" href="{feed_url}">Atom feed</a>' in html


def _user_with_papers():
    user = UserFactory()
    topic = TopicFactory(name="Followed")
    by_topic = paper_in(topic, title="Via the topic", submitted=dt.date(2026, 9, 29))
    by_search = PaperFactory(title="Via the search", submitted=dt.date(2026, 9, 30))
    PaperFactory(title="Followed by nobody", submitted=dt.date(2026, 10, 1))
    Follow.objects.create(user=user, topic=topic)
    search = Follow.objects.create(user=user, kind=Follow.Kind.SEARCH, query="reward")
    SearchMatch.objects.create(follow=search, paper=by_search)
    return user, [by_search, by_topic]


def test_private_feed_works_without_login_and_matches_the_feed_page():
    user, papers = _user_with_papers()
    url = private_feed_url(user)

    response = Client().get(url)

    feed = parse(response)
    assert [e.title for e in feed.entries] == [p.title for p in papers]
    assert feed.feed.link == f"{SITE}/feed/"
    assert [link.href for link in feed.feed.links if link.rel == "self"] == [f"{SITE}{url}"]
    assert response["Cache-Control"] == "private, no-store"
    assert "noindex" in response["X-Robots-Tag"]
    # The same papers, in the same order, as the signed-in feed page.
    client = Client()
    client.force_login(user)
    html = client.get("/feed/").content.decode()
    positions = [html.index(f">{p.title}<") for p in papers]
    assert positions == sorted(positions)
    assert "Followed by nobody" not in html


def test_withdrawn_and_deleted_papers_are_in_neither_atom_feed(client):
    user, papers = _user_with_papers()
    topic = Follow.objects.get(user=user, kind=Follow.Kind.TOPIC).topic
    Paper.objects.filter(pk=papers[1].pk).update(withdrawn=True)  # via the topic
    Paper.objects.filter(pk=papers[0].pk).update(deleted_at=dt.datetime(2026, 10, 2, tzinfo=dt.UTC))

    assert parse(client.get(topic_feed_url(topic))).entries == []
    assert parse(Client().get(private_feed_url(user))).entries == []


def test_private_feed_stops_working_after_regenerate():
    user, _ = _user_with_papers()
    old_url = private_feed_url(user)
    assert Client().get(old_url).status_code == 200

    private_feed_key_regenerate(user=user)

    response = Client().get(old_url)
    assert response.status_code == 404
    html = response.content.decode()
    assert "This feed link is no longer valid" in html
    assert "Via the topic" not in html
    assert parse(Client().get(private_feed_url(user))).entries


def test_regenerate_button_invalidates_the_old_url(client):
    user, _ = _user_with_papers()
    old_url = private_feed_url(user)
    client.force_login(user)

    client.post(reverse("feed:regenerate"))

    assert Client().get(old_url).status_code == 404
    assert Client().get(private_feed_url(user)).status_code == 200


@pytest.mark.parametrize(
    "mangle",
    [
        pytest.param(
            lambda token: token[:-2] + ("AA" if not token.endswith("AA") else "BB"), id="tampered"
        ),
        pytest.param(lambda token: token.split(":")[0], id="truncated"),
        pytest.param(lambda token: "x" * 40, id="garbage"),
    ],
)
def test_bad_tokens_get_the_clear_page_with_404(mangle):
    user, _ = _user_with_papers()
    state = feed_visit(user=user)
    token = mangle(private_feed_token(state=state))

    response = Client().get(reverse("feed:atom", kwargs={"token": token}))

    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
    assert "This feed link is no longer valid" in response.content.decode()


def test_one_users_token_never_shows_another_users_papers():
    alice, alice_papers = _user_with_papers()
    bob = UserFactory()

    feed = parse(Client().get(private_feed_url(bob)))

    assert feed.entries == []
    assert not {p.title for p in alice_papers} & {e.title for e in feed.entries}


def test_feed_query_counts_do_not_grow_with_the_papers(client):
    user, _ = _user_with_papers()
    topic = Follow.objects.get(user=user, kind=Follow.Kind.TOPIC).topic
    urls = [topic_feed_url(topic), private_feed_url(user)]

    def counts():
        result = []
        for url in urls:
            with CaptureQueriesContext(connection) as queries:
                assert client.get(url).status_code == 200
            result.append(len(queries))
        return result

    few = counts()
    for i in range(30):
        paper = paper_in(topic, submitted=dt.date(2026, 9, 1) + dt.timedelta(days=i % 7))
        paper.cross_lists.set([CategoryFactory(code="cs.LG"), CategoryFactory(code="cs.AI")])
        for position in range(12):
            AuthorshipFactory(paper=paper, position=position)

    assert counts() == few
    assert max(few) <= 6
    # Large author lists are cut to the first ATOM_AUTHORS, in order.
    entry = parse(client.get(urls[0])).entries[1]  # [0] is the paper without authors
    assert len(entry.authors) == ATOM_AUTHORS == 10
    assert [a.name for a in entry.authors][:2] == [
        a.author.name for a in Paper.objects.get(title=entry.title).authorships.all()[:2]
    ]


def test_an_oversized_title_and_abstract_are_clipped_in_entries(client):
    topic = TopicFactory(slug="huge")
    long_title = paper_in(topic, title="T" + " title" * 200_000)  # 1.2 MB
    long_abstract = paper_in(topic, abstract="word " * 800_000)  # 4 MB
    response = client.get(topic_feed_url(topic))
    assert len(response.content) < 50_000
    entries = {e.link: e for e in parse(response).entries}
    title_entry = entries[SITE + long_title.get_absolute_url()]
    assert len(title_entry.title) <= CARD_TITLE_CHARS + 1 and title_entry.title.endswith("…")
    summary = entries[SITE + long_abstract.get_absolute_url()].summary
    assert len(summary) < CARD_ABSTRACT_CHARS + 200
    assert summary.endswith(f"(The whole abstract: {SITE}{long_abstract.get_absolute_url()})")
