"""Changing the email address: add, verify by mailed link, make primary (django-allauth)."""

import pytest
from allauth.account.models import EmailAddress
from django.core import mail
from django.test import Client

from accounts.tests.factories import PASSWORD, UserFactory
from accounts.tests.mail import link_in_last_mail, signed_in_user_id

pytestmark = pytest.mark.django_db


def test_add_verify_and_make_primary_then_log_in_with_the_new_address():
    user = UserFactory(email="old@example.org")
    client = Client()
    client.post("/accounts/login/", {"login": "old@example.org", "password": PASSWORD})

    response = client.post("/accounts/email/", {"action_add": "", "email": "new@example.org"})
    assert response.status_code == 302
    new = EmailAddress.objects.get(user=user, email="new@example.org")
    assert (new.verified, new.primary) == (False, False)
    confirm_path = link_in_last_mail("new@example.org", "/accounts/confirm-email/")

    # An unverified address cannot become primary.
    response = client.post(
        "/accounts/email/", {"action_primary": "", "email": "new@example.org"}, follow=True
    )
    assert "Your primary email address must be verified." in response.content.decode()
    user.refresh_from_db()
    assert user.email == "old@example.org"

    assert client.post(confirm_path).status_code == 302
    new.refresh_from_db()
    assert new.verified

    response = client.post("/accounts/email/", {"action_primary": "", "email": "new@example.org"})
    assert response.status_code == 302
    user.refresh_from_db()
    assert user.email == "new@example.org"
    assert list(
        EmailAddress.objects.filter(user=user).order_by("email").values_list("email", "primary")
    ) == [("new@example.org", True), ("old@example.org", False)]
    # The old address is told of the change.
    assert mail.outbox[-1].to == ["old@example.org"]
    assert "Email Changed" in mail.outbox[-1].subject

    page = client.get("/accounts/").content.decode()
    assert page.index("new@example.org") < page.index("old@example.org")

    fresh = Client()
    fresh.post("/accounts/login/", {"login": "new@example.org", "password": PASSWORD})
    assert signed_in_user_id(fresh) == str(user.pk)


def test_an_address_of_another_account_can_never_be_verified_by_a_second_account():
    owner = UserFactory(email="taken@example.org")
    user = UserFactory(email="ada@example.org")
    client = Client()
    client.force_login(user)

    # With enumeration prevention allauth answers as if the address were free: it is stored
    # unverified and its owner gets the link...
    response = client.post("/accounts/email/", {"action_add": "", "email": "taken@example.org"})
    assert response.status_code == 302
    confirm_path = link_in_last_mail("taken@example.org", "/accounts/confirm-email/")

    # ...which cannot confirm it for the second account (ACCOUNT_UNIQUE_EMAIL).
    page = client.get(confirm_path).content.decode()
    assert "already confirmed by a different account" in page
    client.post(confirm_path)
    assert not EmailAddress.objects.get(user=user, email="taken@example.org").verified
    client.post("/accounts/email/", {"action_primary": "", "email": "taken@example.org"})
    user.refresh_from_db()
    assert user.email == "ada@example.org"
    assert EmailAddress.objects.get(user=owner).primary
