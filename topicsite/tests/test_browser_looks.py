"""The site's looks in a real browser (Debian's chromium through Playwright, against the live
server), each page at 1280 and 390 px, light and dark (``prefers-color-scheme``), screenshots
kept under var/test-artifacts/: the topics index as a tree, a quiet topic, the reference topic
page in dark mode, the follows page's Atom box and its copy button, a signed-out reader's
follow kept through logging in; and the curators' admin: the review queue fits 1280 px and a
history page raises no Content-Security-Policy violation."""

import datetime as dt
from io import StringIO

import pytest
from django.conf import settings
from django.contrib.auth.models import Group, Permission
from django.core.management import call_command

from accounts.tests.factories import PASSWORD
from accounts.tests.factories import UserFactory as ReaderFactory
from follows.feed_services import private_feed_url
from follows.models import Follow
from follows.services import follow_create
from papers.tests.factories import PaperFactory
from topics.models import Assignment, Topic
from topics.tests.factories import AssignmentFactory, TopicFactory
from topicsite.tests.browser import DESKTOP, sideways_overflow

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SLUG = "llm-agent-training"
PHONE = {"width": 390, "height": 844}
CURATORS = "Curators"


@pytest.fixture
def reference_topic(transactional_db) -> Topic:
    """The reference topic page imported as the demo does (59 topics, 30 papers)."""
    for command in ("load_categories", "import_reference_page"):
        call_command(command, stdout=StringIO())
    return Topic.objects.get(slug=SLUG)


@pytest.fixture
def quiet_topic(reference_topic) -> Topic:
    """A topic whose only paper is two years older than the newest stored paper."""
    topic = TopicFactory(name="Symbolic Regression", slug="symbolic-regression")
    AssignmentFactory(topic=topic, paper=PaperFactory(submitted=dt.date(2024, 9, 2)))
    return topic


def four_looks(page, screenshot, name: str) -> None:
    """Screenshots of ``page`` at 1280 and 390 px, light and dark; fails when a phone-width
    view scrolls sideways. Ends at desktop width, light."""
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        for viewport in (DESKTOP, PHONE):
            page.set_viewport_size(viewport)
            screenshot(page, f"{name}-{viewport['width']}px-{scheme}")
            assert sideways_overflow(page) <= 0, f"{name} scrolls sideways at {viewport}"
    page.emulate_media(color_scheme="light")
    page.set_viewport_size(DESKTOP)


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


def background(page, selector: str = "body") -> str:
    return page.eval_on_selector(selector, "e => getComputedStyle(e).backgroundColor")


# --- reader pages ------------------------------------------------------------------------------


def test_topics_index_is_a_tree_with_aligned_figures(quiet_topic, browser, live_server, screenshot):
    page = browser.new_page(viewport=DESKTOP)
    page.goto(f"{live_server.url}/topics/")

    parent = page.locator(
        ".topic-row", has=page.get_by_role("link", name="LLM: Large Language Model")
    )
    child = page.locator(".topic-row", has=page.get_by_role("link", name="LLM Agent Training"))
    parent_name = parent.locator(".topic-name").bounding_box()
    child_link = child.get_by_role("link").bounding_box()
    assert child_link["x"] > parent_name["x"] + 16  # the child indented under its parent
    # Counts end at one right edge; sparklines start at one left edge, in one column.
    count_rights = {
        round(box["x"] + box["width"])
        for box in (c.bounding_box() for c in page.locator(".topic-row .count").all())
    }
    spark_lefts = {round(s.bounding_box()["x"]) for s in page.locator(".sparkline").all()}
    assert len(count_rights) == 1 and len(spark_lefts) == 1
    quiet = page.locator(".topic-row", has=page.get_by_role("link", name="Symbolic Regression"))
    assert quiet.locator(".topic-momentum").inner_text() == "No new papers in the last four weeks"
    # No bullets.
    assert page.eval_on_selector(".topic-tree", "e => getComputedStyle(e).listStyleType") == "none"
    four_looks(page, screenshot, "topics-index")
    page.emulate_media(color_scheme="dark")
    assert background(page) == "rgb(15, 18, 23)"


def test_a_quiet_topic_says_so_without_an_empty_chart(
    quiet_topic, browser, live_server, screenshot
):
    page = browser.new_page(viewport=DESKTOP)
    page.goto(f"{live_server.url}{quiet_topic.get_absolute_url()}")
    sentence = page.locator(".momentum-sentence").inner_text()
    assert sentence.startswith("No new papers in the last four weeks")
    assert page.locator(".chart").count() == 0 and page.locator(".momentum svg").count() == 0
    four_looks(page, screenshot, "quiet-topic")


def test_the_reference_topic_page_in_dark_mode(reference_topic, browser, live_server, screenshot):
    page = browser.new_page(viewport=DESKTOP)
    page.emulate_media(color_scheme="dark")
    page.goto(f"{live_server.url}/topics/{SLUG}/")
    assert background(page) == "rgb(15, 18, 23)"
    card = page.locator("article.card").first
    assert background(page, "article.card") != "rgb(255, 255, 255)"
    title = card.locator(".card-title a")
    assert title.evaluate("e => getComputedStyle(e).textDecorationLine") == "none"
    assert page.locator(".chart-bar").count() == 12
    # Only the most specific chips: no archive-group chip on the reference cards.
    assert page.locator(".chips a", has_text="Computer Science").count() == 0
    four_looks(page, screenshot, "reference-topic")


