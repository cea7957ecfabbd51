"""The search page (``/search/``) and TeX rendered by KaTeX, in a real browser (Debian's
chromium through Playwright, against the live server): searching from the header's box, the
highlights, the filters, the empty states, a query that does not parse, saving the search while
signed in; ``SrTiO$_3$`` drawn by KaTeX on the search, topic, paper and feed pages with no
Content-Security-Policy violation, its TeX kept for copying. Each look is taken at 1280 and
390 px wide, light and dark (no sideways scrolling at 390 px), screenshots kept."""

from __future__ import annotations

import datetime as dt

import pytest
from django.conf import settings

from follows.feed_services import feed_visit
from follows.models import Follow
from follows.services import follow_create
from papers.tests.factories import CategoryFactory, PaperFactory
from topics.models import Topic
from topics.tests.factories import AssignmentFactory, TopicFactory, UserFactory
from topicsite.tests.browser import DESKTOP, sideways_overflow

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
TEX_TITLE = "Superconductivity in SrTiO$_3$ agents at $T < 1$ K"

# Records every Content-Security-Policy violation the page reports (as test_security_headers).
RECORD_VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__violations.push(event.violatedDirective + " " + event.blockedURI);
});
"""


@pytest.fixture
def corpus(transactional_db) -> dict:
    """A topic "Agents" with three papers (one with TeX in its title), a graph paper in cs.LG
    outside it, and 25 more agent papers so the results have a second page."""
    cl, lg = (
        CategoryFactory(code="cs.CL", name="Computation and Language"),
        CategoryFactory(code="cs.LG", name="Machine Learning"),
    )
    topic = TopicFactory(name="Agents", slug="agents")
    papers = {
        "tool": PaperFactory(
            title="Tool use agents trained with reinforcement learning",
            abstract="We train tool use agents with reinforcement learning. Agents call tools "
            "and read their results.",
            primary_category=cl,
            submitted=dt.date(2026, 9, 28),
        ),
        "tex": PaperFactory(
            title=TEX_TITLE,
            abstract="Oxide agents: the gap $\\Delta \\approx 0.1$ meV, and $$E = mc^2$$.",
            primary_category=cl,
            submitted=dt.date(2026, 9, 27),
        ),
        "graphs": PaperFactory(
            title="Graph neural networks for molecules",
            abstract="Message passing on graphs of molecules.",
            primary_category=lg,
            submitted=dt.date(2026, 9, 26),
        ),
    }
    for paper in (papers["tool"], papers["tex"]):
        AssignmentFactory(paper=paper, topic=topic)
    for n in range(25):
        PaperFactory(
            title=f"Planning agents, part {n + 1}",
            abstract="Agents that plan before they act.",
            primary_category=lg,
            submitted=dt.date(2026, 8, 1) + dt.timedelta(days=n),
        )
    return {"topic": topic, **papers}


def signed_in_page(browser, live_server, client, user):
    client.force_login(user)
    context = browser.new_context(viewport=DESKTOP)
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


def recording(page) -> list[str]:
    """Start recording CSP violations and console errors of ``page``; returns the list the
    console messages go to."""
    console: list[str] = []
    page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
    page.on("pageerror", lambda error: console.append(f"pageerror: {error}"))
    page.add_init_script(RECORD_VIOLATIONS)
    return console


def violations(page, console) -> list[str]:
    reported = page.evaluate("() => window.__violations || []")
    logged = [text for text in console if "Content Security Policy" in text]
    errors = [text for text in console if text.startswith(("error:", "pageerror:"))]
    return reported + logged + errors


def looks(page, screenshot, name: str) -> None:
    """Screenshots of ``page`` at 1280 and 390 px wide, light and dark
    (``<name>-<light|dark>-<width>px.png``); fails when the page scrolls sideways at 390 px.
    Ends at desktop width, light."""
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.set_viewport_size(DESKTOP)
        screenshot(page, f"{name}-{scheme}-{DESKTOP['width']}px")
        page.set_viewport_size(PHONE)
        overflow = sideways_overflow(page)
        screenshot(page, f"{name}-{scheme}-{PHONE['width']}px")
        assert overflow <= 0, f"{name} ({scheme}) scrolls sideways by {overflow}px at 390px"
    page.emulate_media(color_scheme="light")
    page.set_viewport_size(DESKTOP)


def test_searching_from_the_header_shows_highlighted_cards_and_pages(
    corpus, browser, live_server, screenshot
):
    from playwright.sync_api import expect

    page = browser.new_page(viewport=DESKTOP)
    console = recording(page)
    page.goto(f"{live_server.url}/topics/")
    header = page.get_by_role("search", name="Search papers (site header)")
    header.get_by_label("Search papers").fill("agents")
    header.get_by_role("button", name="Find papers").click()
    page.wait_for_url("**/search/?q=agents")
    expect(page.get_by_role("heading", name="27 papers found")).to_be_visible()
    expect(page.locator("#search-q")).to_have_value("agents")
    # The matched words are marked in titles and teasers.
    first_title = page.locator(".card-title").first
    assert first_title.locator("mark").count() >= 1
    assert page.locator(".card .teaser mark").count() >= 1
    expect(page.locator(".pager")).to_contain_text("Page 1 of 2")
    looks(page, screenshot, "results")

    page.get_by_role("link", name="Next").click()
    expect(page.locator(".pager")).to_contain_text("Page 2 of 2")
    assert page.locator(".card").count() == 7
    assert violations(page, console) == []


def test_filters_narrow_the_results(corpus, browser, live_server, screenshot):
    from playwright.sync_api import expect

    page = browser.new_page(viewport=DESKTOP)
    page.goto(f"{live_server.url}/search/?q=agents&mode=keyword")
    page.get_by_label("Topic", exact=True).select_option("agents")
    page.get_by_label("Submitted from").fill("2026-09-01")
    page.get_by_label("Sort by").select_option("newest")
    page.locator("#search-q").press("Enter")
    expect(page.get_by_role("heading", name="2 papers found")).to_be_visible()
    titles = page.locator(".card-title").all_inner_texts()
    assert titles[0].startswith("Tool use agents")
    assert "topic=agents" in page.url and "submitted_after=2026-09-01" in page.url
    expect(page.get_by_label("Topic", exact=True)).to_have_value("agents")
    looks(page, screenshot, "filters")

    # Category as a cross-list or primary: cs.LG holds the planning papers, not the topic's.
    page.get_by_label("Category").select_option("cs.LG")
    page.locator("#search-q").press("Enter")
    expect(page.get_by_role("heading", name="No papers found")).to_be_visible()
    expect(page.get_by_role("link", name="Search again without the filters")).to_be_visible()
    looks(page, screenshot, "no-results-with-filters")
    page.get_by_role("link", name="Search again without the filters").click()
    expect(page.get_by_role("heading", name="27 papers found")).to_be_visible()


def test_the_empty_page_teaches_the_query_language(corpus, browser, live_server, screenshot):
    from playwright.sync_api import expect

    page = browser.new_page(viewport=DESKTOP)
    response = page.goto(f"{live_server.url}/search/")
    assert response.status == 200
    expect(page.get_by_role("heading", name="How to search")).to_be_visible()
    expect(page.locator(".search-tips")).to_contain_text('"reinforcement learning"')
    looks(page, screenshot, "empty")


def test_a_query_that_does_not_parse_is_a_400_with_the_reason(
    corpus, browser, live_server, screenshot
):
    from playwright.sync_api import expect

    page = browser.new_page(viewport=DESKTOP)
    response = page.goto(f"{live_server.url}/search/?q=%28agents+OR")
    assert response.status == 400
    alert = page.get_by_role("alert")
    expect(alert).to_have_text("The query does not parse: OR needs a term after it at position 8.")
    expect(page.locator("#search-q")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#search-q")).to_have_value("(agents OR")
    looks(page, screenshot, "bad-query")


def test_a_signed_in_reader_saves_the_search_into_follows(
    corpus, browser, live_server, client, screenshot
):
    from playwright.sync_api import expect

    reader = UserFactory(username="reader")
    page = signed_in_page(browser, live_server, client, reader)
    page.goto(f"{live_server.url}/search/?q=agent*&topic=agents")
    looks(page, screenshot, "signed-in-results")
    page.get_by_role("button", name="Save this search").click()
    page.wait_for_url("**/follows/")
    expect(page.locator("ul.messages")).to_contain_text("You now follow the search")
    follow = Follow.objects.get(user=reader, kind=Follow.Kind.SEARCH)
    assert follow.query == "agent*"
    assert list(follow.topic_scope.values_list("slug", flat=True)) == ["agents"]
    looks(page, screenshot, "saved")


def test_signed_out_the_save_button_logs_in_and_comes_back(corpus, browser, live_server):
    page = browser.new_page(viewport=DESKTOP)
    page.goto(f"{live_server.url}/search/?q=agents&mode=keyword")
    page.get_by_role("link", name="Save this search").click()
    assert "/accounts/login/?next=/search/%3Fq%3Dagents%26mode%3Dkeyword" in page.url


# --- TeX ---------------------------------------------------------------------------------------


def _tex_rendered(page) -> None:
    """The TeX title renders as KaTeX (its TeX kept in the MathML annotation)."""
    page.wait_for_selector(".katex", timeout=10_000)
    annotations = page.locator(".katex annotation").all_text_contents()
    assert "_3" in annotations


def test_tex_renders_with_katex_under_the_csp_and_copies_as_tex(
    corpus, browser, live_server, client, screenshot
):
    # The search page (highlights stay out of formulas), the topic page, the paper page.
    page = browser.new_page(viewport=DESKTOP)
    console = recording(page)
    for address in (
        "/search/?q=SrTiO+agents&mode=keyword",
        "/topics/agents/",
        corpus["tex"].get_absolute_url(),
    ):
        page.goto(f"{live_server.url}{address}")
        _tex_rendered(page)
        assert "$_3$" not in page.locator("main").inner_text()
        assert violations(page, console) == []
    # Display math in the paper page's abstract.
    assert page.locator(".katex-display").count() == 1
    looks(page, screenshot, "paper-with-tex")

    # Copying a rendered title copies its TeX (KaTeX's copy-tex).
    copied = page.evaluate(
        """() => {
        const title = document.querySelector("h1");
        const range = document.createRange();
        range.selectNodeContents(title);
        const selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        let text = null;
        window.addEventListener("copy", (event) => {
          text = event.clipboardData.getData("text/plain");
        }, { once: true });
        document.execCommand("copy");
        return text;
      }"""
    )
    assert copied is not None and "SrTiO$_3$" in copied

    # The reader's feed.
    reader = UserFactory(username="tex-reader")
    follow_create(user=reader, topic=Topic.objects.get(slug="agents"))
    feed_visit(user=reader)
    feed = signed_in_page(browser, live_server, client, reader)
    feed_console = recording(feed)
    feed.goto(f"{live_server.url}/feed/")
    _tex_rendered(feed)
    assert violations(feed, feed_console) == []
    looks(feed, screenshot, "feed-with-tex")


def test_tex_in_an_ask_answer_renders(corpus, browser, live_server):
    page = browser.new_page(viewport=DESKTOP)
    console = recording(page)
    page.goto(f"{live_server.url}/topics/agents/")
    page.get_by_label("Your question").fill(
        "What is the gap of the oxide agents in superconductivity?"
    )
    page.get_by_role("button", name="Ask about this topic").click()
    page.wait_for_selector(".ask-answer", timeout=30_000)
    # The quoted sentence's formula and the cited paper's title.
    page.wait_for_selector(".ask-answer-text .katex", timeout=10_000)
    page.wait_for_selector(".ask-citations .katex", timeout=10_000)
    assert violations(page, console) == []


def test_the_header_box_and_papers_without_tex_leave_pages_unchanged(corpus, browser, live_server):
    page = browser.new_page(viewport=DESKTOP)
    page.goto(f"{live_server.url}{corpus['graphs'].get_absolute_url()}")
    page.wait_for_load_state("load")
    assert page.locator(".katex").count() == 0
    assert page.get_by_role("search", name="Search papers (site header)").count() == 1
