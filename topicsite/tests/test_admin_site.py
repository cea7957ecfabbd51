"""The admin site lets the Curators group in without "Staff status" (topicsite/admin_site.py):
adding a person to the group opens /admin/, taking them out (or deleting the group) closes it."""

import pytest
from django.contrib.auth.models import Group

from accounts.tests.factories import UserFactory
from topicsite.admin_site import CURATORS_GROUP, admin_entry_allowed

pytestmark = pytest.mark.django_db


@pytest.fixture
def curators():
    # Made by topics/migrations/0003_curators_group.py (with its permissions).
    return Group.objects.get(name=CURATORS_GROUP)


def test_adding_to_curators_opens_the_admin_and_removing_closes_it(client, curators):
    person = UserFactory(is_staff=False)
    client.force_login(person)
    assert client.get("/admin/").status_code == 302  # to the log-in page: not allowed
    assert client.get("/admin/login/").status_code == 403

    person.groups.add(curators)
    assert client.get("/admin/").status_code == 200
    assert client.get("/admin/topics/topic/").status_code == 200
    assert client.get("/admin/topics/assignment/?review=queue").status_code == 200
    assert client.get("/admin/login/")["Location"] == "/admin/"
    # The group's permissions only: no users or groups.
    assert client.get("/admin/auth/user/").status_code == 403
    person.refresh_from_db()
    assert not person.is_staff  # nothing stored: the group alone lets them in

    person.groups.remove(curators)
    response = client.get("/admin/")
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    assert client.get("/admin/login/").status_code == 403


def test_deleting_the_group_or_deactivating_the_person_closes_the_admin(client, curators):
    person = UserFactory(is_staff=False)
    person.groups.add(curators)
    assert admin_entry_allowed(person)
    person.is_active = False
    assert not admin_entry_allowed(person)
    person.is_active = True
    curators.delete()
    assert not admin_entry_allowed(person)


def test_staff_still_enter_and_anonymous_readers_go_to_the_log_in_page(client):
    client.force_login(UserFactory(is_staff=True))
    assert client.get("/admin/").status_code == 200
    client.logout()
    response = client.get("/admin/login/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=")


def test_a_reader_sent_away_from_the_admin_gets_the_403_page_and_no_traceback(client, caplog):
    """A signed-in reader who opens /admin/ is not a server error: the 403 page, logged as one
    line like any 4xx, with no traceback in the console."""
    client.force_login(UserFactory(is_staff=False))
    with caplog.at_level("WARNING", logger="django.request"):
        response = client.get("/admin/", follow=True)
    assert response.status_code == 403
    assert response.redirect_chain and response.redirect_chain[-1][0].startswith("/admin/login/")
    assert not [record for record in caplog.records if record.exc_info]
