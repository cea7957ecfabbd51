"""The paper page's topics: each says why the paper is there (``topics.reasons``); a
signed-in reader reports a wrong topic, which puts the assignment in the curators' review
queue until a curator decides it (``topics.assignments.assignment_report``)."""

import html
import re

import pytest
from django.test import Client
from django.urls import reverse

from papers.tests.factories import PaperFactory
from topics.assignments import REPORTS_PER_HOUR, assignment_decide, assignment_report
from topics.models import Assignment, AssignmentReport
from topics.reasons import assignment_reasons
from topics.tests.conftest import ASSIGNMENTS
from topics.tests.factories import AssignmentFactory, TopicFactory, UserFactory

pytestmark = pytest.mark.django_db


def report_url(assignment):
    return reverse("topics:report", kwargs={"pk": assignment.pk})


def text_of(page):
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"(?s)<[^>]+>", " ", page)))


@pytest.fixture
def placed():
    """A paper in four topics, each placed differently (and one rejected, not shown)."""
    paper = PaperFactory(arxiv_id="2409.01234")
    curator = UserFactory(username="curator", is_staff=True)
    made = {
        "rule": AssignmentFactory(
            paper=paper, topic=TopicFactory(name="Agents"), evidence={"rule": '"tool use"'}
        ),
        "classifier": AssignmentFactory(
            paper=paper,
            topic=TopicFactory(name="Benchmarks"),
            source=Assignment.Source.CLASSIFIER,
            score=0.82,
            evidence={"terms": [["benchmark", 1.2], ["suite", 0.7], ["eval", 0.4], ["x", 0.1]]},
        ),
        "semantic": AssignmentFactory(
            paper=paper,
            topic=TopicFactory(name="Chemistry"),
            source=Assignment.Source.SEMANTIC,
            score=0.61,
            evidence={"cosine": 0.61, "nearest": [], "labels": 3},
        ),
        "curator": AssignmentFactory(
            paper=paper,
            topic=TopicFactory(name="Datasets"),
            source=Assignment.Source.CURATOR,
            score=None,
            decided_by=curator,
        ),
        "rejected": AssignmentFactory(
            paper=paper, topic=TopicFactory(name="Elsewhere"), state=Assignment.State.REJECTED
        ),
    }
    return paper, made


def test_reasons_say_why_in_readers_words(placed):
    _paper, made = placed
    assert assignment_reasons(made["rule"]) == ['Matches the topic\'s rule: "tool use"']
    assert assignment_reasons(made["classifier"]) == [
        "Classifier score 0.82. Words that counted most: benchmark, suite, eval."
    ]
    assert assignment_reasons(made["semantic"]) == [
        "Close in meaning to the topic (cosine similarity 0.61)."
    ]
    assert assignment_reasons(made["curator"]) == ["Placed here by a curator."]
    imported = AssignmentFactory(source=Assignment.Source.IMPORT, evidence={})
    assert assignment_reasons(imported) == ["Listed in the topic when it was imported."]


def test_paper_page_lists_each_topic_with_why_and_a_link(
    client, placed, django_assert_max_num_queries
):
    paper, made = placed

    page = client.get(paper.get_absolute_url()).content.decode()
    text = text_of(page)

    for name in ("Agents", "Benchmarks", "Chemistry", "Datasets"):
        assert name in text
    assert "Elsewhere" not in text
    assert f'href="{made["rule"].topic.get_absolute_url()}"' in page
    assert "Classifier score 0.82" in text
    assert "cosine similarity 0.61" in text
    assert "Placed here by a curator." in text
    assert "Wrong topic?" not in text  # anonymous readers: no form (the page is cached)


