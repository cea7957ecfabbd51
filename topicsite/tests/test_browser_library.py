"""The paper page and the reader's library in a real browser (Debian's chromium through
Playwright, against the live server): the paper page with "Cite" open, saving a paper from a
topic page's card, the library with a read mark and a note, and the BibTeX export. Every
page is looked at 1280 and 390 px wide, light and dark, screenshots kept; no page may log a
Content-Security-Policy violation or scroll sideways on a phone."""

import datetime as dt

import pytest
from django.conf import settings

from follows.models import LibraryItem
from papers.tests.factories import (
    AffiliationFactory,
    AuthorFactory,
    AuthorshipFactory,
    CategoryFactory,
    PaperAffiliationFactory,
    PaperFactory,
)
from topics.models import Assignment, AssignmentReport
from topics.tests.factories import AssignmentFactory, TopicFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
TITLE = "Two-dimensional electron gas at SrTiO$_3$ interfaces"


def looks(page, screenshot, name):
    """Screenshots of ``page`` at 1280 and 390 px, light and dark; fails when the page
    scrolls sideways at 390 px. Ends at desktop width, light."""
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.set_viewport_size(DESKTOP)
        screenshot(page, f"{name}-{scheme}-1280px")
        page.set_viewport_size(PHONE)
        overflow = page.evaluate(
            "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        screenshot(page, f"{name}-{scheme}-390px")
        assert overflow <= 0, f"{name} ({scheme}) scrolls sideways by {overflow}px at 390 px"
    page.emulate_media(color_scheme="light")
    page.set_viewport_size(DESKTOP)


def watch_console(page):
    """The console errors of ``page`` (CSP violations among them), as a list that fills."""
    errors = []
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    return errors


@pytest.fixture
def topic_with_paper(transactional_db):
    topic = TopicFactory(name="Oxide interfaces", slug="oxide-interfaces")
    paper = PaperFactory(
        arxiv_id="2409.01234",
        latest_version=2,
        title=TITLE,
        abstract="We find a high-mobility electron gas between LaAlO$_3$ and SrTiO$_3$.",
        primary_category=CategoryFactory(code="cond-mat.str-el"),
        submitted=dt.date(2026, 9, 29),
        author_count=5,
        affiliation_count=4,
        doi="10.1234/oxide.2026",
    )
    for position, name in enumerate(
        ["Ludwig van Beethoven", "Zoë Ünal", "Ann Lee", "Bo Li", "Cy Ng"]
    ):
        AuthorshipFactory(paper=paper, author=AuthorFactory(name=name), position=position)
    for position in range(4):
        PaperAffiliationFactory(
            paper=paper, affiliation=AffiliationFactory(name=f"Lab {position}"), position=position
        )
    AssignmentFactory(
        paper=paper,
        topic=topic,
        source=Assignment.Source.SEMANTIC,
        score=0.71,
        evidence={"cosine": 0.71, "nearest": [], "labels": 2},
    )
    for i in range(3):
        AssignmentFactory(topic=topic, paper=PaperFactory(submitted=dt.date(2026, 9, 20 + i)))
    return topic, paper


def signed_in_page(browser, live_server, client, user):
    client.force_login(user)
    context = browser.new_context(viewport=DESKTOP, accept_downloads=True)
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


def test_paper_page_with_cite_open(topic_with_paper, browser, live_server, client, screenshot):
    from playwright.sync_api import expect

    _topic, paper = topic_with_paper
    page = signed_in_page(browser, live_server, client, UserFactory(username="reader"))
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    errors = watch_console(page)
    page.goto(f"{live_server.url}{paper.get_absolute_url()}")

    expect(page.locator("a.pdf-link")).to_have_attribute(
        "href", "https://arxiv.org/pdf/2409.01234v2"
    )
    expect(page.locator("p.authors.byline")).to_contain_text("+2")
    expect(page.locator(".topic-reasons")).to_contain_text("cosine similarity 0.71")
    page.get_by_text("Cite", exact=True).click()
    bibtex = page.locator("#cite-bibtex")
    expect(bibtex).to_be_visible()
    expect(bibtex).to_contain_text(
        "title = {{Two-dimensional electron gas at SrTiO$_3$ interfaces}}"
    )
    expect(bibtex).to_contain_text("van Beethoven, Ludwig and Ünal, Zoë")
    copy = page.locator('button[data-copy="cite-bibtex"]')
    expect(copy).to_have_text("Copy BibTeX")
    expect(copy).to_be_visible()  # the script shows it where it can copy
    copy.click()
    expect(copy).to_have_text("Copied")
    assert "SrTiO$_3$" in page.evaluate("navigator.clipboard.readText()")
    page.get_by_text("Wrong topic?").click()
    looks(page, screenshot, "paper-cite-open")

    # The report form posts with its CSRF token (the live server enforces it).
    page.get_by_label("Why is this paper not about Oxide interfaces? (optional)").fill(
        "It is condensed matter, not oxides in general."
    )
    page.get_by_role("button", name="Report to the curators").click()
    expect(page.locator("ul.messages")).to_contain_text("the curators will review")
    expect(page.locator(".topic-reasons")).to_contain_text("You reported this topic as wrong")
    report = AssignmentReport.objects.get()
    assert report.note == "It is condensed matter, not oxides in general."
    assert errors == []


def test_save_from_a_card_then_read_note_and_export(
    topic_with_paper, browser, live_server, client, screenshot
):
    from playwright.sync_api import expect

    topic, paper = topic_with_paper
    reader = UserFactory(username="reader")
    page = signed_in_page(browser, live_server, client, reader)
    errors = watch_console(page)

    page.goto(f"{live_server.url}{topic.get_absolute_url()}")
    # The title's TeX is drawn by KaTeX (static/js/math.js): find the card by its words.
    card = page.locator("article.card", has_text="Two-dimensional electron gas")
    save = card.get_by_role("button", name="Save")
    save.click()
    expect(card.locator("button.save-button")).to_have_text("Saved")
    expect(card.locator("button.save-button")).to_have_attribute("aria-pressed", "true")
    assert page.url.endswith(topic.get_absolute_url())  # in place, no reload
    assert LibraryItem.objects.filter(user=reader, paper=paper).exists()
    looks(page, screenshot, "topic-card-saved")

    page.get_by_role("link", name="Saved", exact=True).click()
    expect(page.locator("h1")).to_contain_text("Saved papers")
    item = page.locator(f"#saved-{paper.pk}")
    expect(item.locator("h3.card-title")).to_contain_text("Two-dimensional electron gas")
    item.get_by_role("button", name="Mark read").click()
    item = page.locator(f"#saved-{paper.pk}")
    expect(item).to_have_class("library-item read")
    expect(item.get_by_role("button", name="Mark unread")).to_be_visible()
    item.get_by_text("Add a note").click()
    item.get_by_label("Note on this paper").fill("Compare the mobility with 2409.05555.")
    item.get_by_role("button", name="Save note").click()
    expect(page.locator("ul.messages")).to_contain_text("Note saved.")
    expect(page.locator(f"#saved-{paper.pk}").get_by_label("Note on this paper")).to_have_value(
        "Compare the mobility with 2409.05555."
    )
    stored = LibraryItem.objects.get(user=reader, paper=paper)
    assert stored.read_at is not None and stored.note.startswith("Compare the mobility")
    looks(page, screenshot, "library")

    page.goto(f"{live_server.url}/library/?status=unread")
    expect(page.locator(".empty-library")).to_contain_text("No unread papers")
    page.goto(f"{live_server.url}/library/")
    with page.expect_download() as info:
        page.get_by_role("link", name="BibTeX").click()
    download = info.value
    assert download.suggested_filename == "library.bib"
    text = open(download.path(), encoding="utf-8").read()
    assert text.startswith("@misc{arXiv_2409.01234,")
    assert "title = {{Two-dimensional electron gas at SrTiO$_3$ interfaces}}" in text
    assert (
        "author = {van Beethoven, Ludwig and Ünal, Zoë and Lee, Ann and Li, Bo and Ng, Cy}" in text
    )
    assert "doi = {10.1234/oxide.2026}" in text
    assert errors == []
