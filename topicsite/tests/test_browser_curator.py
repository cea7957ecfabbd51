"""A curator at work in a real browser (Debian's chromium through Playwright, against the live
server): log in to the admin, find an assignment of the reference topic in the Assignments
changelist, reject it with the admin action; the paper leaves the topic page, and stays gone
after every paper is tagged again (``manage.py tag --all``) with a rule that matches it. Each
page is looked at 1280 and 375 px wide (no sideways scrolling), screenshots kept."""

import importlib
import re
from io import StringIO

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth.models import Group, Permission
from django.core.management import call_command
from django.utils import timezone

from papers.tests.factories import PaperFactory
from topics.models import Assignment, Topic
from topics.tagging.rules import compile_rule
from topics.tests.factories import UserFactory
from topicsite.tests.browser import DESKTOP, look

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# The data migration that makes the "Curators" group (its name starts with a digit).
curators_migration = importlib.import_module("topics.migrations.0003_curators_group")

SLUG = "llm-agent-training"
PASSWORD = "correct horse battery staple"  # topics.tests.factories.UserFactory's
# A rule for the reference topic (it has none: its papers came with the reference page) that
# matches the paper the curator rejects, so re-tagging would bring it back but for the decision.
RULE = "agent*"


@pytest.fixture
def reference_topic(transactional_db) -> Topic:
    for command in ("load_categories", "import_reference_page"):
        call_command(command, stdout=StringIO())
    topic = Topic.objects.get(slug=SLUG)
    Topic.objects.filter(pk=topic.pk).update(rule_query=RULE)  # set by a curator earlier
    return topic


@pytest.fixture
def curator(transactional_db):
    """A staff user in the "Curators" group. The group is made again as its migration makes it
    when the flush after an earlier transactional test removed it (permissions come back with
    the flush's post_migrate, data migrations' rows do not)."""
    group, _ = Group.objects.get_or_create(name=curators_migration.GROUP_NAME)
    for app_label, codenames in curators_migration.CURATOR_PERMISSIONS.items():
        group.permissions.add(
            *Permission.objects.filter(content_type__app_label=app_label, codename__in=codenames)
        )
    assert group.permissions.count() == sum(
        len(codenames) for codenames in curators_migration.CURATOR_PERMISSIONS.values()
    )
    user = UserFactory(username="curator", is_staff=True)
    user.groups.add(group)
    # Staff sign in on allauth's page, which wants a verified address.
    EmailAddress.objects.create(user=user, email=user.email, verified=True, primary=True)
    return user


def card_titles(page) -> list[str]:
    return [title.strip() for title in page.locator("article").locator("h2, h3").all_inner_texts()]


def test_a_curator_rejects_an_assignment_and_retagging_does_not_bring_it_back(
    reference_topic, curator, browser, live_server, screenshot
):
    from playwright.sync_api import expect

    assignment = (
        Assignment.objects.filter(topic=reference_topic)
        .select_related("paper")
        .order_by("-paper__submitted", "-paper_id")
        .first()
    )
    paper = assignment.paper
    assert compile_rule(RULE).matches(f"{paper.title} {paper.abstract}")
    topic_url = f"{live_server.url}/topics/{SLUG}/"

    reader = browser.new_context(viewport=DESKTOP).new_page()
    reader.goto(topic_url)
    assert paper.title in card_titles(reader)

    # Log in to the admin (on allauth's page, with its rate limits) and open the Assignments
    # changelist.
    page = browser.new_page(viewport=DESKTOP)
    page.goto(f"{live_server.url}/admin/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next="))
    look(page, screenshot, "01-admin-login")
    page.get_by_label("Email").fill(curator.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.locator("main form button[type=submit]").last.click()
    expect(page.locator("#site-name")).to_be_visible()
    look(page, screenshot, "02-admin-index")
    page.locator("#content-main").get_by_role("link", name="Assignments", exact=True).click()
    expect(page.locator("h1")).to_contain_text("assignment")

    # Find the paper's assignments by its title; pick the reference topic's row.
    page.locator("#searchbar").fill(paper.title)
    page.locator("#changelist-search [type=submit]").click()
    row = page.locator("#result_list tbody tr").filter(has_text=reference_topic.name)
    expect(row).to_have_count(1)
    look(page, screenshot, "03-assignments-found")
    row.locator("input.action-select").check()
    page.locator("select[name=action]").select_option("reject")
    page.locator("button[name=index]").click()
    expect(page.locator(".messagelist")).to_contain_text("1 assignment(s) marked rejected by you.")
    look(page, screenshot, "04-assignment-rejected")
    assignment.refresh_from_db()
    assert (assignment.state, assignment.decided_by) == (Assignment.State.REJECTED, curator)

    # The paper has left the topic page.
    reader.goto(topic_url)
    assert paper.title not in card_titles(reader)
    look(reader, screenshot, "05-topic-page-after-rejection")

    # A new paper that the rule matches, then every paper tagged again (tasks run eagerly).
    today = timezone.localdate()
    arrived = PaperFactory(
        title="Training web agents with curricula", abstract="Agents learn.", submitted=today
    )
    out = StringIO()
    call_command("tag", "--all", stdout=out)
    assert out.getvalue().startswith("Tagged ")

    reader.goto(topic_url)
    titles = card_titles(reader)
    assert arrived.title in titles  # the rule ran ...
    assert paper.title not in titles  # ... and the curator's decision held
    assignment.refresh_from_db()
    assert (assignment.state, assignment.decided_by) == (Assignment.State.REJECTED, curator)
    look(reader, screenshot, "06-topic-page-after-retagging")
