"""CSRF on every form, and the throttles.

- every ``<form method="post">`` in our templates holds ``{% csrf_token %}``, and every POST
  form on the rendered pages carries ``csrfmiddlewaretoken``;
- with CSRF checks enforced, a POST without the token gets 403 from each state-changing view
  and changes nothing; with the token from the page it goes through;
- the one POST without CSRF by design is the one-click unsubscribe (RFC 8058: mail clients
  POST it without a page), which the signed token in its URL authorises
  (``digests/tests/test_views_unsubscribe.py``).

Throttles tested elsewhere: log-in failures per address and per email
(``accounts/tests/test_rate_limit.py``), API reads per address and per token, writes per user,
behind proxies (``api/tests/test_throttling.py``), asking per user and per address, page
and API (``ask/tests/test_views.py``, ``api/tests/test_ask.py``). Added here: password-reset
requests per email address.
"""

import re
from html.parser import HTMLParser
from io import StringIO

import pytest
from allauth.account.models import EmailAddress
from django.conf import settings
from django.core import mail
from django.core.management import call_command
from django.test import Client

from accounts.tests.factories import PASSWORD, UserFactory
from api.models import ApiToken
from api.services import token_create
from follows.feed_services import feed_visit
from follows.models import FeedState, Follow
from follows.services import follow_create
from topics.models import Topic

from .conftest import BASE_DIR

SLUG = "llm-agent-training"


@pytest.fixture
def reference_topic(db):
    for command in ("load_categories", "import_reference_page"):
        call_command(command, stdout=StringIO())
    return Topic.objects.get(slug=SLUG)


# --- every POST form carries the token ---------------------------------------------------------


# The unsubscribe confirmation posts to a csrf_exempt view that the signed token in its own URL
# authorises (the one-click POST of RFC 8058 comes with no page, so no CSRF token either).
CSRF_EXEMPT_FORMS = {"templates/digests/unsubscribe_confirm.html"}


def test_every_post_form_in_our_templates_holds_the_csrf_token():
    missing = []
    for template in sorted((BASE_DIR / "templates").rglob("*.html")):
        if str(template.relative_to(BASE_DIR)) in CSRF_EXEMPT_FORMS:
            continue
        text = template.read_text("utf-8")
        for form in re.findall(r"<form\b[^>]*>.*?</form>", text, flags=re.S | re.I):
            opening = form[: form.index(">") + 1]
            if re.search(r'method=["\']?post', opening, flags=re.I):
                if "{% csrf_token %}" not in form:
                    missing.append(f"{template.relative_to(BASE_DIR)}: {opening}")
    assert missing == []


class PostForms(HTMLParser):
    """The POST forms of a page: their action and whether a csrfmiddlewaretoken is inside."""

    def __init__(self):
        super().__init__()
        self.forms: list[dict] = []
        self._current: dict | None = None

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "form":
            self._current = {"action": attributes.get("action"), "token": False}
            if (attributes.get("method") or "get").lower() == "post":
                self.forms.append(self._current)
        elif tag == "input" and self._current is not None:
            if attributes.get("name") == "csrfmiddlewaretoken" and attributes.get("value"):
                self._current["token"] = True

    def handle_endtag(self, tag):
        if tag == "form":
            self._current = None


def post_forms(html: str) -> list[dict]:
    parser = PostForms()
    parser.feed(html)
    return parser.forms


def test_every_post_form_on_the_rendered_pages_carries_the_token(reference_topic):
    user = UserFactory()
    token_create(user=user, name="laptop")
    follow_create(user=user, topic=reference_topic)
    client = Client()
    client.force_login(user)
    pages = [
        f"/topics/{SLUG}/",
        "/follows/",
        "/feed/",
        "/accounts/",
        "/accounts/delete/",
        "/accounts/email/",
        "/accounts/password/change/",
        "/api/v1/tokens/",
    ]
    seen = 0
    for path in pages:
        forms = post_forms(client.get(path).content.decode())
        assert forms, f"{path} shows no POST form"
        assert [form for form in forms if not form["token"]] == [], path
        seen += len(forms)
    anonymous = Client()
    for path in ("/accounts/login/", "/accounts/signup/", "/accounts/password/reset/"):
        forms = post_forms(anonymous.get(path).content.decode())
        assert forms and all(form["token"] for form in forms), path
    assert seen >= 12


# --- without the token: 403 and nothing changed -------------------------------------------------


@pytest.fixture
def signed_in(reference_topic):
    """A reader with a follow, an API token and a private feed, and a client enforcing CSRF."""
    user = UserFactory()
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return {
        "user": user,
        "client": client,
        "follow": follow_create(user=user, topic=Topic.objects.exclude(pk=reference_topic.pk)[0]),
        "token": token_create(user=user, name="laptop").token,
        "feed_key": feed_visit(user=user).private_feed_key,
    }