def test_signed_in_reader_reports_a_wrong_topic_into_the_review_queue(client, placed):
    paper, made = placed
    reader = UserFactory(username="reader")
    client.force_login(reader)
    page = client.get(paper.get_absolute_url()).content.decode()
    assert page.count("Wrong topic?") == 4
    assert f'action="{report_url(made["semantic"])}"' in page

    response = client.post(report_url(made["semantic"]), {"note": "  It is about physics.  "})

    assert response.status_code == 302
    assert response["Location"] == f"{paper.get_absolute_url()}#topic-reason-{made['semantic'].pk}"
    report = AssignmentReport.objects.get()
    assert (report.reporter, report.note) == (reader, "It is about physics.")
    assert list(Assignment.objects.reported()) == [made["semantic"]]
    page = client.get(paper.get_absolute_url()).content.decode()
    assert page.count("Wrong topic?") == 3
    assert "You reported this topic as wrong" in page

    # Another reader's open report is theirs: this reader may still report the topic.
    client.force_login(UserFactory(username="second"))
    assert client.get(paper.get_absolute_url()).content.decode().count("Wrong topic?") == 4


def test_one_open_report_per_reader_and_assignment(placed):
    _paper, made = placed
    reader = UserFactory(username="reader")
    first, opened = assignment_report(assignment=made["rule"], user=reader, note="no")
    again, opened_again = assignment_report(assignment=made["rule"], user=reader, note="still no")

    assert opened and not opened_again
    assert again.pk == first.pk and AssignmentReport.objects.get().note == "no"

    # A curator decides: the report is closed; the assignment leaves the queue.
    curator = UserFactory(username="cur", is_staff=True)
    assignment_decide(assignment=made["rule"], state="accepted", user=curator)
    assert not Assignment.objects.reported().exists()
    # Reporting again after the decision opens it again.
    reopened, opened = assignment_report(assignment=made["rule"], user=reader, note="really")
    assert opened and reopened.pk == first.pk
    assert list(Assignment.objects.reported()) == [made["rule"]]


def test_reports_are_rate_limited_per_reader(client):
    reader = UserFactory(username="busy")
    client.force_login(reader)
    assignments = [AssignmentFactory() for _ in range(REPORTS_PER_HOUR + 1)]
    for assignment in assignments[:REPORTS_PER_HOUR]:
        assert client.post(report_url(assignment)).status_code == 302

    response = client.post(report_url(assignments[-1]))

    assert response.status_code == 429
    assert b"in the last hour" in response.content
    assert AssignmentReport.objects.count() == REPORTS_PER_HOUR


def test_bad_reports_are_named_and_write_nothing(client, placed):
    _paper, made = placed
    anonymous = Client()
    response = anonymous.post(report_url(made["rule"]))
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")

    client.force_login(UserFactory(username="reader"))
    response = client.post(report_url(made["rule"]), {"note": "x" * 501})
    assert response.status_code == 400 and b"at most 500 characters" in response.content
    assert client.post(reverse("topics:report", kwargs={"pk": 999999})).status_code == 404
    assert client.post(report_url(made["rejected"])).status_code == 404
    assert client.get(report_url(made["rule"])).status_code == 405
    assert not AssignmentReport.objects.exists()


def test_the_admin_review_queue_shows_reported_assignments(client, placed):
    _paper, made = placed
    assignment_report(assignment=made["curator"], user=UserFactory(username="r"), note="wrong")
    curator = UserFactory(username="ada", is_staff=True, is_superuser=True)
    client.force_login(curator)

    queue = client.get(reverse(ASSIGNMENTS), {"review": "queue"})
    reported = client.get(reverse(ASSIGNMENTS), {"review": "reported"})

    assert made["curator"] in list(queue.context["cl"].result_list)
    assert list(reported.context["cl"].result_list) == [made["curator"]]
    change = client.get(reverse("admin:topics_assignment_change", args=[made["curator"].pk]))
    assert "Reported as a wrong topic by r" in html.unescape(change.content.decode())
    assert "“wrong”" in html.unescape(change.content.decode())


def test_paper_page_queries_do_not_grow_with_its_topics(client):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(UserFactory(username="reader"))
    few, many = PaperFactory(), PaperFactory()
    AssignmentFactory(paper=few)
    for _ in range(8):
        AssignmentFactory(paper=many, evidence={"rule": "agents"})
    reporter = UserFactory(username="reader")
    assignment_report(assignment=many.assignments.first(), user=reporter)

    counts = []
    for paper in (few, many):
        with CaptureQueriesContext(connection) as queries:
            assert client.get(paper.get_absolute_url()).status_code == 200
        counts.append(len(queries))

    assert counts[0] == counts[1]
