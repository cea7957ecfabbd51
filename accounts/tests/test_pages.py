"""Every account page renders inside the site's layout, with labelled fields; the header nav."""

import re

import pytest
from allauth.account.models import EmailAddress
from django.test import Client
from django.urls import reverse

from accounts.tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db

SITE_HEADER = '<header class="site-header">'


def assert_in_site_layout(response, title):
    assert response.status_code == 200, response
    page = response.content.decode()
    assert page.count(SITE_HEADER) == 1
    assert 'href="/static/css/site.css"' in page
    assert re.search(rf"<title>\s*{re.escape(title)}\s*· topicsite</title>", page), page[:400]
    assert "Menu:" not in page  # allauth's own bare layout is not used
    return page


def assert_fields_labelled(page):
    inputs = re.findall(r'<input[^>]*type="(?:email|password|text)"[^>]*id="([^"]+)"', page)
    assert inputs
    for input_id in inputs:
        assert f'<label for="{input_id}"' in page, input_id


@pytest.mark.parametrize(
    ("path", "title"),
    [
        ("/accounts/login/", "Sign In"),
        ("/accounts/signup/", "Signup"),
        ("/accounts/password/reset/", "Password Reset"),
        ("/accounts/password/reset/done/", "Password Reset"),
        ("/accounts/confirm-email/", "Verify Your Email Address"),
    ],
)
def test_anonymous_account_pages_render_in_the_site_layout(path, title):
    page = assert_in_site_layout(Client().get(path), title)
    if "done" not in path and "confirm" not in path:
        assert 'class="account-form"' in page
        assert_fields_labelled(page)


@pytest.mark.parametrize(
    ("path", "title"),
    [
        ("/accounts/", "Your account"),
        ("/accounts/email/", "Email Addresses"),
        ("/accounts/password/change/", "Change Password"),
        ("/accounts/logout/", "Sign Out"),
        ("/accounts/delete/", "Delete account"),
    ],
)
def test_signed_in_account_pages_render_in_the_site_layout(path, title):
    client = Client()
    client.force_login(UserFactory())
    page = assert_in_site_layout(client.get(path), title)
    if path != "/accounts/":
        assert 'class="account-form"' in page
    if path in ("/accounts/email/", "/accounts/password/change/", "/accounts/delete/"):
        assert_fields_labelled(page)


def test_confirm_email_and_reset_key_pages_render_in_the_site_layout():
    UserFactory(email="ada@example.org", email_address__verified=False)
    address = EmailAddress.objects.get(email="ada@example.org")
    client = Client()

    page = assert_in_site_layout(
        client.get("/accounts/confirm-email/no-such-key/"), "Confirm Email Address"
    )
    assert "This email confirmation link expired or is invalid." in page
    page = assert_in_site_layout(
        client.get("/accounts/password/reset/key/1-no-such-key/"), "Change Password"
    )
    assert "Bad Token" in page
    assert address.verified is False


def test_form_errors_are_shown_next_to_the_form():
    response = Client().post("/accounts/signup/", {"email": "not an email", "password1": "x"})

    page = assert_in_site_layout(response, "Signup")
    assert 'class="errorlist"' in page
    assert "Enter a valid email address." in page
    assert "This field is required." in page


def test_header_nav_for_anonymous_and_signed_in_readers():
    client = Client()
    header = client.get("/accounts/login/").content.decode().split("</header>")[0]
    assert ">Log in</a>" in header and 'href="/accounts/signup/">Sign up</a>' in header
    assert "Log out" not in header and ">Account</a>" not in header

    UserFactory(email="ada@example.org")
    client.post("/accounts/login/", {"login": "ada@example.org", "password": PASSWORD})
    header = client.get("/accounts/").content.decode().split("</header>")[0]
    assert f'href="{reverse("feed:index")}">Feed</a>' in header
    assert f'href="{reverse("follows:list")}">Follows</a>' in header
    assert 'href="/accounts/" aria-current="page">Account</a>' in header
    assert "ada@example.org" in header
    assert '<button type="submit" class="link-button">Log out</button>' in header
    assert ">Log in</a>" not in header and "Sign up" not in header


def test_overview_lists_addresses_and_links_and_its_queries_do_not_grow(
    django_assert_max_num_queries,
):
    user = UserFactory(email="ada@example.org")
    client = Client()
    client.force_login(user)
    with django_assert_max_num_queries(4):
        client.get("/accounts/")
    for n in range(4):
        EmailAddress.objects.create(user=user, email=f"ada{n}@example.org", verified=n % 2 == 0)

    with django_assert_max_num_queries(4):
        page = client.get("/accounts/").content.decode()

    emails = re.findall(r"ada\d?@example\.org", page.split("</header>")[1])
    assert emails[0] == "ada@example.org"  # primary first
    assert len(set(emails)) == 5
    assert page.count(">Unverified<") == 2
    assert 'href="/accounts/email/"' in page
    assert 'href="/accounts/password/change/"' in page
    assert 'href="/accounts/delete/"' in page
    assert f'href="{reverse("follows:list")}">Your follows</a>' in page
    assert f'href="{reverse("api:tokens")}">API tokens</a>' in page


def test_account_pages_escape_what_users_typed():
    user = UserFactory(email="ada@example.org")
    EmailAddress.objects.create(user=user, email="<b>x</b>@example.org")
    client = Client()
    client.force_login(user)

    page = client.get("/accounts/").content.decode()

    assert "<b>x</b>@example.org" not in page
    assert "&lt;b&gt;x&lt;/b&gt;@example.org" in page