def state(world) -> tuple:
    user = world["user"]
    follows = sorted(Follow.objects.filter(user=user).values_list("pk", "digest_frequency"))
    return (
        follows,
        sorted(ApiToken.objects.filter(user=user).values_list("pk", "revoked_at")),
        FeedState.objects.get(user=user).private_feed_key,
        type(user).objects.filter(pk=user.pk).exists(),
        sorted(EmailAddress.objects.filter(user=user).values_list("email", flat=True)),
        type(user).objects.get(pk=user.pk).password,
    )


STATE_CHANGING = [
    ("follow toggle", lambda w: f"/follows/topics/{SLUG}/", lambda w: {"action": "follow"}),
    ("saved search", lambda w: "/follows/searches/", lambda w: {"query": "agents"}),
    (
        "digest frequency",
        lambda w: f"/follows/{w['follow'].pk}/frequency/",
        lambda w: {"digest_frequency": "off"},
    ),
    ("unfollow", lambda w: f"/follows/{w['follow'].pk}/delete/", lambda w: {}),
    ("import", lambda w: "/follows/import/", lambda w: {"file": StringIO('{"follows": []}')}),
    ("feed regenerate", lambda w: "/feed/atom/regenerate/", lambda w: {}),
    ("token create", lambda w: "/api/v1/tokens/", lambda w: {"name": "phone"}),
    ("token revoke", lambda w: f"/api/v1/tokens/{w['token'].pk}/revoke/", lambda w: {}),
    ("account delete", lambda w: "/accounts/delete/", lambda w: {"password": PASSWORD}),
    ("log out", lambda w: "/accounts/logout/", lambda w: {}),
    (
        "add email",
        lambda w: "/accounts/email/",
        lambda w: {"action_add": "", "email": "second@example.org"},
    ),
    (
        "change password",
        lambda w: "/accounts/password/change/",
        lambda w: {
            "oldpassword": PASSWORD,
            "password1": "n3w-Passw0rd!",
            "password2": "n3w-Passw0rd!",
        },
    ),
]


@pytest.mark.parametrize(
    ("url", "data"), [case[1:] for case in STATE_CHANGING], ids=[c[0] for c in STATE_CHANGING]
)
def test_a_post_without_the_token_is_refused_and_changes_nothing(signed_in, url, data):
    before = state(signed_in)

    response = signed_in["client"].post(url(signed_in), data(signed_in))

    assert response.status_code == 403
    assert state(signed_in) == before
    # Still signed in: the log-out was refused too.
    assert signed_in["client"].get("/accounts/").status_code == 200


def test_api_writes_with_the_session_need_the_token(signed_in):
    client = signed_in["client"]
    before = state(signed_in)

    follow = client.post("/api/v1/me/follows/", {"topic": SLUG}, content_type="application/json")
    unfollow = client.delete(f"/api/v1/me/follows/{signed_in['follow'].pk}/")
    ask = client.post(
        f"/api/v1/topics/{SLUG}/ask/", {"question": "agents"}, content_type="application/json"
    )

    assert (follow.status_code, unfollow.status_code, ask.status_code) == (403, 403, 403)
    assert state(signed_in) == before


def test_admin_posts_need_the_token(reference_topic):
    client = Client(enforce_csrf_checks=True)
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    topic = reference_topic
    response = client.post(
        f"/admin/topics/topic/{topic.pk}/change/", {"name": "Renamed", "slug": topic.slug}
    )

    assert response.status_code == 403
    topic.refresh_from_db()
    assert topic.name == "LLM Agent Training"


def test_with_the_token_from_the_page_the_post_goes_through(signed_in):
    client = signed_in["client"]
    page = client.get(f"/topics/{SLUG}/").content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)

    response = client.post(
        f"/follows/topics/{SLUG}/", {"action": "follow", "csrfmiddlewaretoken": token}
    )

    assert response.status_code == 302
    assert Follow.objects.filter(user=signed_in["user"], topic__slug=SLUG).exists()


# --- throttles not tested elsewhere -------------------------------------------------------------


def test_password_reset_requests_are_limited_per_email_address(db):
    user = UserFactory()
    per_key = int(re.search(r"(\d+)/m/key", settings.ACCOUNT_RATE_LIMITS["reset_password"])[1])
    statuses = []
    for _ in range(per_key + 1):
        # A fresh client each time: the limit follows the address asked for, not the session.
        response = Client().post("/accounts/password/reset/", {"email": user.email})
        statuses.append(response.status_code)

    assert statuses[:per_key] == [302] * per_key
    assert statuses[-1] == 429
    assert len(mail.outbox) == per_key
