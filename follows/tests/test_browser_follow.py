"""The follow button in a real browser (Debian's chromium through Playwright, against the live
server): with JavaScript, ``static/js/follow.js`` follows and unfollows in place (no page load,
button and follower count updated); without JavaScript the plain form does it with a reload."""

import pytest
from django.conf import settings

from follows.models import Follow
from follows.services import follow_create
from topics.tests.factories import TopicFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def signed_in_context(browser, live_server, client, user, **options):
    client.force_login(user)
    context = browser.new_context(**options)
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


def test_follow_and_unfollow_in_place_with_javascript(browser, live_server, client, screenshot):
    from playwright.sync_api import expect

    topic = TopicFactory(name="Agents", slug="agents")
    follow_create(user=UserFactory(username="someone"), topic=topic)
    reader = UserFactory(username="reader")
    page = signed_in_context(browser, live_server, client, reader).new_page()
    page.goto(live_server.url + topic.get_absolute_url())
    button = page.locator("form.follow-form button")
    followers = page.locator("form.follow-form .followers")
    expect(followers).to_have_text("1 follower")
    page.evaluate("window.loadedOnce = true")

    button.click()
    expect(button).to_have_text("Unfollow this topic")
    expect(followers).to_have_text("2 followers")
    assert page.evaluate("window.loadedOnce") is True  # updated in place, no page load
    assert Follow.objects.filter(user=reader, topic=topic).exists()
    screenshot(page, "followed")

    button.click()
    expect(button).to_have_text("Follow this topic")
    expect(followers).to_have_text("1 follower")
    assert page.evaluate("window.loadedOnce") is True
    assert not Follow.objects.filter(user=reader, topic=topic).exists()


def test_the_plain_form_works_without_javascript(browser, live_server, client):
    from playwright.sync_api import expect

    topic = TopicFactory(name="Agents", slug="agents")
    reader = UserFactory(username="reader")
    context = signed_in_context(browser, live_server, client, reader, java_script_enabled=False)
    page = context.new_page()
    page.goto(live_server.url + topic.get_absolute_url())

    page.locator("form.follow-form button").click()
    page.wait_for_load_state()
    expect(page.locator(".messages")).to_contain_text("You now follow Agents.")
    expect(page.locator("form.follow-form button")).to_have_text("Unfollow this topic")
    expect(page.locator("form.follow-form .followers")).to_have_text("1 follower")
    assert Follow.objects.filter(user=reader, topic=topic).exists()
