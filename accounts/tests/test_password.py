"""Password reset by mailed link, end to end, and password change (django-allauth)."""

import pytest
from django.core import mail
from django.test import Client

from accounts.tests.factories import PASSWORD, UserFactory
from accounts.tests.mail import link_in_last_mail, signed_in_user_id

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "a brand new passphrase 42"


def log_in(client, email, password):
    return client.post("/accounts/login/", {"login": email, "password": password})


def test_password_reset_by_mailed_link_end_to_end():
    user = UserFactory(email="ada@example.org")
    client = Client()

    response = client.post("/accounts/password/reset/", {"email": "ADA@example.org"})
    assert response.status_code == 302
    assert response["Location"] == "/accounts/password/reset/done/"
    assert [m.to for m in mail.outbox] == [["ada@example.org"]]
    assert mail.outbox[0].subject == "[topicsite] Password Reset Email"
    key_path = link_in_last_mail("ada@example.org", "/accounts/password/reset/key/")

    # allauth moves the key from the URL into the session, then shows the form.
    response = client.get(key_path)
    assert response.status_code == 302
    form_path = response["Location"]
    assert "set-password" in form_path
    assert "New Password" in client.get(form_path).content.decode()

    response = client.post(form_path, {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD})
    assert response.status_code == 302
    assert response["Location"] == "/accounts/password/reset/key/done/"
    user.refresh_from_db()
    assert user.check_password(NEW_PASSWORD)
    assert signed_in_user_id(client) is None

    # The link works once.
    response = Client().get(key_path, follow=True)
    assert response.status_code == 200
    assert "Bad Token" in response.content.decode()

    assert log_in(Client(), "ada@example.org", PASSWORD).status_code == 200
    fresh = Client()
    assert log_in(fresh, "ada@example.org", NEW_PASSWORD)["Location"] == "/"
    assert signed_in_user_id(fresh) == str(user.pk)


def test_password_reset_for_an_unknown_address_reveals_nothing_and_changes_nothing():
    user = UserFactory(email="ada@example.org")

    response = Client().post("/accounts/password/reset/", {"email": "nobody@example.org"})

    assert response["Location"] == "/accounts/password/reset/done/"
    assert [m.to for m in mail.outbox] == [["nobody@example.org"]]
    assert "/accounts/password/reset/key/" not in mail.outbox[0].body
    user.refresh_from_db()
    assert user.check_password(PASSWORD)


def test_a_tampered_reset_link_is_a_bad_token_page():
    user = UserFactory(email="ada@example.org")
    Client().post("/accounts/password/reset/", {"email": user.email})
    key_path = link_in_last_mail(user.email, "/accounts/password/reset/key/")
    tampered = key_path[:-3] + ("x" if key_path[-3] != "x" else "y") + key_path[-2:]
    client = Client()

    response = client.get(tampered, follow=True)

    assert response.status_code == 200
    assert "Bad Token" in response.content.decode()
    user.refresh_from_db()
    assert user.check_password(PASSWORD)


def test_password_change_needs_the_current_password_and_keeps_this_session():
    user = UserFactory(email="ada@example.org")
    client = Client()
    log_in(client, user.email, PASSWORD)

    response = client.post(
        "/accounts/password/change/",
        {"oldpassword": "wrong", "password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
    )
    assert response.status_code == 200
    assert "Please type your current password." in response.content.decode()
    user.refresh_from_db()
    assert user.check_password(PASSWORD)

    response = client.post(
        "/accounts/password/change/",
        {"oldpassword": PASSWORD, "password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
    )
    assert response.status_code == 302
    user.refresh_from_db()
    assert user.check_password(NEW_PASSWORD)
    assert signed_in_user_id(client) == str(user.pk)
    assert client.get("/accounts/").status_code == 200
    # The owner is told by mail (ACCOUNT_EMAIL_NOTIFICATIONS).
    assert mail.outbox[-1].to == ["ada@example.org"]
    assert mail.outbox[-1].subject == "[topicsite] Password Changed"
