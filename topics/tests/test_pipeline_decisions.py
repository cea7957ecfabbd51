"""Curator decisions are final: after decisions of every kind, the whole pipeline runs again
(harvest the recorded arXiv responses -> tag -> train -> tag again -> retrain -> re-import the
reference page -> harvest again) and every decision is still there, unchanged.

Real data (the recorded responses and the reference page), real PostgreSQL and Redis, tasks
run in-process; transactions really commit, so the tagging that ingestion queues on commit
runs as it would on a worker.
"""

from io import StringIO

import pytest
from django.core.management import call_command

from topics.assignments import assignment_add, assignment_decide
from topics.models import Assignment, ClassifierModel
from topics.tasks import retrain_classifier
from topics.tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

ACCEPTED = Assignment.State.ACCEPTED
PENDING = Assignment.State.PENDING
REJECTED = Assignment.State.REJECTED
RULE = Assignment.Source.RULE
CLASSIFIER = Assignment.Source.CLASSIFIER
IMPORT = Assignment.Source.IMPORT
CURATOR = Assignment.Source.CURATOR


def run(*args):
    call_command(*args, stdout=StringIO())


def decision_state(pks):
    return {
        row["id"]: row
        for row in Assignment.objects.filter(pk__in=pks).values(
            "id",
            "paper_id",
            "topic_id",
            "state",
            "source",
            "score",
            "decided_by_id",
            "decided_at",
        )
    }


def first_machine(source, state, *, exclude_papers=()):
    return (
        Assignment.objects.filter(source=source, state=state, decided_by__isnull=True)
        .exclude(paper_id__in=exclude_papers)
        .order_by("pk")
        .first()
    )


def test_curator_decisions_survive_the_whole_pipeline():
    # The site as the demo leaves it, with a trained classifier applied to every paper.
    for step in (
        ("load_categories",),
        ("import_reference_page",),
        ("harvest", "--recorded"),
        ("load_demo_taxonomy",),
        ("tag", "--all"),
        ("retrain", "--sync"),
    ):
        run(*step)
    assert Assignment.objects.filter(source=CLASSIFIER, state=ACCEPTED).exists()
    assert Assignment.objects.filter(source=CLASSIFIER, state=PENDING).exists()

    # Decisions of every kind, by two curators.
    alice, bob = UserFactory(username="alice"), UserFactory(username="bob")
    used: list[int] = []

    def decide(source, state, decision, user):
        assignment = first_machine(source, state, exclude_papers=used)
        assert assignment is not None, f"no machine {source} {state} assignment to decide"
        used.append(assignment.paper_id)
        return assignment_decide(assignment=assignment, state=decision, user=user)

    decisions = [
        decide(RULE, ACCEPTED, ACCEPTED, alice),  # accept a machine assignment
        decide(RULE, ACCEPTED, REJECTED, alice),  # reject one the rules made
        decide(CLASSIFIER, ACCEPTED, REJECTED, bob),  # reject one the classifier made
        decide(CLASSIFIER, PENDING, ACCEPTED, bob),  # accept one from the review queue
        decide(CLASSIFIER, PENDING, REJECTED, alice),  # reject one from the review queue
        decide(IMPORT, ACCEPTED, REJECTED, bob),  # reject an import assignment
    ]
    # Add a new assignment where nothing placed the paper, and one over a machine assignment.
    rejected_rule = decisions[1]
    target = (
        Assignment.objects.filter(source=RULE, decided_by__isnull=True)
        .exclude(topic_id=rejected_rule.topic_id)
        .order_by("pk")
        .first()
        .topic
    )
    paper_without = (
        Assignment.objects.filter(source=IMPORT)
        .exclude(paper__assignments__topic=target)
        .order_by("pk")
        .first()
        .paper
    )
    decisions.append(assignment_add(paper=paper_without, topic=target, user=alice))
    over_machine = first_machine(CLASSIFIER, ACCEPTED, exclude_papers=used)
    decisions.append(assignment_add(paper=over_machine.paper, topic=over_machine.topic, user=bob))
    pks = [decision.pk for decision in decisions]
    before = decision_state(pks)
    assert len(before) == 8
    assert {row["source"] for row in before.values()} == {RULE, CLASSIFIER, IMPORT, CURATOR}
    assert all(row["decided_at"] is not None for row in before.values())
    versions = ClassifierModel.objects.count()

    # The whole pipeline again.
    run("harvest", "--recorded")
    run("tag", "--all")
    run("retrain", "--sync")
    run("tag", "--all")
    retrain_classifier.delay()
    run("import_reference_page")
    run("harvest", "--recorded")

    assert decision_state(pks) == before
    # The pipeline did run: two more versions, machine assignments all around the decisions.
    assert ClassifierModel.objects.filter(active=True).get().version == versions + 2
    decided_papers = {row["paper_id"] for row in before.values()}
    assert Assignment.objects.filter(paper_id__in=decided_papers, decided_by__isnull=True).exists()
    # The last word in each decision's history is still the curator's.
    for pk, row in before.items():
        latest = Assignment.history.filter(id=pk).order_by("-history_id").first()
        assert (latest.state, latest.decided_by_id, latest.decided_at) == (
            row["state"],
            row["decided_by_id"],
            row["decided_at"],
        )


def classifier_assignments():
    return set(
        Assignment.objects.filter(source=CLASSIFIER).values_list("paper_id", "topic_id", "state")
    )


def test_retraining_on_the_same_labels_does_not_widen_topics():
    """The classifier's own assignments are not labels: retraining on unchanged labels gives
    the same assignments (an earlier version left them out of the negatives, and every nightly
    retrain filed more papers into every topic)."""
    for step in (
        ("load_categories",),
        ("import_reference_page",),
        ("harvest", "--recorded"),
        ("load_demo_taxonomy",),
        ("tag", "--all"),
        ("retrain", "--sync"),
    ):
        run(*step)
    first = classifier_assignments()
    assert first

    run("retrain", "--sync")
    run("retrain", "--sync")

    assert classifier_assignments() == first
