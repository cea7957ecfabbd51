"""Merging and splitting authors through the admin (the test client posting the actions)."""

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth import get_user_model
from django.urls import reverse

from papers.models import Author, Authorship
from papers.tests.factories import AuthorFactory, AuthorshipFactory, PaperFactory

pytestmark = pytest.mark.django_db

CHANGELIST = "admin:papers_author_changelist"


@pytest.fixture
def curator():
    return get_user_model().objects.create_user(
        "curator", "curator@example.org", "pw", is_staff=True, is_superuser=True
    )


@pytest.fixture
def admin_client(client, curator):
    client.force_login(curator)
    return client


@pytest.fixture
def smiths():
    john = AuthorFactory(name="John Smith")
    initials = AuthorFactory(name="J. Smith")
    shared = PaperFactory(title="Both names on one paper")
    AuthorshipFactory(paper=shared, author=initials, position=0)
    AuthorshipFactory(paper=shared, author=john, position=1)
    AuthorshipFactory(paper=PaperFactory(title="Initials"), author=initials, position=0)
    return john, initials


def test_merge_action_asks_for_the_survivor_then_merges(admin_client, smiths, curator):
    john, initials = smiths
    url = reverse(CHANGELIST)
    selection = {"action": "merge_authors", ACTION_CHECKBOX_NAME: [john.pk, initials.pk]}

    confirm = admin_client.post(url, selection)
    assert confirm.status_code == 200
    page = confirm.content.decode()
    assert "Merge authors" in page and "The author that stays" in page
    assert "John Smith (#" in page and "J. Smith (#" in page
    assert Author.objects.get(pk=initials.pk).merged_into is None  # nothing done yet

    done = admin_client.post(url, {**selection, "apply": "Apply", "survivor": john.pk})
    assert done.status_code == 302
    initials.refresh_from_db()
    assert initials.merged_into == john
    assert list(
        Authorship.objects.filter(paper__title="Both names on one paper")
        .order_by("position")
        .values_list("author_id", "position")
    ) == [(john.pk, 0), (john.pk, 1)]
    messages = [str(m) for m in admin_client.get(url).context["messages"]]
    assert any("Merged 'J. Smith' into 'John Smith': 2 authorship(s) moved" in m for m in messages)
    # The history page of the merged author names the curator.
    history = admin_client.get(reverse("admin:papers_author_history", args=[initials.pk]))
    assert history.status_code == 200 and "merged into" in history.content.decode()
    assert initials.history.first().history_user == curator


def test_merge_action_without_a_survivor_or_with_only_one_author_says_so(admin_client, smiths):
    john, initials = smiths
    url = reverse(CHANGELIST)
    missing = admin_client.post(
        url, {"action": "merge_authors", ACTION_CHECKBOX_NAME: [john.pk, initials.pk], "apply": 1}
    )
    assert missing.status_code == 200 and "This field is required" in missing.content.decode()
    alone = admin_client.post(
        url,
        {
            "action": "merge_authors",
            ACTION_CHECKBOX_NAME: [john.pk],
            "apply": 1,
            "survivor": john.pk,
        },
    )
    assert "Choose at least one author other than the one that stays" in alone.content.decode()
    assert not Author.objects.filter(merged_into__isnull=False).exists()


def test_split_action_moves_the_chosen_authorships(admin_client, smiths):
    john, initials = smiths
    url = reverse(CHANGELIST)
    chosen = Authorship.objects.get(author=initials, paper__title="Initials")
    selection = {"action": "split_author", ACTION_CHECKBOX_NAME: [initials.pk]}
    form = admin_client.post(url, selection)
    assert form.status_code == 200 and "Initials" in form.content.decode()

    done = admin_client.post(
        url, {**selection, "apply": 1, "authorships": [chosen.pk], "name": "Jane Smith"}
    )
    assert done.status_code == 302, done.context["form"].errors
    chosen.refresh_from_db()
    assert chosen.author.name == "Jane Smith"
    taken = admin_client.post(
        url, {**selection, "apply": 1, "authorships": [chosen.pk], "name": "John Smith"}
    )
    assert "Select a valid choice" in taken.content.decode()  # no longer J. Smith's
    two = admin_client.post(url, {"action": "split_author", ACTION_CHECKBOX_NAME: [1, 2]})
    assert two.status_code == 302


def test_a_member_of_the_curators_group_may_merge(client, smiths):
    from django.contrib.auth.models import Group

    john, initials = smiths
    member = get_user_model().objects.create_user("member", "m@example.org", "pw", is_staff=True)
    member.groups.add(Group.objects.get(name="Curators"))
    client.force_login(member)
    done = client.post(
        reverse(CHANGELIST),
        {
            "action": "merge_authors",
            ACTION_CHECKBOX_NAME: [john.pk, initials.pk],
            "apply": 1,
            "survivor": john.pk,
        },
    )
    assert done.status_code == 302
    initials.refresh_from_db()
    assert initials.merged_into == john
    history = client.get(reverse("admin:papers_author_history", args=[initials.pk]))
    assert history.status_code == 200
