"""Who may merge and split authors in the admin: a signed-in reader may not (not even with a
forged POST), a member of the Curators group may without the staff flag, and only through
the merge and split actions: deleting an author is not among a curator's rights."""

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse

from papers.models import Author
from papers.tests.factories import AuthorFactory

pytestmark = pytest.mark.django_db

CHANGELIST = "admin:papers_author_changelist"


def _merge(client, keep, other):
    return client.post(
        reverse(CHANGELIST),
        {
            "action": "merge_authors",
            ACTION_CHECKBOX_NAME: [keep.pk, other.pk],
            "apply": 1,
            "survivor": keep.pk,
        },
    )


def test_a_reader_cannot_merge_authors():
    keep, other = AuthorFactory(name="John Smith"), AuthorFactory(name="J. Smith")
    client = Client()
    client.force_login(get_user_model().objects.create_user("reader", "r@example.org", "pw"))
    assert _merge(client, keep, other).status_code in (302, 403)
    other.refresh_from_db()
    assert other.merged_into is None
    anonymous = _merge(Client(), keep, other)
    assert anonymous.status_code == 302 and "login" in anonymous["Location"]
    other.refresh_from_db()
    assert other.merged_into is None


def test_a_curator_without_staff_flag_merges_but_cannot_delete():
    keep, other = AuthorFactory(name="John Smith"), AuthorFactory(name="J. Smith")
    member = get_user_model().objects.create_user("member", "m@example.org", "pw")
    member.groups.add(Group.objects.get(name="Curators"))
    client = Client(enforce_csrf_checks=True)
    client.force_login(member)
    # Without the CSRF token the action is refused.
    assert _merge(client, keep, other).status_code == 403
    other.refresh_from_db()
    assert other.merged_into is None
    client = Client()
    client.force_login(member)
    assert _merge(client, keep, other).status_code == 302
    other.refresh_from_db()
    assert other.merged_into == keep
    deleted = client.post(reverse("admin:papers_author_delete", args=[keep.pk]), {"post": "yes"})
    assert deleted.status_code == 403
    assert Author.objects.filter(pk=keep.pk).exists()
    assert client.get(reverse("admin:auth_user_changelist")).status_code == 403
