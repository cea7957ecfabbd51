"""Sign-up with mandatory email verification, then log in and out (django-allauth)."""

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client

from accounts.tests.factories import PASSWORD, UserFactory
from accounts.tests.mail import link_in_last_mail, signed_in_user_id

pytestmark = pytest.mark.django_db

User = get_user_model()


def sign_up(client, email, password=PASSWORD):
    return client.post(
        "/accounts/signup/", {"email": email, "password1": password, "password2": password}
    )


def log_in(client, email, password=PASSWORD, **extra):
    return client.post("/accounts/login/", {"login": email, "password": password, **extra})


def test_sign_up_mails_a_verification_link_and_signs_nobody_in():
    client = Client()

    response = sign_up(client, "ada@example.org")

    assert response.status_code == 302
    assert response["Location"] == "/accounts/confirm-email/"
    user = User.objects.get(email="ada@example.org")
    assert user.check_password(PASSWORD)
    address = EmailAddress.objects.get(user=user)
    assert (address.email, address.verified, address.primary) == ("ada@example.org", False, True)
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["ada@example.org"]
    assert message.subject == "[topicsite] Please Confirm Your Email Address"
    assert "Hello from topicsite!" in message.body
    assert link_in_last_mail("ada@example.org", "/accounts/confirm-email/")
    assert signed_in_user_id(client) is None
    page = client.get(response["Location"]).content.decode()
    assert "Verify Your Email Address" in page


def test_unverified_user_cannot_log_in_until_the_mailed_link_is_followed():
    sign_up(Client(), "ada@example.org")
    confirm_path = link_in_last_mail("ada@example.org", "/accounts/confirm-email/")
    client = Client()

    response = log_in(client, "ada@example.org")

    assert response.status_code == 302
    assert response["Location"] == "/accounts/confirm-email/"
    assert signed_in_user_id(client) is None
    assert client.get("/accounts/")["Location"].startswith("/accounts/login/")

    # The link opens a page whose button confirms (a GET alone confirms nothing).
    page = client.get(confirm_path)
    assert page.status_code == 200
    assert "ada@example.org" in page.content.decode()
    assert not EmailAddress.objects.filter(verified=True).exists()
    response = client.post(confirm_path)
    assert response.status_code == 302
    assert EmailAddress.objects.get(email="ada@example.org").verified

    client.logout()
    response = log_in(client, "ada@example.org", next="/accounts/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/"
    assert signed_in_user_id(client) == str(User.objects.get(email="ada@example.org").pk)


def test_confirming_in_the_browser_that_signed_up_signs_the_reader_in():
    client = Client()
    sign_up(client, "ada@example.org")
    confirm_path = link_in_last_mail("ada@example.org", "/accounts/confirm-email/")

    response = client.post(confirm_path)

    assert response.status_code == 302
    user = User.objects.get(email="ada@example.org")
    assert signed_in_user_id(client) == str(user.pk)
    assert EmailAddress.objects.get(user=user).verified


def test_a_bad_confirmation_key_gets_a_clear_page_and_verifies_nothing():
    sign_up(Client(), "ada@example.org")

    response = Client().get("/accounts/confirm-email/not-a-key/")

    assert response.status_code == 200
    assert "This email confirmation link expired or is invalid." in response.content.decode()
    assert not EmailAddress.objects.filter(verified=True).exists()


def test_sign_up_with_a_taken_email_or_mismatched_passwords_is_refused_and_writes_nothing():
    UserFactory(email="ada@example.org")
    client = Client()

    response = client.post(
        "/accounts/signup/",
        {"email": "new@example.org", "password1": PASSWORD, "password2": PASSWORD + "x"},
    )
    assert response.status_code == 200
    assert "You must type the same password each time." in response.content.decode()
    assert not User.objects.filter(email="new@example.org").exists()

    # With enumeration prevention on, a taken address looks like a successful sign-up, and
    # its owner is told by mail instead.
    response = sign_up(client, "ada@example.org")
    assert response["Location"] == "/accounts/confirm-email/"
    assert User.objects.filter(email__iexact="ada@example.org").count() == 1
    assert [m.to for m in mail.outbox] == [["ada@example.org"]]
    assert "Account Already Exists" in mail.outbox[0].subject


def test_wrong_password_is_refused_with_allauths_message():
    UserFactory(email="ada@example.org")
    client = Client()

    response = log_in(client, "ada@example.org", "not the password")

    assert response.status_code == 200
    assert (
        "The email address and/or password you specified are not correct."
        in response.content.decode()
    )
    assert signed_in_user_id(client) is None


def test_log_out_is_a_post_and_comes_back_to_next():
    user = UserFactory()
    client = Client()
    log_in(client, user.email)
    assert signed_in_user_id(client) == str(user.pk)

    # GET asks for confirmation and keeps the session.
    assert client.get("/accounts/logout/").status_code == 200
    assert signed_in_user_id(client) == str(user.pk)

    response = client.post("/accounts/logout/", {"next": "/accounts/login/"})
    assert response["Location"] == "/accounts/login/"
    assert signed_in_user_id(client) is None
