"""Deployment checks and the security headers.

- ``manage.py check --deploy`` under the production settings has nothing to say, and it does
  complain when a setting is weakened (so the test can fail);
- production answers with HSTS, nosniff, Referrer-Policy, X-Frame-Options, COOP and the
  Content-Security-Policy, sets its cookies Secure/HttpOnly and redirects plain HTTP to HTTPS;
- the policy forbids inline script and style on the site's own pages, and no page of ours
  needs them (no inline ``<script>``, no ``on*=`` handler, no ``style=`` attribute rendered);
- in a real browser the pages and the Swagger UI / Redoc docs pages work under the policy, with
  no violation reported.

Production refusing to start without ``DJANGO_SECRET_KEY`` is tested in
``test_settings.py::test_production_without_a_secret_key_refuses_to_start``.
"""

import json
import re
import secrets
from html.parser import HTMLParser
from io import StringIO

import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.core.management import call_command
from django.db import connection
from django.test import Client

from accounts.tests.factories import PASSWORD, UserFactory
from papers.models import Paper
from topics.models import Topic

from .conftest import BASE_DIR

SLUG = "llm-agent-training"

SITE_POLICY = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    "img-src": "'self' data:",
    "font-src": "'self'",
    "connect-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'self'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}


def parse_policy(header: str) -> dict[str, str]:
    """``"default-src 'self'; img-src 'self' data:"`` → ``{"default-src": "'self'", ...}``."""
    directives = {}
    for part in header.split(";"):
        name, _, value = part.strip().partition(" ")
        if name:
            directives[name] = value.strip()
    return directives


def production_env(**overrides: str) -> dict[str, str]:
    env = {
        "DJANGO_SETTINGS_MODULE": "topicsite.settings.production",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/topicsite",
        "DJANGO_ALLOWED_HOSTS": "topics.example.org",
    }
    env.update(overrides)
    return env


# --- manage.py check --deploy ---------------------------------------------------------------


def test_check_deploy_with_production_settings_finds_nothing(run_manage):
    result = run_manage("check", "--deploy", "--fail-level", "WARNING", env=production_env())

    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout


@pytest.mark.parametrize(
    ("name", "value", "warning"),
    [
        ("DJANGO_SECRET_KEY", "short", "security.W009"),
        ("DJANGO_SECURE_HSTS_SECONDS", "0", "security.W004"),
        ("DJANGO_SECURE_SSL_REDIRECT", "false", "security.W008"),
        ("DJANGO_DEBUG", "true", "security.W018"),
    ],
)
def test_check_deploy_complains_when_production_is_weakened(run_manage, name, value, warning):
    result = run_manage(
        "check", "--deploy", "--fail-level", "WARNING", env=production_env(**{name: value})
    )

    assert result.returncode != 0
    assert warning in result.stderr


# --- the headers production sends -----------------------------------------------------------

# Runs requests through Django's test client inside a production-settings process and prints,
# as one JSON line, what came back.
SHOW_RESPONSES = """
import json
from django.test import Client
client = Client(HTTP_HOST="topics.example.org")
shown = {}
plain = client.get("/accounts/login/")
shown["plain"] = {"status": plain.status_code, "location": plain.get("Location", "")}
secure = client.get("/accounts/login/", secure=True)
shown["secure"] = {
    "status": secure.status_code,
    "headers": dict(secure.headers),
    "cookies": {
        name: {"secure": bool(m["secure"]), "httponly": bool(m["httponly"]),
               "samesite": m["samesite"]}
        for name, m in secure.cookies.items()
    },
}
client.cookies.load({"csrftoken": secure.cookies["csrftoken"].value})
session = client.post(
    "/accounts/login/",
    {"login": "reader@example.org", "password": "%(password)s",
     "csrfmiddlewaretoken": secure.cookies["csrftoken"].value},
    secure=True,
)
shown["login"] = {"status": session.status_code, "location": session.get("Location", "")}
shown["session_cookie"] = {
    name: {"secure": bool(m["secure"]), "httponly": bool(m["httponly"])}
    for name, m in session.cookies.items()
}
print(json.dumps(shown))
"""


