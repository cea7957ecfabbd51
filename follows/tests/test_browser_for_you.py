""" "For you" in a real browser (Debian's chromium through Playwright, against the live
server): picks with why each was picked, "Not interested" hiding one (a plain POST form with
its CSRF token), the empty state; screenshots at 1280 and 390 px, light and dark."""

import datetime as dt

import numpy as np
import pytest

from follows.models import Follow, ForYouFeedback, LibraryItem
from papers.tests.factories import embedding_near

from .conftest import assign, make_paper
from .test_browser_follow import signed_in_context

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DAY = dt.date(2026, 9, 29)
DIMENSION = 8
SIZES = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}
ABSTRACT = (
    "We train language model agents to call external tools from their own traces. The policy "
    "learns when a calculator, a search engine or a calendar helps, and when to answer "
    "directly; on arithmetic word problems it gains twelve points over prompting alone, and "
    "on multi-step web tasks it halves the number of wasted calls. Code and traces are released."
)


def embedded(title, direction, rng, *, submitted=DAY):
    return embedding_near(make_paper(title, abstract=ABSTRACT, submitted=submitted), direction, rng)


@pytest.fixture
def picks_world(reader, taxonomy, categories):
    rng = np.random.default_rng(11)
    agents, vision = np.eye(DIMENSION)[0], np.eye(DIMENSION)[1]
    saved = embedded(
        "Toolformer-style agents that teach themselves tools",
        agents,
        rng,
        submitted=dt.date(2026, 8, 20),
    )
    LibraryItem.objects.create(user=reader, paper=saved)
    Follow.objects.create(user=reader, topic=taxonomy["vision"])
    new_agents = [
        embedded(title, agents, rng, submitted=DAY - dt.timedelta(days=n))
        for n, title in enumerate(
            [
                "Agents that learn when to call a calculator",
                "Planning with tool calls in web agents",
                "Self-annotated traces for tool-using language models",
            ]
        )
    ]
    new_vision = embedded("Vision transformers see small objects", vision, rng)
    assign(new_vision, taxonomy["vision"])
    return {"saved": saved, "agents": new_agents, "vision": new_vision}


def test_for_you_page_and_not_interested(
    browser, live_server, client, reader, picks_world, screenshot
):
    from playwright.sync_api import expect

    for size, viewport in SIZES.items():
        for scheme in ("light", "dark"):
            context = signed_in_context(browser, live_server, client, reader, viewport=viewport)
            page = context.new_page()
            page.emulate_media(color_scheme=scheme)
            page.goto(live_server.url + "/for-you/")
            expect(page.locator("h1")).to_have_text("For you")
            expect(page.locator(".for-you-pick")).to_have_count(4)
            first = page.locator(".for-you-pick").first
            expect(first.locator(".for-you-why")).to_contain_text(
                "close to Toolformer-style agents that teach themselves tools"
            )
            expect(page.locator(".for-you-pick", has_text="Vision transformers")).to_contain_text(
                "in Vision"
            )
            screenshot(page, f"for-you-{size}-{scheme}")
            context.close()

    context = signed_in_context(browser, live_server, client, reader, viewport=SIZES["desktop"])
    page = context.new_page()
    page.goto(live_server.url + "/for-you/")
    first = page.locator(".for-you-pick").first
    title = first.locator(".card-title").inner_text()
    first.get_by_role("button", name="Not interested").click()
    page.wait_for_load_state()
    expect(page.locator(".messages")).to_contain_text(f"Hidden from your picks: {title}")
    expect(page.locator(".for-you-pick")).to_have_count(3)
    expect(page.locator(".card-title", has_text=title)).to_have_count(0)
    assert ForYouFeedback.objects.filter(user=reader, paper__title=title).exists()
    screenshot(page, "for-you-after-not-interested")
    context.close()


def test_empty_state_tells_a_new_reader_how_to_start(browser, live_server, client, screenshot):
    from playwright.sync_api import expect

    from topics.tests.factories import UserFactory

    newcomer = UserFactory(username="newcomer")
    for size, viewport in SIZES.items():
        for scheme in ("light", "dark"):
            context = signed_in_context(browser, live_server, client, newcomer, viewport=viewport)
            page = context.new_page()
            page.emulate_media(color_scheme=scheme)
            page.goto(live_server.url + "/for-you/")
            expect(page.locator(".empty-feed")).to_contain_text("Nothing to pick from yet")
            expect(page.get_by_role("link", name="the topics")).to_be_visible()
            screenshot(page, f"for-you-empty-{size}-{scheme}")
            context.close()
