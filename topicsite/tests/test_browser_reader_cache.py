"""Two signed-in readers on one topic page in real browsers (Debian's chromium through
Playwright, against the live server), with the signed-in readers' shared page on
(topicsite/pagecache.py, topicsite/holes.py): each sees only their own name and follow
state, and the forms the filled holes carry post with each reader's own CSRF token."""

import re

import pytest
from django.conf import settings
from django.test import Client

from follows.models import Follow, LibraryItem
from topics.tests.factories import TopicFactory, UserFactory
from topics.tests.test_views_topic import card_paper

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def signed_in_page(browser, live_server, user):
    client = Client()  # one per reader: logging another in would end this one's session
    client.force_login(user)
    context = browser.new_context()
    context.add_cookies(
        [
            {
                "name": settings.SESSION_COOKIE_NAME,
                "value": client.cookies[settings.SESSION_COOKIE_NAME].value,
                "url": live_server.url,
            }
        ]
    )
    return context.new_page()


def test_two_readers_share_the_page_and_each_acts_with_their_own_token(
    browser, live_server, screenshot
):
    from playwright.sync_api import expect

    topic = TopicFactory(name="Agents", slug="agents")
    paper = card_paper(topics=[topic], title="Tool use by language agents")
    ann = UserFactory(username="ann", email="ann@example.org")
    ben = UserFactory(username="ben", email="ben@example.org")
    url = live_server.url + topic.get_absolute_url()

    ann_page = signed_in_page(browser, live_server, ann)
    first = ann_page.goto(url)
    assert first.headers["x-page-cache"] == "miss"
    ann_page.locator("form.follow-form button").click()
    expect(ann_page.locator("form.follow-form button")).to_have_text("Unfollow this topic")
    assert Follow.objects.filter(user=ann, topic=topic).exists()

    ben_page = signed_in_page(browser, live_server, ben)
    second = ben_page.goto(url)
    assert second.headers["x-page-cache"] == "hit"  # Ann's rendering, shared
    expect(ben_page.locator(".signed-in-as")).to_have_text("ben@example.org")
    expect(ben_page.locator("form.follow-form button")).to_have_text("Follow this topic")
    expect(ben_page.locator("form.follow-form .followers")).to_have_text("1 follower")
    # Ben saves the paper from its card: the form's token is his, or the POST would be 403.
    ben_page.locator("form.save-form button.save-button").click()
    expect(ben_page.locator("form.save-form button.save-button")).to_have_text("Saved")
    assert LibraryItem.objects.filter(user=ben, paper=paper).exists()
    screenshot(ben_page, "ben")

    again = ann_page.reload()
    assert again.headers["x-page-cache"] == "hit"
    expect(ann_page.locator(".signed-in-as")).to_have_text("ann@example.org")
    expect(ann_page.locator("form.follow-form button")).to_have_text("Unfollow this topic")
    expect(ann_page.locator("form.save-form button.save-button")).to_have_text("Save")
    assert "ben@example.org" not in ann_page.content()
    # Ann logs out with the token of her own page.
    ann_page.locator("form.inline-form button", has_text="Log out").click()
    ann_page.wait_for_load_state()
    assert re.search(r"Log in", ann_page.content())
    assert not LibraryItem.objects.filter(user=ann).exists()
