"""A new reader's first visit, tried in a real browser as a new reader would (Debian's chromium
through Playwright, against the live server): sign up and verify the address from the mailed
link, follow two topics and a saved search, read the feed, receive a digest from a local SMTP
server, unsubscribe from its link, and read the private Atom feed as a feed reader does.
Every page visited is also looked at 375 px wide (no sideways scrolling), screenshots kept."""

import re
from io import StringIO
from urllib.request import urlopen

import feedparser
import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone

from follows.models import Follow
from papers.tests.factories import PaperFactory
from topics.models import Topic
from topics.tests.factories import AssignmentFactory
from topicsite.tests.browser import DESKTOP, look
from topicsite.tests.smtp import local_smtp_server

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EMAIL = "ada@example.org"
PASSWORD = "a long enough passphrase 42"
FIRST, SECOND = "llm-agent-training", "ai-agent-benchmarks"
SEARCH = "memory"


@pytest.fixture
def reference_topics(transactional_db):
    """The categories and the reference topic page (59 topics, 30 papers), as the demo loads
    them."""
    for command in ("load_categories", "import_reference_page"):
        call_command(command, stdout=StringIO())


@pytest.fixture
def mailbox(settings, live_server):
    """A local SMTP server Django sends every email to; links in emails point at the live
    server. Yields the server's handler (``.to(address)``: messages received)."""
    settings.SITE_URL = live_server.url
    with local_smtp_server(settings) as handler:
        yield handler


def text_of(message) -> str:
    """The plain-text body of ``message``."""
    body = message.get_body(preferencelist=("plain",))
    assert body is not None, f"no text part in {message['Subject']!r}"
    return body.get_content()


def new_papers_arrive(*slugs: str) -> list[str]:
    """Two papers submitted today in each topic of ``slugs``, accepted there as tagging would
    (stored after the follows began, so they are new for the feed and the digest); returns
    their titles."""
    titles = []
    for slug in slugs:
        topic = Topic.objects.get(slug=slug)
        for number in range(2):
            paper = PaperFactory(
                title=f"New paper {number + 1} for {topic.name}", submitted=timezone.localdate()
            )
            AssignmentFactory(paper=paper, topic=topic)
            titles.append(paper.title)
    return titles


