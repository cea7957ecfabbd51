"""Adversarial input on the reader features of the topics app: reports, author pages."""

import pytest
from django.test import Client

from papers.tests.factories import PaperFactory
from topics.models import AssignmentReport
from topics.services import topic_create
from topics.tests.factories import AssignmentFactory, UserFactory


@pytest.fixture
def assignment(db):
    topic = topic_create(name="Agents", slug="agents")
    return AssignmentFactory(paper=PaperFactory(), topic=topic, state="accepted")


def test_report_note_with_nul_is_400_not_500(assignment):
    client = Client()
    client.force_login(UserFactory(username="hostile"))
    response = client.post(
        f"/topics/assignments/{assignment.pk}/report/", {"note": "wrong\x00topic"}
    )
    assert response.status_code == 400
    assert not AssignmentReport.objects.exists()


def test_report_without_csrf_token_is_refused(assignment):
    client = Client(enforce_csrf_checks=True)
    client.force_login(UserFactory(username="hostile"))
    response = client.post(f"/topics/assignments/{assignment.pk}/report/", {"note": ""})
    assert response.status_code == 403
    assert not AssignmentReport.objects.exists()
