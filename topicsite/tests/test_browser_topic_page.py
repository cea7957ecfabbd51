"""The reference topic page in a real browser (Debian's chromium through Playwright): what a
reader sees at desktop and phone width, with screenshots kept as test artefacts."""

from io import StringIO

import pytest
from django.core.management import call_command

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SLUG = "llm-agent-training"


@pytest.fixture
def reference_topic(transactional_db):
    for command in ("load_categories", "import_reference_page"):
        call_command(command, stdout=StringIO())


@pytest.mark.parametrize(("width", "height"), [(1280, 900), (375, 740)])
def test_topic_page_shows_momentum_chart_and_cards_without_sideways_scrolling(
    reference_topic, browser, live_server, screenshot, width, height
):
    page = browser.new_page(viewport={"width": width, "height": height})
    page.goto(f"{live_server.url}/topics/{SLUG}/")

    assert page.locator("h1").inner_text().strip() == "LLM Agent Training"
    assert page.get_by_text("Momentum").first.is_visible()
    chart = page.locator("svg").first
    assert chart.is_visible()
    assert chart.bounding_box()["width"] <= width
    cards = page.locator("article")
    assert cards.count() == 30
    first = cards.first
    assert first.locator("h2, h3").first.inner_text().strip()
    # Abstracts are folded in <details>; opening one shows its text.
    details = first.locator("details").first
    details.locator("summary").click()
    assert details.evaluate("element => element.open")
    overflow = page.evaluate(
        "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0, f"the page scrolls sideways by {overflow}px at {width}px"
    assert screenshot(page, f"topic-page-{width}px").stat().st_size > 10_000
