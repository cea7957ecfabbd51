"""The reader pages in a real browser (Debian's chromium through Playwright, against the live
server): asking a topic with and without JavaScript, the personal feed, and the topics index
with its sorts and search. Each page is looked at 1280 and 375 px wide (no sideways scrolling),
screenshots kept. The topic page itself (momentum, chart, cards) is in
``test_browser_topic_page.py``."""

import datetime as dt
import re
from io import StringIO

import pytest
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone

from follows.feed_services import feed_visit
from follows.services import follow_create, follow_search_create
from papers.models import Paper
from papers.tests.factories import AuthorFactory, AuthorshipFactory, PaperFactory
from topics.models import Topic
from topics.tests.factories import AssignmentFactory, UserFactory
from topicsite.tests.browser import DESKTOP, look

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SLUG = "llm-agent-training"
QUESTION = "Which papers train agents with GRPO?"


@pytest.fixture
def reference_topic(transactional_db) -> Topic:
    """The reference topic page imported as the demo does: "LLM Agent Training" (30 papers)
    among the 59 topics of its vocabulary."""
    for command in ("load_categories", "import_reference_page"):
        call_command(command, stdout=StringIO())
    return Topic.objects.get(slug=SLUG)


def signed_in_context(browser, live_server, client, user, **options):
    """A browser context carrying a session of ``user`` (logged in through the test client)."""
    client.force_login(user)
    context = browser.new_context(viewport=DESKTOP, **options)
    context.add_cookies(
        [
            {
                "name": settings.SESSION_COOKIE_NAME,
                "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                "url": live_server.url,
            }
        ]
    )
    return context


# --- ask ------------------------------------------------------------------------------------


def test_asking_with_javascript_shows_progress_then_the_answer_in_place(
    reference_topic, browser, live_server, screenshot
):
    from playwright.sync_api import expect

    page = browser.new_page(viewport=DESKTOP)
    # Hold the answer's request until the progress note has been seen.
    held = []
    page.route(re.compile(r"/ask/\?.*fragment=1"), lambda route: held.append(route))
    topic_url = f"{live_server.url}/topics/{SLUG}/"
    page.goto(topic_url)
    page.evaluate("window.loadedOnce = true")
    progress = page.locator("[data-ask-progress]")
    button = page.get_by_role("button", name="Ask about this topic")
    expect(progress).to_be_hidden()

    page.get_by_label("Your question").fill(QUESTION)
    button.click()
    expect(progress).to_be_visible()
    expect(progress).to_have_text("Reading this topic's papers…")
    expect(button).to_be_disabled()
    assert len(held) == 1
    held[0].continue_()

    answer = page.locator(f"#ask-result-{reference_topic.pk} .ask-answer")
    expect(answer.locator(".ask-question")).to_have_text(f"You asked: {QUESTION}")
    expect(progress).to_be_hidden()
    expect(button).to_be_enabled()
    markers = answer.locator("a.citation-marker")
    assert markers.count() >= 1
    expect(markers.first).to_have_text("[1]")
    citations = answer.locator("ol.ask-citations li a")
    # Every marker names a listed citation; every citation is cited.
    numbers = {int(text.strip("[]")) for text in markers.all_inner_texts()}
    assert numbers == set(range(1, citations.count() + 1))
    assert page.evaluate("window.loadedOnce") is True, "the page reloaded"
    assert page.url == topic_url
    look(page, screenshot, "ask-answer-in-place")

    # A citation marker leads to its entry; the entry to the paper's page.
    markers.first.click()
    expect(page.locator("#citation-1")).to_be_in_viewport()
    title = citations.first.inner_text()
    citations.first.click()
    expect(page.locator("h1")).to_have_text(title)
    assert re.search(r"/papers/local/\d+/$", page.url)
    look(page, screenshot, "cited-paper")


