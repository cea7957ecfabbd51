"""Following an author: the toggle view, the follows page, the feed, the private Atom feed,
export and import, and follows moving when a curator merges authors."""

import datetime as dt
import json

import feedparser
import pytest
from django.urls import reverse

from follows.feed_selectors import feed_card_papers, feed_mark
from follows.feed_services import private_feed_token
from follows.models import FeedState, Follow
from follows.selectors import follow_papers, follows_export, user_follow_matches, user_papers
from follows.services import follow_author_create, follows_import
from papers.author_services import authors_merge
from papers.tests.factories import AuthorFactory, AuthorshipFactory, PaperFactory
from topics.tests.factories import AssignmentFactory, TopicFactory, UserFactory

pytestmark = pytest.mark.django_db

DAY = dt.date(2026, 9, 29)


@pytest.fixture
def author():
    return AuthorFactory(name="Grace Hopper")


def paper_by(author, *, days_ago=0, position=0, **kwargs):
    paper = PaperFactory(submitted=DAY - dt.timedelta(days=days_ago), **kwargs)
    AuthorshipFactory(paper=paper, author=author, position=position)
    return paper


def toggle_url(author):
    return reverse("follows:author-toggle", kwargs={"pk": author.pk})


def test_follow_and_unfollow_from_the_author_page(client, author):
    user = UserFactory()
    client.force_login(user)
    response = client.post(toggle_url(author), {"action": "follow"})
    assert response.status_code == 302 and response["Location"] == author.get_absolute_url()
    assert Follow.objects.get(user=user).kind == Follow.Kind.AUTHOR
    # Twice is the same state.
    client.post(toggle_url(author), {"action": "follow"})
    assert Follow.objects.filter(user=user, author=author).count() == 1
    page = client.get(author.get_absolute_url()).content.decode()
    assert "Unfollow this author" in page and "1 follower" in page
    json_response = client.post(
        toggle_url(author), {"action": "unfollow"}, HTTP_ACCEPT="application/json"
    )
    assert json_response.json() == {"following": False, "follower_count": 0}
    assert not Follow.objects.filter(user=user).exists()


def test_toggle_refuses_bad_input(client, author):
    anonymous = client.post(toggle_url(author), {"action": "follow"})
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    client.force_login(UserFactory())
    assert client.post(toggle_url(author), {"action": "maybe"}).status_code == 400
    assert client.get(toggle_url(author)).status_code == 405
    assert client.post("/follows/authors/987654/", {"action": "follow"}).status_code == 404
    huge = client.post("/follows/authors/99999999999999999999999/", {"action": "follow"})
    assert huge.status_code == 404


def test_follows_page_lists_author_follows(client, author):
    user = UserFactory()
    follow_author_create(user=user, author=author)
    client.force_login(user)
    page = client.get(reverse("follows:list")).content.decode()
    assert 'id="authors-heading"' in page
    assert f'href="{author.get_absolute_url()}">Grace Hopper</a>' in page


def test_author_papers_reach_the_feed_and_matches(author):
    user = UserFactory()
    follow = follow_author_create(user=user, author=author)
    mine = [paper_by(author, days_ago=n, position=n % 3) for n in range(3)]
    withdrawn = paper_by(author, withdrawn=True)
    other = PaperFactory(submitted=DAY)
    topic = TopicFactory(name="Followed topic")
    AssignmentFactory(paper=other, topic=topic)

    expected = [p.pk for p in mine]
    assert list(follow_papers(follow=follow).values_list("pk", flat=True)) == expected
    assert list(user_papers(user=user).values_list("pk", flat=True)) == expected
    feed = feed_card_papers(user=user)
    assert [card.pk for card in feed[0:30]] == expected
    assert withdrawn.pk not in [card.pk for card in feed[0:30]]
    items = feed_mark(user=user, papers=feed[0:30], seen_before=None)
    assert all(item.matched_follows == [follow] for item in items)
    assert user_follow_matches(user=user, paper_ids=[other.pk]) == {}


def test_feed_queries_do_not_grow_with_author_papers(author, django_assert_max_num_queries):
    user = UserFactory()
    follow_author_create(user=user, author=author)
    for n in range(25):
        paper_by(author, days_ago=n)
    with django_assert_max_num_queries(4):
        cards = feed_card_papers(user=user)[0:30]
    with django_assert_max_num_queries(6):
        feed_mark(user=user, papers=cards, seen_before=None)


def test_private_atom_feed_holds_the_authors_papers(client, author):
    user = UserFactory()
    follow_author_create(user=user, author=author)
    paper = paper_by(author, title="Compilers for everyone")
    state = FeedState.objects.get_or_create(user=user)[0]
    response = client.get(reverse("feed:atom", kwargs={"token": private_feed_token(state=state)}))
    entries = feedparser.parse(response.content).entries
    assert [entry.title for entry in entries] == [paper.title]


def test_export_and_import_author_follows(author):
    user = UserFactory()
    follow_author_create(user=user, author=author, digest_frequency="daily")
    data = follows_export(user=user)
    assert data["follows"] == [
        {"kind": "author", "author": author.pk, "name": "Grace Hopper", "digest_frequency": "daily"}
    ]
    other = UserFactory()
    assert follows_import(user=other, content=json.dumps(data).encode()) == 1
    assert Follow.objects.get(user=other).author == author
    data["follows"][0]["author"] = 987654
    with pytest.raises(Exception, match="unknown author 987654"):
        follows_import(user=other, content=json.dumps(data).encode())


def test_merging_authors_moves_their_follows_to_the_survivor(author):
    variant = AuthorFactory(name="G. Hopper")
    third = AuthorFactory(name="Grace B. Hopper")
    both, only_variant, only_third = UserFactory(), UserFactory(), UserFactory()
    follow_author_create(user=both, author=author)
    follow_author_create(user=both, author=variant)
    follow_author_create(user=only_variant, author=variant)
    follow_author_create(user=only_third, author=third)
    follow_author_create(user=only_third, author=variant)

    authors_merge(authors=[variant, third], survivor=author, user=None)

    for user in (both, only_variant, only_third):
        assert list(Follow.objects.filter(user=user).values_list("author_id", flat=True)) == [
            author.pk
        ]
    # Following a merged-away name follows the survivor.
    late = UserFactory()
    variant.refresh_from_db()
    assert follow_author_create(user=late, author=variant).author == author


def test_feed_page_says_which_author_matched(client, author):
    user = UserFactory()
    follow_author_create(user=user, author=author)
    paper = paper_by(author, title="Debugging a moth")
    client.force_login(user)
    page = client.get(reverse("feed:index")).content.decode()
    assert paper.title in page
    assert f'Author: <a href="{author.get_absolute_url()}">Grace Hopper</a>' in page