@pytest.mark.django_db(transaction=True)
def test_production_sends_the_security_headers_and_secure_cookies(run_manage):
    # The child process uses the database pytest made, where this reader is committed.
    # Hashed with production's hasher (the test settings hash with MD5, which it refuses).
    reader = UserFactory(username="reader")
    hasher = PBKDF2PasswordHasher()
    type(reader).objects.filter(pk=reader.pk).update(
        password=hasher.encode(PASSWORD, hasher.salt())
    )
    database = connection.settings_dict["NAME"]
    result = run_manage(
        "shell",
        "-v",
        "0",
        "-c",
        SHOW_RESPONSES % {"password": PASSWORD},
        env=production_env(DATABASE_URL=f"postgres://postgres@127.0.0.1:5432/{database}"),
    )
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout.strip().splitlines()[-1])

    assert shown["plain"]["status"] == 301
    assert shown["plain"]["location"] == "https://topics.example.org/accounts/login/"

    assert shown["secure"]["status"] == 200
    headers = {name.lower(): value for name, value in shown["secure"]["headers"].items()}
    assert headers["strict-transport-security"] == "max-age=31536000; includeSubDomains; preload"
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "same-origin"
    assert headers["x-frame-options"] == "DENY"
    assert headers["cross-origin-opener-policy"] == "same-origin"
    assert parse_policy(headers["content-security-policy"]) == SITE_POLICY

    csrf = shown["secure"]["cookies"]["csrftoken"]
    assert csrf["secure"] is True
    assert csrf["samesite"] == "Lax"
    assert shown["login"]["status"] == 302, shown["login"]
    session = shown["session_cookie"]["sessionid"]
    assert session == {"secure": True, "httponly": True}


# --- the policy on every kind of page, and pages that need nothing inline -------------------


@pytest.fixture
def reference_topic(db):
    for command in ("load_categories", "import_reference_page"):
        call_command(command, stdout=StringIO())


class InlineFinder(HTMLParser):
    """Collects what a strict policy would block: inline scripts (not JSON data blocks), event
    handler attributes, ``style`` attributes and ``<style>`` elements, ``javascript:`` links."""

    def __init__(self):
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "script" and "src" not in attributes:
            if attributes.get("type") not in ("application/json", "application/ld+json"):
                self.found.append(f"inline <script> {attrs}")
        if tag == "style":
            self.found.append("<style> element")
        for name, value in attrs:
            if name.startswith("on"):
                self.found.append(f"<{tag} {name}=...>")
            if name == "style":
                self.found.append(f"<{tag} style={value!r}>")
            if name in ("href", "src", "action") and (value or "").strip().lower().startswith(
                "javascript:"
            ):
                self.found.append(f"<{tag} {name}={value!r}>")


def inline_content(html: str) -> list[str]:
    finder = InlineFinder()
    finder.feed(html)
    return finder.found


@pytest.mark.django_db
def test_our_pages_carry_the_policy_and_need_nothing_inline(client, reference_topic):
    user = UserFactory()
    client.force_login(user)
    client.post(f"/follows/topics/{SLUG}/", {"action": "follow"})
    paper_url = client.get(f"/topics/{SLUG}/").content.decode()
    paper_path = re.search(r'href="(/papers/local/\d+/)"', paper_url).group(1)
    pages = [
        "/topics/",
        f"/topics/{SLUG}/",
        f"/topics/{SLUG}/ask/?q=how+are+agents+trained",
        paper_path,
        "/follows/",
        "/feed/",
        "/accounts/",
        "/accounts/delete/",
        "/accounts/email/",
        "/accounts/password/change/",
        "/api/v1/tokens/",
    ]
    for path in pages:
        response = client.get(path)
        assert response.status_code == 200, path
        assert parse_policy(response["Content-Security-Policy"]) == SITE_POLICY, path
        assert inline_content(response.content.decode()) == [], path
    client.logout()
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    paper = Paper.objects.order_by("pk").first()
    topic = Topic.objects.get(slug=SLUG)
    for path in (
        "/admin/",
        "/admin/papers/paper/",
        f"/admin/papers/paper/{paper.pk}/change/",
        "/admin/topics/topic/",
        f"/admin/topics/topic/{topic.pk}/change/",
        f"/admin/topics/topic/{topic.pk}/history/",
        "/admin/topics/assignment/",
        "/admin/auth/user/add/",
    ):
        response = client.get(path)
        assert response.status_code == 200, path
        found = inline_content(response.content.decode())
        # django-simple-history's history page zeroes a paginator border inline; blocked, it
        # only draws a line.
        assert [item for item in found if item != "<p style='border-top: 0'>"] == [], path
    client.logout()
    for path in ("/accounts/login/", "/accounts/signup/", "/accounts/password/reset/"):
        response = client.get(path)
        assert response.status_code == 200, path
        assert inline_content(response.content.decode()) == [], path


def test_no_template_of_ours_holds_inline_script_or_style():
    """The digest emails keep their inline styles (mail clients drop stylesheets); they are
    mailed, never served as a page of the site. The API docs pages (drf_spectacular/) have
    their own, looser policy."""
    offenders = []
    for template in sorted((BASE_DIR / "templates").rglob("*.html")):
        relative = template.relative_to(BASE_DIR / "templates")
        if relative.parts[:2] == ("digests", "email") or relative.parts[0] == "drf_spectacular":
            continue
        # Template tags hold no markup that matters here; blank them out so the parser sees
        # only the HTML.
        text = re.sub(r"{%.*?%}|{{.*?}}|{#.*?#}", "x", template.read_text("utf-8"), flags=re.S)
        offenders += [f"{relative}: {found}" for found in inline_content(text)]
    assert offenders == []


