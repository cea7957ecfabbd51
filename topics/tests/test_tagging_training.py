"""Classifier training (``topics.tagging.training``): labels and their weights, storing and
activating versions, applying a new version, and the retraining task, command and schedule."""

import importlib
from io import StringIO

import pytest
from django.apps import apps as django_apps
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from papers.tests.factories import PaperFactory
from topics.models import Assignment, ClassifierModel, Topic
from topics.tagging import classifier as classifier_module
from topics.tagging import training as training_module
from topics.tagging.classifier import TopicClassifier, classifier_settings
from topics.tagging.engine import papers_tag
from topics.tagging.training import classifier_apply, classifier_train
from topics.tasks import RETRAIN_LOCK_KEY, retrain_classifier
from topics.tests.factories import AssignmentFactory, TopicFactory, UserFactory

pytestmark = pytest.mark.django_db

RULE = Assignment.Source.RULE
CLASSIFIER = Assignment.Source.CLASSIFIER
PENDING = Assignment.State.PENDING
REJECTED = Assignment.State.REJECTED


@pytest.fixture(autouse=True)
def _forget_loaded_classifier(monkeypatch):
    """Each test starts with no classifier cached in this process."""
    monkeypatch.setattr(classifier_module, "_loaded", None)


@pytest.fixture
def labelled(categories, settings):
    """Two topics with rules, enough rule labels for a model each (min_positives 5 here)."""
    settings.TOPICS_CLASSIFIER_MIN_POSITIVES = 5
    agents = TopicFactory(name="Agents", rule_query="agents")
    proofs = TopicFactory(name="Proofs", rule_query="proofs")
    sparse = TopicFactory(name="Sparse", rule_query="sparse")
    papers = [
        PaperFactory(title=f"Language agents plan tasks {n}", abstract="Agents use tools.")
        for n in range(8)
    ] + [
        PaperFactory(title=f"Formal proofs of lemmas {n}", abstract="Proofs in Lean.")
        for n in range(8)
    ]
    papers.append(PaperFactory(title="Sparse matrices", abstract="Sparse solvers."))
    papers_tag(paper_ids=[paper.pk for paper in papers])
    return {"agents": agents, "proofs": proofs, "sparse": sparse, "papers": papers}


