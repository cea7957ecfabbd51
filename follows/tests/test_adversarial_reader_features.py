"""Adversarial input on the reader features: the library, "For you", follows."""

import pytest
from django.test import Client

from follows.models import LibraryItem
from papers.tests.factories import PaperFactory
from topics.tests.factories import UserFactory


@pytest.fixture
def client_in(db):
    client = Client()
    client.force_login(UserFactory(username="hostile"))
    return client


def test_for_you_pending_dismissal_non_ascii_digit_is_ignored(client_in):
    # "²".isdigit() is true but int("²") raises: was a 500.
    response = client_in.get("/for-you/", {"not_interested": "²"})
    assert response.status_code == 200


def test_library_note_with_nul_is_400_not_500(client_in):
    paper = PaperFactory()
    client_in.post(f"/library/papers/{paper.pk}/save/", {"action": "save"})
    response = client_in.post(f"/library/papers/{paper.pk}/note/", {"note": "a\x00b"})
    assert response.status_code == 400


@pytest.mark.parametrize(
    "url",
    [
        "/library/papers/{pk}/save/",
        "/for-you/papers/{pk}/not-interested/",
        "/follows/topics/agents/",
    ],
)
def test_posts_without_csrf_token_are_refused(db, url):
    from topics.services import topic_create

    topic_create(name="Agents", slug="agents")
    paper = PaperFactory()
    client = Client(enforce_csrf_checks=True)
    client.force_login(UserFactory(username="hostile"))
    response = client.post(url.format(pk=paper.pk), {"action": "save"})
    assert response.status_code == 403
    assert not LibraryItem.objects.exists()


def test_another_readers_library_item_is_404(client_in):
    paper = PaperFactory()
    owner = UserFactory(username="owner")
    LibraryItem.objects.create(user=owner, paper=paper, note="private")
    for url in (f"/library/papers/{paper.pk}/note/", f"/library/papers/{paper.pk}/read/"):
        response = client_in.post(url, {"note": "mine", "action": "read"})
        assert response.status_code == 404
    item = LibraryItem.objects.get(user=owner)
    assert item.note == "private" and item.read_at is None


@pytest.mark.parametrize(
    "target", ["//evil.com", "https://evil.com/", "/\\evil.com", "javascript:alert(1)", "\\\\evil"]
)
def test_library_next_never_leaves_the_site(client_in, target):
    paper = PaperFactory()
    response = client_in.post(
        f"/library/papers/{paper.pk}/save/", {"action": "save", "next": target}
    )
    assert response.status_code == 302
    assert response["Location"] == "/library/"


def test_unfollow_from_a_stale_page_of_a_merged_away_author_unfollows(client_in):
    # The reader follows "A. Smith"; a curator merges that name into "Alice Smith" while the
    # reader's page still shows the old one: its "Unfollow" posts the old id. It said "You no
    # longer follow" and left the (moved) follow in place.
    from follows.models import Follow
    from follows.services import follow_author_create
    from papers.author_services import authors_merge
    from papers.tests.factories import AuthorFactory

    reader = client_in.session["_auth_user_id"]
    variant, survivor = AuthorFactory(name="A. Smith"), AuthorFactory(name="Alice Smith")
    follow_author_create(user=UserFactory._meta.model.objects.get(pk=reader), author=variant)
    authors_merge(authors=[variant], survivor=survivor, user=None)

    response = client_in.post(
        f"/follows/authors/{variant.pk}/", {"action": "unfollow"}, HTTP_ACCEPT="application/json"
    )
    assert response.status_code == 200
    assert response.json()["following"] is False
    assert not Follow.objects.filter(user_id=reader).exists()
    # Without an action the state flips: following again follows the survivor.
    response = client_in.post(f"/follows/authors/{variant.pk}/", HTTP_ACCEPT="application/json")
    assert response.json()["following"] is True
    assert list(Follow.objects.filter(user_id=reader).values_list("author_id", flat=True)) == [
        survivor.pk
    ]


def test_follow_with_an_author_read_before_a_merge_follows_the_survivor(db):
    # The follow view read the author, then a merge committed before its insert (the insert
    # waited on the merge's row lock): the follow landed on the merged-away name, whose papers
    # have all moved, so the reader followed nothing.
    from follows.models import Follow
    from follows.services import follow_author_create
    from papers.author_services import authors_merge
    from papers.models import Author
    from papers.tests.factories import AuthorFactory

    variant, survivor = AuthorFactory(name="A. Smith"), AuthorFactory(name="Alice Smith")
    stale = Author.objects.get(pk=variant.pk)
    authors_merge(authors=[variant], survivor=survivor, user=None)
    reader = UserFactory()
    follow = follow_author_create(user=reader, author=stale)
    assert follow.author_id == survivor.pk
    assert list(Follow.objects.filter(user=reader).values_list("author_id", flat=True)) == [
        survivor.pk
    ]


@pytest.mark.django_db(transaction=True)
def test_double_submitted_saves_follows_and_reports_make_one_row_each():
    # Two tabs (two connections) submitting the same forms at once: one row each, no 500.
    import threading

    from django.db import connection

    from follows.models import Follow, ForYouFeedback
    from papers.tests.factories import AuthorFactory
    from topics.models import AssignmentReport
    from topics.services import topic_create
    from topics.tests.factories import AssignmentFactory

    user = UserFactory(username="twice")
    paper = PaperFactory()
    topic = topic_create(name="Agents", slug="agents")
    assignment = AssignmentFactory(paper=paper, topic=topic, state="accepted")
    author = AuthorFactory(name="Zed")
    posts = [
        (f"/library/papers/{paper.pk}/save/", {"action": "save"}),
        (f"/for-you/papers/{paper.pk}/not-interested/", {}),
        ("/follows/topics/agents/", {"action": "follow"}),
        (f"/follows/authors/{author.pk}/", {"action": "follow"}),
        (f"/topics/assignments/{assignment.pk}/report/", {"note": "off topic"}),
    ]
    statuses = []
    barrier = threading.Barrier(4)

    def submit():
        client = Client(raise_request_exception=False)
        client.force_login(user)
        try:
            for url, data in posts:
                barrier.wait(timeout=30)
                statuses.append((url, client.post(url, data).status_code))
        finally:
            connection.close()

    threads = [threading.Thread(target=submit) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert len(statuses) == 4 * len(posts)
    assert all(status == 302 for _url, status in statuses), statuses
    assert LibraryItem.objects.filter(user=user).count() == 1
    assert ForYouFeedback.objects.filter(user=user).count() == 1
    assert Follow.objects.filter(user=user, topic=topic).count() == 1
    assert Follow.objects.filter(user=user, author=author).count() == 1
    assert AssignmentReport.objects.filter(reporter=user).count() == 1
