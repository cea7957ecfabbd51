"""Hostile content is inert everywhere.

Titles, abstracts, author and affiliation names, topic names and saved-search queries hold
``<script>``, an attribute break with an ``onerror`` handler, a ``javascript:`` URL, control
characters and a right-to-left override; search queries and questions hold the same plus NUL
and a megabyte of text. Every surface that shows them (topic page, paper page, index, feed,
follows page, ask page and its API answer, Atom feeds, the digest email's HTML part, API JSON,
CSV and BibTeX exports, admin changelists) answers 200 or 400, never 500, and never carries the
markup unescaped: the escaped form is there instead, so the test sees the text was shown.
"""

import datetime as dt

import feedparser
import pytest
from django.contrib import admin
from django.core import mail
from django.test import Client

from accounts.tests.factories import UserFactory
from digests.services import digest_send
from follows.feed_services import feed_visit, private_feed_token
from follows.services import follow_create, follow_search_create
from papers.tests.factories import (
    AffiliationFactory,
    AuthorFactory,
    AuthorshipFactory,
    CategoryFactory,
    PaperAffiliationFactory,
    PaperFactory,
)
from topics.tests.factories import AssignmentFactory, TopicFactory

SCRIPT = "<script>alert(1)</script>"
ATTRIBUTE_BREAK = '"><img src=x onerror=alert(1)>'
JS_URL = "javascript:alert(1)"
CONTROL = "\x07\x1b[31m\x7f"
RTL_OVERRIDE = "\u202e"
HOSTILE = f"{SCRIPT} {ATTRIBUTE_BREAK} {JS_URL} {CONTROL}{RTL_OVERRIDE}gnp.exe"
# What must never reach a page unescaped.
RAW_MARKUP = ("<script>alert(1)", "<img src=x", "onerror=alert(1)>", 'href="javascript:')
HUGE = "agents " * (1_000_000 // 7)
SLUG = "hostile-topic"
DAY = dt.date(2026, 11, 30)


def assert_inert(response, *, statuses=(200,)):
    """``response`` answered one of ``statuses`` and holds none of the raw markup."""
    assert response.status_code in statuses, (response.status_code, response.request)
    body = response.content.decode()
    for raw in RAW_MARKUP:
        assert raw not in body, f"{raw!r} unescaped in {response.request['PATH_INFO']}"
    return body


def strings(value) -> list[str]:
    """Every string inside a decoded JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return [text for item in value for text in strings(item)]
    return []


def assert_escaped_shown(body: str):
    """The hostile text was shown, escaped (so the page did render it)."""
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body


@pytest.fixture
def hostile(db):
    """A topic, a paper, its author and affiliation, all named with ``HOSTILE``; a reader
    following the topic (daily digests) and a saved search with a hostile query."""
    category = CategoryFactory(code="cs.CL")
    topic = TopicFactory(name=f"Topic {HOSTILE}", slug=SLUG)
    # Followed before the paper arrives, so the paper is new to the reader's digest.
    reader = UserFactory()
    follow_create(user=reader, topic=topic, digest_frequency="daily")
    paper = PaperFactory(
        title=f"Title {HOSTILE}",
        abstract=f"Abstract {HOSTILE} agents",
        primary_category=category,
        author_count=1,
        journal_ref=f'=HYPERLINK("{JS_URL}") {HOSTILE}',
    )
    AuthorshipFactory(paper=paper, author=AuthorFactory(name=f"Author {HOSTILE}"), position=0)
    PaperAffiliationFactory(
        paper=paper, affiliation=AffiliationFactory(name=f"Affiliation {HOSTILE}"), position=0
    )
    AssignmentFactory(paper=paper, topic=topic)
    search = follow_search_create(user=reader, query=f'agents "{SCRIPT}"', digest_frequency="off")
    client = Client()
    client.force_login(reader)
    return {"topic": topic, "paper": paper, "reader": reader, "search": search, "client": client}


def test_topic_page_index_and_paper_page(hostile, client):
    body = assert_inert(client.get(f"/topics/{SLUG}/"))
    assert_escaped_shown(body)
    assert "Author &lt;script&gt;" in body and "Affiliation &lt;script&gt;" in body

    assert_escaped_shown(assert_inert(client.get("/topics/")))
    assert_escaped_shown(assert_inert(client.get("/topics/", {"q": SCRIPT})))
    assert_escaped_shown(assert_inert(client.get(hostile["paper"].get_absolute_url())))


def test_feed_follows_and_account_pages(hostile):
    client = hostile["client"]
    assert_escaped_shown(assert_inert(client.get("/feed/")))
    body = assert_inert(client.get("/follows/"))
    assert_escaped_shown(body)


def test_ask_page_and_api_answer(hostile, client):
    body = assert_inert(client.get(f"/topics/{SLUG}/ask/", {"q": f"agents {HOSTILE}"}))
    assert_escaped_shown(body)
    fragment = assert_inert(
        client.get(f"/topics/{SLUG}/ask/", {"q": f"agents {SCRIPT}", "fragment": "1"})
    )
    assert "<script" not in fragment

    response = client.post(
        f"/api/v1/topics/{SLUG}/ask/",
        {"question": f"agents {HOSTILE}"},
        content_type="application/json",
    )
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    assert response["X-Content-Type-Options"] == "nosniff"
    # The hostile text comes back as JSON strings, exactly as stored.
    assert f"Title {HOSTILE}" in strings(response.json())


def test_search_author_library_citations_and_report(hostile, client):
    """The reader pages of the search, author, library and citation features, with the
    hostile paper, author and a hostile note and report."""
    paper, reader_client = hostile["paper"], hostile["client"]
    body = assert_inert(client.get("/search/", {"q": "agents"}))
    assert_escaped_shown(body)
    author = paper.authorships.get().author
    body = assert_inert(client.get(author.get_absolute_url()))
    assert_escaped_shown(body)

    save = f"/library/papers/{paper.pk}/save/"
    assert reader_client.post(save, {"action": "save", "next": JS_URL}).status_code == 302
    note = reader_client.post(f"/library/papers/{paper.pk}/note/", {"note": HOSTILE})
    assert note.status_code == 302 and not note["Location"].startswith("javascript")
    assert_escaped_shown(assert_inert(reader_client.get("/library/")))
    for export in ("export.bib", "export.ris", "export.csv"):
        response = reader_client.get(f"/library/{export}")
        assert response.status_code == 200, export
        text = b"".join(response.streaming_content) if response.streaming else response.content
        assert "<script>alert(1)</script>" in text.decode(), export  # data, as stored

    ris = client.get(f"/papers/{paper.arxiv_id}/cite.ris").content.decode()
    # One record: a control character or line break in a field never starts another tag.
    assert ris.count("ER  -") == 1 and ris.count("TY  -") == 1
    assert "\x1b" not in ris and "\u202e" not in ris
    bib = client.get(f"/papers/{paper.arxiv_id}/cite.bib").content.decode()
    assert bib.count("@") == 1

    assignment = paper.assignments.get()
    report = reader_client.post(f"/topics/assignments/{assignment.pk}/report/", {"note": HOSTILE})
    assert report.status_code == 302
    curator = UserFactory(is_staff=True, is_superuser=True)
    client.force_login(curator)
    assert_inert(client.get("/admin/topics/assignment/"))


def test_atom_feeds_parse_and_hold_the_text_as_text(hostile, client):
    token = private_feed_token(state=feed_visit(user=hostile["reader"]))
    for url in (f"/topics/{SLUG}/feed/", f"/feed/atom/{token}/"):
        response = client.get(url)
        body = assert_inert(response)
        assert "<script>" not in body
        parsed = feedparser.parse(response.content)
        assert not parsed.bozo, parsed.bozo_exception
        titles = [entry.title for entry in parsed.entries]
        # XML cannot hold most control characters: the feed leaves them out, the rest is text.
        assert any(title.startswith(f"Title {SCRIPT} {ATTRIBUTE_BREAK}") for title in titles)


def test_digest_email_html_part(hostile):
    digest_send(user=hostile["reader"], period="daily", period_end=DAY)

    (message,) = mail.outbox
    html = next(body for body, kind in message.alternatives if kind == "text/html")
    for raw in RAW_MARKUP:
        assert raw not in html
    assert_escaped_shown(html)


def test_api_json_and_exports(hostile, client):
    paper = hostile["paper"]
    response = client.get(f"/api/v1/papers/{paper.arxiv_id}/")
    assert response.status_code == 200
    assert response.json()["title"] == f"Title {HOSTILE}"
    assert response["X-Content-Type-Options"] == "nosniff"

    csv_text = b"".join(client.get(f"/api/v1/topics/{SLUG}/papers.csv").streaming_content)
    # A journal reference that starts like a spreadsheet formula is defused with a quote.
    assert "'=HYPERLINK(" in csv_text.decode()
    bibtex = b"".join(client.get(f"/api/v1/topics/{SLUG}/papers.bib").streaming_content)
    bibtex = bibtex.decode()
    assert f"Title {SCRIPT}" in bibtex
    # Braces without a partner become \textbraceleft{} / \textbraceright{}: no value can
    # close its field and start another (BibTeX counts escaped braces too).
    hostile_paper = PaperFactory(title="x}, note = {pwned", primary_category=paper.primary_category)
    AssignmentFactory(paper=hostile_paper, topic=hostile["topic"])
    bibtex = b"".join(client.get(f"/api/v1/topics/{SLUG}/papers.bib").streaming_content)
    assert r"title = {{x\textbraceright{}, note = \textbraceleft{}pwned}}," in bibtex.decode()


def test_admin_changelists(hostile, client):
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    shown = 0
    for model in admin.site._registry:
        url = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        body = assert_inert(client.get(url))
        shown += "&lt;script&gt;alert(1)&lt;/script&gt;" in body
        assert_inert(client.get(url, {"q": HOSTILE}))
    # papers, authors, affiliations, topics, assignments, follows, search matches at least
    assert shown >= 6


@pytest.mark.parametrize(
    "query",
    [SCRIPT, ATTRIBUTE_BREAK, JS_URL, CONTROL, RTL_OVERRIDE, "\x00", "agents\x00", HUGE],
    ids=["script", "attribute", "js-url", "control", "rtl", "nul", "nul-inside", "huge"],
)
def test_hostile_queries_answer_200_or_400_never_500(hostile, client, query):
    reader_client = hostile["client"]
    for url in ("/topics/", "/search/", f"/topics/{SLUG}/ask/", "/admin/papers/paper/"):
        assert_inert(client.get(url, {"q": query}), statuses=(200, 302, 400))
    # A saved search with the hostile query: created or refused with a form error.
    assert_inert(reader_client.post("/follows/searches/", {"query": query}), statuses=(302, 400))
    assert_inert(reader_client.get("/follows/"))

    # The API answers JSON (the text inside is data, not markup), 200 or a 400 naming the field.
    for response in (
        client.get("/api/v1/search/", {"q": query}),
        client.get("/api/v1/papers/", {"search": query}),
        client.get("/api/v1/topics/", {"search": query}),
        client.post(
            f"/api/v1/topics/{SLUG}/ask/", {"question": query}, content_type="application/json"
        ),
        reader_client.post(
            "/api/v1/me/follows/", {"query": query}, content_type="application/json"
        ),
    ):
        assert response.status_code in (200, 201, 400), (response.request, response.content)
        assert response["Content-Type"].startswith("application/json")
        assert response["X-Content-Type-Options"] == "nosniff"
        response.json()


def test_a_megabyte_of_stored_text_renders(hostile, client):
    paper = PaperFactory(
        title=f"Huge {SCRIPT}",
        abstract=HUGE + SCRIPT,
        primary_category=hostile["paper"].primary_category,
    )
    AssignmentFactory(paper=paper, topic=hostile["topic"])

    assert_escaped_shown(assert_inert(client.get(paper.get_absolute_url())))
    assert_inert(client.get(f"/topics/{SLUG}/"))
    response = client.get(f"/api/v1/papers/{paper.arxiv_id}/")
    assert response.status_code == 200
    assert response.json()["abstract"] == HUGE + SCRIPT