def test_asking_without_javascript_is_a_plain_form(
    reference_topic, browser, live_server, screenshot
):
    from playwright.sync_api import expect

    context = browser.new_context(viewport=DESKTOP, java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{live_server.url}/topics/{SLUG}/")
    page.get_by_label("Your question").fill(QUESTION)
    page.get_by_role("button", name="Ask about this topic").click()

    page.wait_for_url(re.compile(rf"/topics/{SLUG}/ask/\?q="))
    answer = page.locator(".ask-answer")
    expect(answer.locator(".ask-question")).to_have_text(f"You asked: {QUESTION}")
    expect(answer.locator("a.citation-marker").first).to_have_text("[1]")
    expect(answer.locator("ol.ask-citations li").first).to_have_attribute("id", "citation-1")
    # The question stays in the box, to ask again.
    expect(page.get_by_label("Your question")).to_have_value(QUESTION)
    look(page, screenshot, "ask-page-without-javascript")
    context.close()


# --- the feed -------------------------------------------------------------------------------


def test_the_feed_groups_by_day_marks_seen_papers_and_pages(
    reference_topic, browser, live_server, client, screenshot
):
    from playwright.sync_api import expect

    reader = UserFactory(username="reader")
    follow_create(user=reader, topic=reference_topic)
    # The reference papers were stored three hours ago and the reader opened the feed two
    # hours ago; two papers arrived since.
    now = timezone.now()
    Paper.objects.update(created_at=now - dt.timedelta(hours=3))
    feed_visit(user=reader, now=now - dt.timedelta(hours=2))
    new_titles = []
    for number in range(2):
        paper = PaperFactory(title=f"Arrived since: paper {number}", submitted=now.date())
        AssignmentFactory(paper=paper, topic=reference_topic)
        new_titles.append(paper.title)

    page = signed_in_context(browser, live_server, client, reader).new_page()
    page.goto(f"{live_server.url}/feed/")

    expect(page.locator(".feed-intro .count")).to_have_text("32 papers")
    days = page.locator("section.feed-day")
    dates = [days.nth(i).locator("h2 time").get_attribute("datetime") for i in range(days.count())]
    assert dates == sorted(dates, reverse=True) and len(set(dates)) == len(dates)
    assert dates[0] == timezone.localdate().isoformat()
    today = days.first.locator(".feed-item")
    assert today.count() == 2
    assert sorted(today.locator("h2, h3").all_inner_texts()) == new_titles
    expect(today.locator(".seen-badge")).to_have_count(0)
    # 30 cards a page: the two new ones, then 28 older ones, each marked seen.
    expect(page.locator(".feed-item")).to_have_count(30)
    expect(page.locator(".feed-item.seen")).to_have_count(28)
    expect(page.locator(".feed-item .seen-badge")).to_have_count(28)
    assert set(page.locator(".feed-matched .matched").all_inner_texts()) == {
        "Topic: LLM Agent Training"
    }
    look(page, screenshot, "feed-page-1")

    page.get_by_role("link", name="Older").click()
    page.wait_for_url(re.compile(r"/feed/\?page=2$"))
    expect(page.locator(".pager")).to_contain_text("Page 2 of 2")
    expect(page.locator(".feed-item")).to_have_count(2)
    expect(page.locator(".feed-item.seen")).to_have_count(2)
    look(page, screenshot, "feed-page-2")


# --- the topics index -----------------------------------------------------------------------


def _ranked(page) -> list[tuple[str, int]]:
    """(name, paper count) of each topic of the ranked list, in order."""
    rows = []
    for item in page.locator("ol.topic-ranked > li").all():
        name = item.locator("a").first.inner_text()
        count = int(item.locator(".count").inner_text().split()[0])
        rows.append((name, count))
    return rows


def test_topics_index_sorts_and_searches(reference_topic, browser, live_server, screenshot):
    from playwright.sync_api import expect

    page = browser.new_page(viewport=DESKTOP)
    page.goto(f"{live_server.url}/topics/")

    # The tree: the parent, its child the reference topic with its 30 papers and a sparkline.
    tree = page.locator("ul.topic-tree")
    entry = tree.locator("li", has=page.get_by_role("link", name="LLM Agent Training", exact=True))
    expect(entry.locator(".count").first).to_have_text("30 papers")
    expect(entry.locator("svg").first).to_be_visible()
    expect(page.locator(".topic-sorts [aria-current]")).to_have_text("Name")
    look(page, screenshot, "topics-by-name")

    page.locator(".topic-sorts").get_by_role("link", name="Size").click()
    expect(page).to_have_url(re.compile(r"sort=size"))
    page.wait_for_load_state()
    ranked = _ranked(page)
    assert len(ranked) >= 50
    counts = [count for _, count in ranked]
    assert counts == sorted(counts, reverse=True)
    # The parent topic holds its child's papers, so it ranks above it.
    assert ranked[0][1] >= 30
    look(page, screenshot, "topics-by-size")

    page.locator(".topic-sorts").get_by_role("link", name="Rising").click()
    expect(page).to_have_url(re.compile(r"sort=rising"))
    page.wait_for_load_state()
    expect(page.locator(".topic-index-note")).to_contain_text("Rising:")
    assert page.locator("ol.topic-ranked .topic-rising").count() == len(ranked)
    look(page, screenshot, "topics-rising")

    # Search names (the sort is kept), then clear.
    page.get_by_label("Find a topic").fill("benchmark")
    page.get_by_role("button", name="Search").click()
    expect(page).to_have_url(re.compile(r"q=benchmark&sort=rising|sort=rising&q=benchmark"))
    page.wait_for_load_state()
    found = _ranked(page)
    assert found, "no topic matched"
    assert all("benchmark" in name.casefold() for name, _ in found)
    expect(page.locator("main")).to_contain_text("match “benchmark”")
    look(page, screenshot, "topics-search")
    page.get_by_role("link", name="Clear").click()
    expect(page.get_by_label("Find a topic")).to_have_value("")

    page.get_by_label("Find a topic").fill("no such topic anywhere")
    page.get_by_role("button", name="Search").click()
    expect(page.locator("main")).to_contain_text("No topic name matches “no such topic anywhere”.")


# --- long unbroken words --------------------------------------------------------------------

LONG_WORD = "Supercalifragilisticexpialidocious" * 8  # 272 characters, no break opportunity


def test_long_unbroken_words_never_widen_the_pages_at_phone_width(
    reference_topic, browser, live_server, client, screenshot
):
    """Titles, author names, abstracts, saved searches and questions with a word wider than a
    phone (a URL, a formula, a hostile string) wrap instead of making the page scroll."""
    from playwright.sync_api import expect

    paper = PaperFactory(
        title=f"A title with {LONG_WORD} in it",
        abstract=f"See https://example.org/{LONG_WORD}/{LONG_WORD} for the data.",
        submitted=timezone.localdate(),
    )
    AuthorshipFactory(paper=paper, author=AuthorFactory(name=f"Dr {LONG_WORD}"), position=0)
    AssignmentFactory(paper=paper, topic=reference_topic)
    reader = UserFactory(username="reader")
    follow_create(user=reader, topic=reference_topic)
    follow_search_create(user=reader, query=LONG_WORD[:200])
    page = signed_in_context(browser, live_server, client, reader).new_page()
    url = live_server.url

    page.goto(f"{url}/topics/{SLUG}/")
    page.locator("article").first.locator("details summary").click()
    look(page, screenshot, "long-words-topic-page")
    page.goto(f"{url}{paper.get_absolute_url()}")
    expect(page.locator("h1")).to_contain_text(LONG_WORD)
    look(page, screenshot, "long-words-paper-page")
    page.goto(f"{url}/feed/")
    look(page, screenshot, "long-words-feed")
    page.goto(f"{url}/follows/")
    look(page, screenshot, "long-words-follows")
    page.goto(f"{url}/topics/?q={LONG_WORD[:100]}")
    expect(page.locator("main")).to_contain_text("No topic name matches")
    look(page, screenshot, "long-words-topics-search")
    page.goto(f"{url}/topics/{SLUG}/ask/?q={LONG_WORD}")
    expect(page.locator(".ask-question")).to_contain_text(LONG_WORD)
    look(page, screenshot, "long-words-ask-page")
