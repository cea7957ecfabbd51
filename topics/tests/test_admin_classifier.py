"""The classifier admin (``topics.admin.classifier``): stored versions, retraining on demand
and who may ask for it; and, on an assignment's page, the words that raised its score."""

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from papers.tests.factories import PaperFactory
from topics.models import Assignment, ClassifierModel
from topics.tagging.training import classifier_train
from topics.tests.conftest import (
    messages_of,
)
from topics.tests.factories import AssignmentFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def labelled(tree):
    """Twelve accepted papers in each of two topics with distinct vocabularies."""
    vocabulary = {
        "planning": "Monte Carlo tree search planning for long-horizon agents",
        "language": "Syntax and morphology of low-resource languages",
    }
    for slug, text in vocabulary.items():
        for number in range(12):
            paper = PaperFactory(title=f"{text} {number}", abstract=f"{text}, study {number}.")
            AssignmentFactory(paper=paper, topic=tree[slug], source="rule", score=1.0)
    return tree


def test_retrain_now_trains_a_new_version_a_curator_can_read(
    curator_client, labelled, settings, django_capture_on_commit_callbacks
):
    settings.TOPICS_CLASSIFIER_MIN_POSITIVES = 5
    changelist = reverse("admin:topics_classifiermodel_changelist")
    assert 'value="Retrain now"' in curator_client.get(changelist).content.decode()

    with django_capture_on_commit_callbacks(execute=True):
        response = curator_client.post(reverse("admin:topics_classifiermodel_retrain"), follow=True)

    assert messages_of(response)[0].startswith("Queued a retraining of the classifier")
    version = ClassifierModel.objects.get(active=True)
    page = curator_client.get(
        reverse("admin:topics_classifiermodel_change", args=[version.pk])
    ).content.decode()
    assert "Planning" in page and "trained" in page
    assert curator_client.get(reverse("admin:topics_classifiermodel_retrain")).status_code == 405


def test_staff_without_the_change_permission_cannot_retrain(client, tree):
    viewer = UserFactory(username="viewer", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_classifiermodel"))
    client.force_login(viewer)
    changelist = reverse("admin:topics_classifiermodel_changelist")
    assert 'value="Retrain now"' not in client.get(changelist).content.decode()
    assert client.post(reverse("admin:topics_classifiermodel_retrain")).status_code == 403
    assert not ClassifierModel.objects.exists()


def test_an_assignment_page_shows_the_words_that_raised_its_score(
    curator_client, labelled, settings, monkeypatch
):
    settings.TOPICS_CLASSIFIER_MIN_POSITIVES = 5
    # Each process keeps the last loaded version by number, and every test's v1 is another
    # model (the database rolls back between tests): forget any loaded one.
    monkeypatch.setattr("topics.tagging.classifier._loaded", None)
    assignment = Assignment.objects.filter(topic=labelled["planning"]).first()
    url = reverse("admin:topics_assignment_change", args=[assignment.pk])
    before = curator_client.get(url).content.decode()
    assert "No machine evidence" in before and "Classifier words" not in before  # no model yet

    classifier_train(apply=False)

    why = curator_client.get(url).content.decode()
    why = why[why.index("Classifier words:") :]
    assert any(word in why[:2000] for word in ("carlo", "monte", "planning", "horizon"))