def test_the_follows_page_has_the_atom_box_on_top_with_a_copy_button(
    reference_topic, browser, live_server, client, screenshot
):
    reader = ReaderFactory()
    follow_create(user=reader, topic=reference_topic)
    context = signed_in_context(
        browser, live_server, client, reader, permissions=["clipboard-read", "clipboard-write"]
    )
    page = context.new_page()
    page.goto(f"{live_server.url}/follows/")
    box = page.locator(".private-feed")
    assert box.bounding_box()["y"] < 400  # at the top, not below the lists
    field = page.get_by_label("Private feed address")
    assert field.input_value() == private_feed_url(user=reader)
    page.get_by_role("button", name="Copy").click()
    page.get_by_text("Address copied to the clipboard.").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == private_feed_url(user=reader)
    four_looks(page, screenshot, "follows-atom-box")
    context.close()


def test_a_signed_out_follow_is_kept_through_logging_in(
    reference_topic, browser, live_server, screenshot
):
    reader = ReaderFactory(email="reader@example.org")
    page = browser.new_page(viewport=DESKTOP)
    page.goto(f"{live_server.url}/topics/{SLUG}/")
    page.get_by_role("link", name="Follow this topic").click()
    page.wait_for_url("**/accounts/login/**")
    page.locator("input[name=login]").fill("reader@example.org")
    page.locator("input[name=password]").fill(PASSWORD)
    page.locator("form button[type=submit]").last.click()
    page.wait_for_url(f"**/follows/topics/{SLUG}/confirm/")
    assert not Follow.objects.filter(user=reader).exists()
    four_looks(page, screenshot, "follow-confirm")
    page.get_by_role("button", name="Follow this topic").click()
    page.wait_for_url(f"**/topics/{SLUG}/")
    page.get_by_role("button", name="Unfollow this topic").wait_for()
    assert Follow.objects.filter(user=reader, topic=reference_topic).exists()
    screenshot(page, "followed-after-login")


# --- the curators' admin -----------------------------------------------------------------------


@pytest.fixture
def curator_not_staff(transactional_db):
    """A member of the Curators group without "Staff status": the group alone lets them in."""
    from importlib import import_module

    migration = import_module("topics.migrations.0003_curators_group")
    group, _ = Group.objects.get_or_create(name=CURATORS)
    for app_label, codenames in migration.CURATOR_PERMISSIONS.items():
        group.permissions.add(
            *Permission.objects.filter(content_type__app_label=app_label, codename__in=codenames)
        )
    user = ReaderFactory(username="curator", is_staff=False)
    user.groups.add(group)
    return user


def assert_columns_in_view(page, *columns):
    results = page.locator("#changelist .results")
    assert results.evaluate("e => e.scrollWidth <= e.clientWidth"), "the table scrolls sideways"
    for column in columns:
        box = page.locator(f"#result_list th.column-{column}").bounding_box()
        assert box["x"] + box["width"] <= 1280, f"{column} is off the screen"


def test_the_review_queue_fits_1280px(
    reference_topic, curator_not_staff, browser, live_server, client, screenshot
):
    long_topic = TopicFactory(
        name="Reinforcement Learning from Verifiable Rewards for Tool-Using Language Agents",
        parent=reference_topic,
    )
    for n in range(12):
        paper = PaperFactory(
            title=f"Scaling Multi-Turn Reinforcement Learning for Long-Horizon Web Agents "
            f"with Hierarchical Credit Assignment and Curriculum Replay, part {n}"
        )
        AssignmentFactory(
            paper=paper,
            topic=long_topic,
            source=Assignment.Source.CLASSIFIER,
            state=Assignment.State.PENDING,
            score=0.4123456 + n / 100,
        )
    context = signed_in_context(browser, live_server, client, curator_not_staff)
    page = context.new_page()
    page.goto(f"{live_server.url}/admin/topics/assignment/?review=queue")
    assert page.locator("#result_list tbody tr").count() == 12
    assert page.locator("td.field-score_shown").first.inner_text() == "0.522"
    screenshot(page, "review-queue-1280px")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    # The admin scrolls a wide table inside its own box: that must not happen either.
    assert_columns_in_view(page, "score_shown", "decide")
    page.goto(f"{live_server.url}/admin/topics/topic/")
    screenshot(page, "topic-list-1280px")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    assert_columns_in_view(page, "accepted_count", "pending_count", "rejected_count", "active")
    context.close()


def test_a_history_page_raises_no_csp_violation(
    reference_topic, curator_not_staff, browser, live_server, client, screenshot
):
    context = signed_in_context(browser, live_server, client, curator_not_staff)
    page = context.new_page()
    page.add_init_script(
        "window.cspViolations = [];"
        "document.addEventListener('securitypolicyviolation',"
        " e => window.cspViolations.push(e.violatedDirective + ' ' + e.blockedURI));"
    )
    console = []
    page.on("console", lambda message: console.append(message.text))
    response = page.goto(f"{live_server.url}/admin/topics/topic/{reference_topic.pk}/history/")
    assert response.status == 200
    assert "style-src 'self'" in response.headers["content-security-policy"]
    page.get_by_role("heading", name="Change history").wait_for()
    page.wait_for_load_state("networkidle")
    screenshot(page, "topic-history-1280px")
    assert page.evaluate("window.cspViolations") == []
    assert not [text for text in console if "Content Security Policy" in text]
    context.close()