def test_api_docs_pages_loosen_only_styles_and_the_redoc_worker(client, db):
    swagger = client.get("/api/v1/docs/")
    assert swagger.status_code == 200
    policy = parse_policy(swagger["Content-Security-Policy"])
    assert policy["script-src"] == "'self'"
    assert policy["style-src"] == "'self' 'unsafe-inline'"
    # Swagger UI's set-up script is a file, not inline.
    scripts = re.findall(r"<script([^>]*)>", swagger.content.decode())
    assert scripts and all("src=" in attributes for attributes in scripts)
    setup = client.get("/api/v1/docs/?script=")
    assert setup.status_code == 200
    assert b"SwaggerUIBundle" in setup.content

    redoc = client.get("/api/v1/docs/redoc/")
    assert redoc.status_code == 200
    policy = parse_policy(redoc["Content-Security-Policy"])
    assert policy["script-src"] == "'self'"
    assert policy["style-src"] == "'self' 'unsafe-inline'"
    assert policy["worker-src"] == "'self' blob:"


# --- in a real browser ------------------------------------------------------------------------

# Records every Content-Security-Policy violation the page reports.
RECORD_VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__violations.push(event.violatedDirective + " " + event.blockedURI);
});
"""


def open_recording(browser, url):
    page = browser.new_page()
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text))
    page.add_init_script(RECORD_VIOLATIONS)
    page.goto(url)
    return page, console


def violations(page, console):
    reported = page.evaluate("() => window.__violations")
    logged = [text for text in console if "Content Security Policy" in text]
    return reported + logged


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_swagger_and_redoc_docs_work_under_the_policy(browser, live_server):
    page, console = open_recording(browser, f"{live_server.url}/api/v1/docs/")
    page.wait_for_selector(".opblock", timeout=30_000)
    assert page.locator(".opblock").count() > 10
    assert page.locator(".swagger-ui .title").first.inner_text().startswith("topicsite API")
    assert violations(page, console) == []

    page, console = open_recording(browser, f"{live_server.url}/api/v1/docs/redoc/")
    page.wait_for_selector("h1", timeout=30_000)
    page.wait_for_selector("[role=search] input, .menu-content", timeout=30_000)
    assert "topicsite API" in page.locator("h1").first.inner_text()
    # Redoc's "API docs by Redocly" footer links a logo on Redocly's CDN; the policy keeps
    # the reader's browser from fetching it, and nothing else is refused.
    refused = violations(page, console)
    assert all("https://cdn.redoc.ly/" in report for report in refused), refused


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_topic_page_follow_and_ask_work_under_the_policy(browser, live_server):
    for command in ("load_categories", "import_reference_page"):
        call_command(command, stdout=StringIO())
    signed_in = Client()
    signed_in.force_login(UserFactory())
    page, console = open_recording(browser, f"{live_server.url}/topics/")
    page.context.add_cookies(
        [
            {
                "name": "sessionid",
                "value": signed_in.cookies["sessionid"].value,
                "url": live_server.url,
            }
        ]
    )
    page.goto(f"{live_server.url}/topics/{SLUG}/")
    page.click("form.follow-form button[type=submit]")
    page.wait_for_selector("form.follow-form button[aria-pressed=true]")
    page.fill("form[data-ask-target] [name=q]", "how are agents trained")
    page.click("form[data-ask-target] button[type=submit]")
    page.wait_for_function("() => document.querySelector('.ask-result').textContent.trim()")
    # Both scripts ran (they mark their forms) and the answer came without leaving the page.
    assert page.get_attribute("form.follow-form", "data-follow-enhanced") == "1"
    assert page.get_attribute("form[data-ask-target]", "data-ask-ready") == "1"
    assert page.url == f"{live_server.url}/topics/{SLUG}/"
    assert violations(page, console) == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_admin_pages_work_under_the_policy(browser, live_server):
    for command in ("load_categories", "import_reference_page"):
        call_command(command, stdout=StringIO())
    signed_in = Client()
    signed_in.force_login(UserFactory(is_staff=True, is_superuser=True))
    topic = Topic.objects.get(slug=SLUG)
    page, console = open_recording(browser, f"{live_server.url}/admin/")
    page.context.add_cookies(
        [
            {
                "name": "sessionid",
                "value": signed_in.cookies["sessionid"].value,
                "url": live_server.url,
            }
        ]
    )
    for path in (
        "/admin/topics/topic/",
        f"/admin/topics/topic/{topic.pk}/change/",
        "/admin/topics/assignment/",
        "/admin/papers/paper/",
    ):
        page.goto(f"{live_server.url}{path}")
        page.wait_for_load_state("networkidle")
        assert page.locator("#content h1, #content-main").count() > 0, path
        assert violations(page, console) == [], path
    # The changelist's JavaScript ran: the "select all" box checks every row.
    page.goto(f"{live_server.url}/admin/topics/topic/")
    page.check("#action-toggle")
    assert page.locator("input.action-select:checked").count() > 0
    assert violations(page, console) == []
