"""Author pages in a real browser (Debian's chromium through Playwright, against the live
server): from a name on a topic page's card to the author's page, following the author, the
follow on the follows page, and a curator's merge confirmation in the admin. Each page is
looked at 1280 and 390 px wide, light and dark, screenshots kept; no page scrolls sideways."""

import re
from io import StringIO

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command

from follows.models import Follow
from papers.models import Author
from topics.models import Topic
from topics.tests.factories import UserFactory
from topicsite.tests.browser import sideways_overflow

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SLUG = "llm-agent-training"
WIDTHS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}


@pytest.fixture
def reference_topic(transactional_db) -> Topic:
    for command in ("load_categories", "import_reference_page"):
        call_command(command, stdout=StringIO())
    return Topic.objects.get(slug=SLUG)


def signed_in_context(browser, live_server, client, user):
    client.force_login(user)
    context = browser.new_context(viewport=WIDTHS["desktop"])
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


def look_all(page, screenshot, name):
    """Screenshots at 1280 and 390 px, light and dark; fails when a phone page scrolls
    sideways. Ends light, at desktop width."""
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        for label, size in WIDTHS.items():
            page.set_viewport_size(size)
            screenshot(page, f"{name}-{size['width']}px-{scheme}")
            assert sideways_overflow(page) <= 0, f"{name} scrolls sideways at {label} ({scheme})"
    page.emulate_media(color_scheme="light")
    page.set_viewport_size(WIDTHS["desktop"])


def test_from_a_card_to_the_author_page_then_follow_and_see_the_follow(
    reference_topic, browser, live_server, client, screenshot
):
    from playwright.sync_api import expect

    user = UserFactory(username="reader")
    context = signed_in_context(browser, live_server, client, user)
    page = context.new_page()
    page.goto(f"{live_server.url}/topics/{SLUG}/")
    first_author = page.locator(".card .authors a").first
    name = first_author.inner_text()
    first_author.click()

    page.wait_for_url(re.compile(r"/authors/\d+-[a-z0-9-]+/$"))
    expect(page.locator("h1")).to_have_text(name)
    expect(page.locator(".momentum-sentence")).to_contain_text("in the last four weeks")
    expect(page.locator("svg.sparkline")).to_be_visible()
    expect(page.locator("#author-topics-heading")).to_be_visible()
    assert page.locator(".papers .card").count() >= 1
    assert page.locator(".papers .card .authors a", has_text=name).count() >= 1
    look_all(page, screenshot, "author-page")

    button = page.get_by_role("button", name="Follow this author")
    button.click()
    expect(page.get_by_role("button", name="Unfollow this author")).to_be_visible()
    expect(page.locator(".follow-form .followers")).to_have_text("1 follower")
    author = Author.objects.get(name=name)
    assert Follow.objects.filter(user=user, author=author, kind=Follow.Kind.AUTHOR).exists()
    look_all(page, screenshot, "author-page-followed")

    page.goto(f"{live_server.url}/follows/")
    authors = page.locator("section[aria-labelledby=authors-heading]")
    expect(authors.get_by_role("link", name=name)).to_have_attribute(
        "href", author.get_absolute_url()
    )
    look_all(page, screenshot, "follows-with-author")
    context.close()


def test_merge_confirmation_in_the_admin(reference_topic, browser, live_server, client, screenshot):
    from playwright.sync_api import expect

    curator = get_user_model().objects.create_user(
        "curator", "curator@example.org", "pw", is_staff=True, is_superuser=True
    )
    first, second = Author.objects.order_by("name")[:2]
    context = signed_in_context(browser, live_server, client, curator)
    page = context.new_page()
    page.goto(f"{live_server.url}/admin/papers/author/")
    for author in (first, second):
        page.locator(f"input[name=_selected_action][value='{author.pk}']").check()
    page.select_option("select[name=action]", "merge_authors")
    page.locator("button[name=index]").click()  # the admin's "Go"

    expect(page.locator("h1")).to_have_text("Merge authors")
    expect(page.get_by_text("The author that stays")).to_be_visible()
    look_all(page, screenshot, "admin-merge-confirmation")
    page.get_by_label(f"{first.name} (#{first.pk})").check()
    page.get_by_role("button", name="Apply").click()
    expect(page.locator(".messagelist")).to_contain_text(f"into {first.name!r}")
    second.refresh_from_db()
    assert second.merged_into_id == first.pk
    context.close()