def test_classifier_train_stores_an_active_version_with_its_metrics(
    labelled, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        stored = classifier_train(apply=False)

    assert not callbacks
    stored.refresh_from_db()
    assert (stored.version, stored.active, stored.topic_count) == (1, True, 2)
    assert stored.label_count == 17
    topics = stored.metrics["topics"]
    assert topics[str(labelled["agents"].pk)]["status"] == "trained"
    assert topics[str(labelled["agents"].pk)]["name"] == "Agents"
    assert topics[str(labelled["agents"].pk)]["positives"] == 8
    assert topics[str(labelled["sparse"].pk)]["status"] == "too few positives"
    assert (stored.metrics["trained"], stored.metrics["fallback"]) == (2, 1)
    assert stored.metrics["papers"] == 17
    loaded = TopicClassifier.loads(stored.artifact)
    assert set(loaded.topic_ids.tolist()) == {labelled["agents"].pk, labelled["proofs"].pk}


def test_retraining_activates_the_new_version_and_keeps_the_newest(labelled, settings):
    settings.TOPICS_CLASSIFIER_KEEP_VERSIONS = 2
    versions = [classifier_train(apply=False).version for _ in range(3)]

    assert versions == [1, 2, 3]
    assert list(ClassifierModel.objects.values_list("version", "active")) == [
        (3, True),
        (2, False),
    ]


def test_classifier_train_applies_the_new_version_to_every_paper_on_commit(
    labelled, django_capture_on_commit_callbacks
):
    unlabelled = PaperFactory(title="Agents everywhere", abstract="More agents and tools.")
    with django_capture_on_commit_callbacks(execute=True):
        classifier_train()

    assert Assignment.objects.filter(paper=unlabelled, topic=labelled["agents"]).exists()
    machine = Assignment.objects.get(paper=unlabelled, topic=labelled["agents"])
    assert machine.source == RULE  # the rule matches "agents": a rule match wins
    assert classifier_module._loaded is not None


def test_classifier_apply_queues_tagging_of_every_paper_in_chunks(
    labelled, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        result = classifier_apply()
    assert (result.papers, result.chunks) == (17, 1)
    assert len(callbacks) == 1
    assert classifier_apply(paper_ids=[labelled["papers"][0].pk]).papers == 1


def test_training_labels_weigh_curator_decisions_and_skip_related_topics(labelled, settings):
    settings.TOPICS_CLASSIFIER_CURATOR_WEIGHT = 7.0
    agents, proofs = labelled["agents"], labelled["proofs"]
    child = TopicFactory(name="Planning agents", parent=agents)
    papers = labelled["papers"]
    curator = UserFactory()
    # A curator rejects a rule assignment, and places a proofs paper in Agents' child.
    rejection = Assignment.objects.get(paper=papers[0], topic=agents)
    rejection.state, rejection.decided_by, rejection.decided_at = REJECTED, curator, timezone.now()
    rejection.save()
    AssignmentFactory(
        paper=papers[8],
        topic=child,
        source=Assignment.Source.CURATOR,
        score=None,
        decided_by=curator,
        decided_at=timezone.now(),
    )
    # The classifier's own and pending assignments are no labels.
    AssignmentFactory(paper=papers[9], topic=agents, source=CLASSIFIER, score=0.9)
    AssignmentFactory(paper=papers[16], topic=proofs, source=CLASSIFIER, state=PENDING, score=0.7)

    training = training_module._training_set(classifier_settings())

    row_of = {paper.pk: row for row, paper in enumerate(sorted(papers, key=lambda p: p.pk))}
    examples = training.examples[agents.pk]
    by_row = {
        int(row): (bool(label), float(weight))
        for row, label, weight in zip(examples.rows, examples.labels, examples.weights, strict=True)
    }
    assert by_row[row_of[papers[0].pk]] == (False, 7.0)  # the curator's rejection
    assert by_row[row_of[papers[1].pk]] == (True, 1.0)  # a rule label
    assert by_row[row_of[papers[12].pk]] == (False, 1.0)  # another topic's paper
    # In Agents' child, so no negative of Agents.
    assert row_of[papers[8].pk] not in by_row
    # Placed in Agents by the classifier only: that is no label, so like any other labelled
    # paper it is a negative of Agents (otherwise each retrain would widen the topic).
    assert by_row[row_of[papers[9].pk]] == (False, 1.0)
    assert training.examples[child.pk].labels.tolist() == [True]
    assert training.examples[child.pk].weights.tolist() == [7.0]
    # The pending classifier assignment is no label of Proofs: its paper counts as any other
    # labelled paper does there, a negative.
    proofs_rows = dict(
        zip(
            training.examples[proofs.pk].rows.tolist(),
            training.examples[proofs.pk].labels.tolist(),
            strict=True,
        )
    )
    assert proofs_rows[row_of[papers[16].pk]] is False
    assert proofs_rows[row_of[papers[10].pk]] is True
    assert training.label_count == 17 + 1  # the rejection replaced a label; one added


def test_training_ignores_inactive_topics(labelled):
    Topic.objects.filter(pk=labelled["proofs"].pk).update(active=False)

    training = training_module._training_set(classifier_settings())

    assert labelled["proofs"].pk not in training.examples
    assert len(training.texts) == 9  # the papers with a label on an active topic


# --- the retrain task and command ------------------------------------------------------------


def test_retrain_task_trains_once_at_a_time(labelled):
    cache.add(RETRAIN_LOCK_KEY, "running", 60)
    assert retrain_classifier.delay().get() is None
    assert not ClassifierModel.objects.exists()

    cache.delete(RETRAIN_LOCK_KEY)
    assert retrain_classifier.delay().get() == 1
    assert ClassifierModel.objects.get().active
    assert cache.get(RETRAIN_LOCK_KEY) is None


def test_retrain_task_releases_the_lock_when_training_fails(labelled, settings):
    settings.TOPICS_CLASSIFIER_TARGET_PRECISION = 2
    with pytest.raises(Exception, match="TOPICS_CLASSIFIER_TARGET_PRECISION"):
        retrain_classifier.delay()
    assert cache.get(RETRAIN_LOCK_KEY) is None


def test_retrain_command_prints_the_new_version(labelled, django_capture_on_commit_callbacks):
    out = StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("retrain", "--sync", "--no-apply", verbosity=2, stdout=out)
    output = out.getvalue()
    assert "Classifier v1: 2 topics with a model, 1 fall back to their rules" in output
    assert "trained on 17 papers, 17 labels." in output
    assert "  Sparse: too few positives, 1 positives" in output
    assert "  Agents: trained, 8 positives, threshold" in output

    out = StringIO()
    call_command("retrain", stdout=out)
    assert "Classifier v2:" in out.getvalue()


def test_retrain_command_refuses_no_apply_without_sync():
    with pytest.raises(CommandError, match="--no-apply only works with --sync"):
        call_command("retrain", "--no-apply")


def test_the_nightly_retrain_schedule_migration(transactional_db):
    migration = importlib.import_module("topics.migrations.0003_retrain_schedule")
    schema_editor = type("SchemaEditor", (), {"connection": connection})()
    PeriodicTask.objects.filter(name=migration.TASK_NAME).delete()

    migration.retrain_schedule_create(django_apps, schema_editor)
    migration.retrain_schedule_create(django_apps, schema_editor)  # a second run adds nothing

    task = PeriodicTask.objects.get(name=migration.TASK_NAME)
    assert task.task == "topics.tasks.retrain_classifier" == retrain_classifier.name
    assert (task.crontab.minute, task.crontab.hour, str(task.crontab.timezone)) == (
        "30",
        "3",
        "UTC",
    )
    assert task.enabled

    migration.retrain_schedule_delete(django_apps, schema_editor)
    assert not PeriodicTask.objects.filter(name=migration.TASK_NAME).exists()


def test_an_umbrella_topic_whose_papers_are_all_other_topics_gets_no_model(labelled):
    """The reference page's own topic holds every paper of its topics: a model of it would
    learn only what the other labelled papers are not, and take papers none of them wants."""
    umbrella = TopicFactory(name="Everything", rule_query="agents OR proofs")
    papers_tag(paper_ids=[paper.pk for paper in labelled["papers"]])
    assert Assignment.objects.filter(topic=umbrella).count() == 16

    stored = classifier_train(apply=False)
    figures = stored.metrics["topics"][str(umbrella.pk)]
    assert (figures["status"], figures["positives"]) == ("covered by other topics", 16)
    classifier = TopicClassifier.loads(stored.artifact)
    assert not classifier.has_topic(umbrella.pk)
    assert classifier.has_topic(labelled["agents"].pk)