def test_a_new_reader_signs_up_follows_reads_the_feed_gets_a_digest_and_unsubscribes(
    reference_topics, mailbox, browser, live_server, screenshot, settings
):
    from playwright.sync_api import expect

    page = browser.new_page(viewport=DESKTOP)
    url = live_server.url

    # The topics index, as an anonymous visitor.
    page.goto(f"{url}/topics/")
    expect(page.locator("h1")).to_have_text("Topics")
    look(page, screenshot, "01-topics-index")

    # Sign up: allauth mails a verification link and signs nobody in yet.
    page.get_by_role("link", name="Sign up").click()
    expect(page).to_have_url(f"{url}/accounts/signup/")
    look(page, screenshot, "02-signup")
    page.get_by_label("Email").fill(EMAIL)
    page.locator("input[name=password1]").fill(PASSWORD)
    page.locator("input[name=password2]").fill(PASSWORD)
    page.locator("form button[type=submit]").last.click()
    expect(page).to_have_url(f"{url}/accounts/confirm-email/")
    expect(page.locator("main")).to_contain_text("Verify Your Email Address")
    look(page, screenshot, "03-verify-your-email")
    assert not EmailAddress.objects.filter(email=EMAIL, verified=True).exists()

    [verification] = mailbox.to(EMAIL)
    link = re.search(rf"{re.escape(url)}/accounts/confirm-email/\S+", text_of(verification))
    assert link, text_of(verification)
    page.goto(link.group(0))
    expect(page.locator("main")).to_contain_text(EMAIL)
    look(page, screenshot, "04-confirm-email")
    page.locator("main form button[type=submit]").click()
    expect(page.locator(".signed-in-as")).to_have_text(EMAIL)
    assert EmailAddress.objects.get(email=EMAIL).verified
    reader = get_user_model().objects.get(email=EMAIL)
    page.get_by_role("link", name="Account").click()
    expect(page.locator("main")).to_contain_text(EMAIL)
    look(page, screenshot, "04b-account")

    # Follow two topics from their pages; the button and the count change in place.
    for slug in (FIRST, SECOND):
        topic = Topic.objects.get(slug=slug)
        if slug == FIRST:
            page.goto(f"{url}/topics/")
            page.locator(".topic-tree").get_by_role("link", name=topic.name, exact=True).click()
            page.wait_for_url(f"{url}/topics/{slug}/")  # and its load event: follow.js is set up
        else:
            page.goto(f"{url}/topics/{slug}/")
        expect(page.locator("h1")).to_have_text(topic.name)
        page.evaluate("window.loadedOnce = true")
        button = page.locator("form.follow-form button")
        expect(button).to_have_text("Follow this topic")
        button.click()
        expect(button).to_have_text("Unfollow this topic")
        expect(page.locator("form.follow-form .followers")).to_have_text("1 follower")
        assert page.evaluate("window.loadedOnce") is True, "the page reloaded"
        look(page, screenshot, f"05-followed-{slug}")
    assert set(reader.follows.values_list("topic__slug", flat=True)) == {FIRST, SECOND}

    # A saved search from the follows page.
    page.get_by_role("link", name="Follows").click()
    page.wait_for_url(f"{url}/follows/")
    page.get_by_label("Query").fill(SEARCH)
    page.get_by_role("button", name="Follow this search").click()
    searches = page.locator("section[aria-labelledby=searches-heading] .follow-list")
    expect(searches.locator(".saved-query")).to_have_text(f"“{SEARCH}”")
    look(page, screenshot, "06-follows")
    search = Follow.objects.get(user=reader, kind=Follow.Kind.SEARCH)
    assert search.query == SEARCH

    # New papers arrive in both topics; the feed shows them first, under today's date, each
    # card naming the follow that matched, then the older papers by day.
    new_titles = new_papers_arrive(FIRST, SECOND)
    page.get_by_role("link", name="Feed", exact=True).click()
    page.wait_for_url(f"{url}/feed/")
    days = page.locator("section.feed-day")
    expect(days.first.locator("h2 time")).to_have_attribute(
        "datetime", timezone.localdate().isoformat()
    )
    assert days.count() >= 3
    first_day = days.first.inner_text()
    for title in new_titles:
        assert title in first_day
    matched = page.locator(".feed-matched .matched").all_inner_texts()
    assert "Topic: LLM Agent Training" in matched
    assert "Topic: AI Agent Benchmarks" in matched
    assert f"Search: “{SEARCH}”" in matched
    look(page, screenshot, "07-feed")
    feed_url = page.locator("#private-feed-url").input_value()
    assert feed_url.startswith(f"{url}/feed/atom/")

    # The digest sweep (beat's hourly task, run now): one weekly digest with both topics' new
    # papers arrives at the SMTP server.
    settings.DIGESTS_SEND_HOUR = 0
    out = StringIO()
    call_command("send_digests", stdout=out)
    assert "Digests queued: 0 daily, 1 weekly" in out.getvalue()
    digests = [m for m in mailbox.to(EMAIL) if m is not verification]
    assert len(digests) == 1
    digest = text_of(digests[0])
    for title in new_titles:
        assert title in digest
    unsubscribe = re.search(
        rf"Stop digests for LLM Agent Training: ({re.escape(url)}/digests/unsubscribe/\S+)", digest
    )
    assert unsubscribe, digest

    # Its unsubscribe link works in the browser without logging in again: confirm, done.
    context = browser.new_context(viewport=DESKTOP)  # a mail client's browser: no session
    mail_page = context.new_page()
    mail_page.goto(unsubscribe.group(1))
    expect(mail_page.locator("h1")).to_have_text("Stop digest emails for LLM Agent Training?")
    look(mail_page, screenshot, "08-unsubscribe-confirm")
    mail_page.get_by_role("button", name="Stop these emails").click()
    expect(mail_page.locator("h1")).to_have_text("Digest emails stopped for LLM Agent Training")
    look(mail_page, screenshot, "09-unsubscribe-done")
    context.close()

    # The follows page shows that follow's digests off, the others unchanged.
    page.goto(f"{url}/follows/")
    frequencies = {
        follow.label: page.locator(f"#frequency-{follow.pk}").input_value()
        for follow in reader.follows.all()
    }
    assert frequencies == {
        "LLM Agent Training": "off",
        "AI Agent Benchmarks": "weekly",
        f"“{SEARCH}”": "weekly",
    }
    look(page, screenshot, "10-follows-after-unsubscribe")

    # The private Atom feed, read as a feed reader would: no session, valid Atom, the papers.
    with urlopen(feed_url, timeout=10) as response:
        assert response.headers["Content-Type"].startswith("application/atom+xml")
        parsed = feedparser.parse(response.read())
    assert parsed.bozo == 0, parsed.get("bozo_exception")
    titles = [entry.title for entry in parsed.entries]
    assert set(new_titles) <= set(titles)
    assert all(entry.link.startswith(url) for entry in parsed.entries)
