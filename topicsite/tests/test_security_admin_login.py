"""Password guessing at the admin: /admin/login/ sends everyone to allauth's log-in page, whose
rate limits (per account and per client address, ``ACCOUNT_RATE_LIMITS``) then apply to staff
as to readers; the admin's own form, which had no limit, never signs anyone in."""

import pytest
from django.urls import reverse

from accounts.tests.factories import PASSWORD, UserFactory
from accounts.tests.mail import signed_in_user_id

pytestmark = pytest.mark.django_db

TOO_MANY = "Too many failed login attempts. Try again later."


@pytest.fixture(autouse=True)
def fresh_limits():
    """allauth counts in the cache (the test Redis db): none left from other tests."""
    from django.core.cache import cache

    cache.delete_pattern("allauth:rl:*")
    yield
    cache.delete_pattern("allauth:rl:*")


def admin_form(client, username, password):
    return client.post(
        reverse("admin:login") + "?next=/admin/", {"username": username, "password": password}
    )


def allauth_form(client, email, password):
    return client.post(
        reverse("account_login") + "?next=/admin/", {"login": email, "password": password}
    )


def test_fifteen_wrong_passwords_on_the_admin_form_then_the_right_one_signs_nobody_in(client):
    staff = UserFactory(is_staff=True, is_superuser=True)

    answers = [admin_form(client, staff.username, f"guess {n}") for n in range(15)]
    answer = admin_form(client, staff.username, PASSWORD)

    assert signed_in_user_id(client) is None
    # The admin's form only redirects to allauth's page, keeping where to go afterwards.
    assert {(r.status_code, r.url) for r in answers + [answer]} == {
        (302, reverse("account_login") + "?next=%2Fadmin%2F")
    }


def test_fifteen_wrong_passwords_for_a_staff_account_then_the_right_one_is_refused(client):
    staff = UserFactory(is_staff=True, is_superuser=True)

    pages = [allauth_form(client, staff.email, f"guess {n}").content.decode() for n in range(15)]
    response = allauth_form(client, staff.email, PASSWORD)

    # 5 failures per account in 5 minutes, then every attempt is refused, the right one too.
    assert [TOO_MANY in page for page in pages] == [False] * 5 + [True] * 10
    assert response.status_code == 200 and TOO_MANY in response.content.decode()
    assert signed_in_user_id(client) is None
    assert client.get("/admin/").status_code == 302


def test_guessing_across_accounts_is_limited_per_address(client):
    accounts = [UserFactory(is_staff=True) for _ in range(12)]

    # One wrong password for each of 12 accounts from one address: 10 a minute, then refused.
    refused = [
        TOO_MANY in allauth_form(client, a.email, "guess").content.decode() for a in accounts
    ]

    assert refused == [False] * 10 + [True] * 2


def test_staff_sign_in_on_allauths_page_and_land_in_the_admin(client):
    staff = UserFactory(is_staff=True)
    reader = UserFactory()

    response = allauth_form(client, staff.email, PASSWORD)

    assert (response.status_code, response.url) == (302, "/admin/")
    assert client.get("/admin/").status_code == 200
    # A signed-in reader who is not staff is refused, not sent to log in again.
    client.logout()
    client.force_login(reader)
    assert client.get(reverse("admin:login")).status_code == 403
