"""Tagging by rules (``papers_tag``): the right assignments, idempotent, curator decisions and
imports untouched, stale machine assignments removed."""

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from papers.signals import papers_stored
from papers.tests.factories import CategoryFactory, PaperFactory
from topics import services
from topics.models import Assignment, Topic
from topics.services import papers_tag
from topics.tasks import tag_papers
from topics.tests.factories import AssignmentFactory, TopicFactory, UserFactory

pytestmark = pytest.mark.django_db

RULE = Assignment.Source.RULE
ACCEPTED = Assignment.State.ACCEPTED
REJECTED = Assignment.State.REJECTED


def assignment_rows():
    """Every assignment column, so a comparison catches any rewrite (``updated_at`` too)."""
    return list(Assignment.objects.order_by("pk").values())


def pairs(**filters):
    return set(Assignment.objects.filter(**filters).values_list("paper__title", "topic__name"))


@pytest.fixture
def categories():
    return {
        "cs.CL": CategoryFactory(code="cs.CL"),
        "cs.LG": CategoryFactory(code="cs.LG"),
        "hep-th": CategoryFactory(
            code="hep-th",
            archive="hep-th",
            archive_name="High Energy Physics - Theory",
            group="grp_physics",
            group_name="Physics",
        ),
        "math.AG": CategoryFactory(code="math.AG", group="grp_math", group_name="Mathematics"),
    }


@pytest.fixture
def library(categories):
    """Four papers in three archives and topics with every kind of rule."""
    papers = {
        "rl agents": PaperFactory(
            title="Training LLM agents with reinforcement learning",
            abstract="We train language model agents on long-horizon tasks.",
            primary_category=categories["cs.CL"],
        ),
        "strings": PaperFactory(
            title="Agents of string compactification",
            abstract="Flux vacua and the swampland, with an appendix on reinforcement learning.",
            primary_category=categories["hep-th"],
        ),
        "reagents": PaperFactory(
            title="A reagent database",
            abstract="We catalogue reagents. Reinforcement of concrete; learning curves.",
            primary_category=categories["math.AG"],
        ),
        "cross-listed": PaperFactory(
            title="Holographic agents",
            abstract="Language model agents read the AdS/CFT literature.",
            primary_category=categories["hep-th"],
        ),
    }
    papers["cross-listed"].cross_lists.add(categories["cs.CL"])
    topics = {
        "RL": TopicFactory(name="RL", rule_query='"reinforcement learning"'),
        "Agents in CL": TopicFactory(name="Agents in CL", rule_query="agents"),
        "HEP": TopicFactory(name="HEP"),
        "No rule": TopicFactory(name="No rule"),
        "Inactive": TopicFactory(name="Inactive", rule_query="agents", active=False),
        "Not agents": TopicFactory(name="Not agents", rule_query="-agents"),
    }
    topics["Agents in CL"].rule_categories.add(categories["cs.CL"])
    topics["HEP"].rule_categories.add(categories["hep-th"])
    return papers, topics


def test_papers_tag_writes_an_accepted_rule_assignment_per_match(library):
    papers, topics = library
    written = papers_tag(paper_ids=[paper.pk for paper in papers.values()])

    expected = {
        # Phrase in the title; the hep-th paper has it in its abstract.
        ("Training LLM agents with reinforcement learning", "RL"),
        ("Agents of string compactification", "RL"),
        # Query and category: cs.CL as primary category, or as a cross-list.
        ("Training LLM agents with reinforcement learning", "Agents in CL"),
        ("Holographic agents", "Agents in CL"),
        # Categories only: every hep-th paper, primary or cross-listed.
        ("Agents of string compactification", "HEP"),
        ("Holographic agents", "HEP"),
        # NOT: "reagent(s)" is not the word "agents".
        ("A reagent database", "Not agents"),
    }
    assert pairs() == expected
    assert written == len(expected)
    assert set(Assignment.objects.values_list("source", "state", "score", "decided_by")) == {
        (RULE, ACCEPTED, 1.0, None)
    }


def test_papers_tag_twice_leaves_the_same_database(library):
    papers, _ = library
    paper_ids = [paper.pk for paper in papers.values()]
    papers_tag(paper_ids=paper_ids)
    first = assignment_rows()
    assert first

    assert papers_tag(paper_ids=paper_ids) == 0
    assert assignment_rows() == first


def test_the_task_run_twice_leaves_the_same_database(library):
    papers, _ = library
    paper_ids = [paper.pk for paper in papers.values()]
    tag_papers.delay(paper_ids)
    first = assignment_rows()
    tag_papers.delay(paper_ids)
    assert assignment_rows() == first
    assert len(first) == 7


def test_stored_papers_signal_tags_them(library):
    papers, _ = library
    papers_stored.send(sender=None, paper_ids=[papers["reagents"].pk])
    assert pairs() == {("A reagent database", "Not agents")}


def test_curator_decisions_are_never_changed_or_deleted(library):
    papers, topics = library
    curator = UserFactory()
    decided_at = timezone.now() - dt.timedelta(days=3)
    # A rejection of a paper the rule matches must stay a rejection.
    rejected = AssignmentFactory(
        paper=papers["rl agents"],
        topic=topics["RL"],
        source=RULE,
        state=REJECTED,
        score=1.0,
        decided_by=curator,
        decided_at=decided_at,
    )
    # A curator's placement where no rule matches must stay.
    added = AssignmentFactory(
        paper=papers["reagents"],
        topic=topics["RL"],
        source=Assignment.Source.CURATOR,
        state=ACCEPTED,
        score=None,
        decided_by=curator,
        decided_at=decided_at,
    )
    # An accepted rule assignment on a paper the rule no longer matches, decided by a curator.
    kept = AssignmentFactory(
        paper=papers["strings"],
        topic=topics["Agents in CL"],
        source=RULE,
        state=ACCEPTED,
        score=0.4,
        decided_by=curator,
        decided_at=decided_at,
    )
    before = {row["id"]: row for row in assignment_rows()}

    papers_tag(paper_ids=[paper.pk for paper in papers.values()])
    papers_tag(paper_ids=[paper.pk for paper in papers.values()])

    after = {row["id"]: row for row in assignment_rows()}
    for assignment in (rejected, added, kept):
        assert after[assignment.pk] == before[assignment.pk]
    # The rest of the tagging still happened around them.
    assert ("Holographic agents", "Agents in CL") in pairs(decided_by__isnull=True)


def test_import_assignments_are_never_changed_or_deleted(library):
    papers, topics = library
    matching = AssignmentFactory(
        paper=papers["rl agents"], topic=topics["RL"], source="import", score=None
    )
    not_matching = AssignmentFactory(
        paper=papers["reagents"], topic=topics["Agents in CL"], source="import", score=None
    )
    before = assignment_rows()

    papers_tag(paper_ids=[papers["rl agents"].pk, papers["reagents"].pk])

    after = {row["id"]: row for row in assignment_rows()}
    assert [after[row["id"]] for row in before] == before
    assert after[matching.pk]["source"] == "import"
    assert after[not_matching.pk]["source"] == "import"


def test_machine_assignments_to_matched_topics_become_rule_assignments(library):
    papers, topics = library
    classifier = AssignmentFactory(
        paper=papers["rl agents"],
        topic=topics["RL"],
        source=Assignment.Source.CLASSIFIER,
        state=REJECTED,
        score=0.2,
    )
    stale = AssignmentFactory(
        paper=papers["strings"], topic=topics["RL"], source=RULE, state=REJECTED, score=0.5
    )

    papers_tag(paper_ids=[papers["rl agents"].pk, papers["strings"].pk])

    for assignment in (classifier, stale):
        assignment.refresh_from_db()
        assert (assignment.source, assignment.state, assignment.score) == (RULE, ACCEPTED, 1.0)
        assert assignment.decided_by is None


def test_a_rule_that_stops_matching_removes_only_machine_rule_assignments(library):
    papers, topics = library
    paper_ids = [paper.pk for paper in papers.values()]
    papers_tag(paper_ids=paper_ids)
    curator = UserFactory()
    decided = Assignment.objects.get(paper=papers["strings"], topic=topics["RL"])
    decided.decided_by, decided.decided_at = curator, timezone.now()
    decided.save()
    classifier = AssignmentFactory(
        paper=papers["reagents"], topic=topics["RL"], source="classifier", score=0.7
    )
    imported = AssignmentFactory(paper=papers["cross-listed"], topic=topics["RL"], source="import")
    protected = {row["id"]: row for row in assignment_rows()}
    protected = {pk: protected[pk] for pk in (decided.pk, classifier.pk, imported.pk)}

    Topic.objects.filter(pk=topics["RL"].pk).update(rule_query='"deep learning"')
    written = papers_tag(paper_ids=paper_ids)

    assert pairs(topic=topics["RL"]) == {
        ("Agents of string compactification", "RL"),  # the curator decision
        ("A reagent database", "RL"),  # the classifier's
        ("Holographic agents", "RL"),  # the import
    }
    assert written == 1  # the rule assignment of "rl agents" went
    after = {row["id"]: row for row in assignment_rows()}
    for pk, row in protected.items():
        assert after[pk] == row
    # Other topics' assignments did not move.
    assert ("Holographic agents", "HEP") in pairs()


@pytest.mark.parametrize(
    "retire",
    [
        pytest.param({"rule_query": ""}, id="rule cleared"),
        pytest.param({"active": False}, id="topic deactivated"),
    ],
)
def test_rule_assignments_without_a_rule_behind_them_are_removed(library, retire):
    papers, topics = library
    paper_ids = [paper.pk for paper in papers.values()]
    papers_tag(paper_ids=paper_ids)
    curator = UserFactory()
    Assignment.objects.filter(paper=papers["strings"], topic=topics["RL"]).update(
        decided_by=curator, decided_at=timezone.now()
    )
    assert len(pairs(topic=topics["RL"])) == 2

    Topic.objects.filter(pk=topics["RL"].pk).update(**retire)
    papers_tag(paper_ids=paper_ids)

    assert pairs(topic=topics["RL"]) == {("Agents of string compactification", "RL")}


def test_papers_tag_only_touches_the_papers_it_is_given(library):
    papers, topics = library
    other = AssignmentFactory(paper=papers["strings"], topic=topics["No rule"], source=RULE)
    stale = AssignmentFactory(paper=papers["reagents"], topic=topics["RL"], source=RULE)

    papers_tag(paper_ids=[papers["rl agents"].pk])

    assert Assignment.objects.filter(pk__in=[other.pk, stale.pk]).count() == 2
    assert pairs(paper=papers["rl agents"]) == {
        ("Training LLM agents with reinforcement learning", "RL"),
        ("Training LLM agents with reinforcement learning", "Agents in CL"),
    }


def test_a_phrase_does_not_run_from_the_title_into_the_abstract(categories):
    paper = PaperFactory(
        title="Scaling laws for reinforcement",
        abstract="learning rate schedules are studied.",
        primary_category=categories["cs.LG"],
    )
    TopicFactory(name="RL", rule_query='"reinforcement learning"')
    TopicFactory(name="Both", rule_query="reinforcement learning")

    papers_tag(paper_ids=[paper.pk])

    assert pairs() == {("Scaling laws for reinforcement", "Both")}


def test_unknown_ids_and_empty_lists_write_nothing(library):
    assert papers_tag(paper_ids=[]) == 0
    assert papers_tag(paper_ids=[10**9]) == 0
    assert not Assignment.objects.exists()


def test_a_stored_rule_that_no_longer_parses_is_skipped_not_fatal(library):
    papers, topics = library
    Topic.objects.filter(pk=topics["RL"].pk).update(rule_query='("reinforcement learning"')

    papers_tag(paper_ids=[paper.pk for paper in papers.values()])

    assert not pairs(topic=topics["RL"])
    assert len(pairs(topic=topics["HEP"])) == 2


def test_batches_give_the_same_result_as_one_pass(library, monkeypatch):
    papers, _ = library
    paper_ids = [paper.pk for paper in papers.values()]
    papers_tag(paper_ids=paper_ids)
    one_pass = pairs()
    Assignment.objects.all().delete()

    monkeypatch.setattr(services, "TAG_BATCH_SIZE", 1)
    assert papers_tag(paper_ids=paper_ids + paper_ids) == len(one_pass)
    assert pairs() == one_pass


def test_queries_do_not_grow_with_the_number_of_papers(categories):
    TopicFactory(name="RL", rule_query='"reinforcement learning"')
    hep = TopicFactory(name="HEP")
    hep.rule_categories.add(categories["hep-th"])

    def queries_for(count):
        new = [
            PaperFactory(
                abstract="Deep reinforcement learning.", primary_category=categories["hep-th"]
            )
            for _ in range(count)
        ]
        for paper in new:
            paper.cross_lists.add(categories["cs.CL"])
        with CaptureQueriesContext(connection) as context:
            papers_tag(paper_ids=[paper.pk for paper in new])
        assert Assignment.objects.filter(paper__in=new).count() == 2 * count
        return len(context.captured_queries)

    assert queries_for(2) == queries_for(20)


def test_a_curator_decision_made_during_tagging_still_wins(library, monkeypatch):
    """A curator decides between the tagging run's read and its writes: the writes' own guards
    (not only the plan made from the read) keep the decision."""
    papers, topics = library
    to_update = AssignmentFactory(
        paper=papers["rl agents"], topic=topics["RL"], source="classifier", score=0.2
    )
    to_delete = AssignmentFactory(paper=papers["reagents"], topic=topics["RL"], source=RULE)
    curator = UserFactory()
    bulk_create = Assignment.objects.bulk_create

    def decide_then_bulk_create(*args, **kwargs):
        Assignment.objects.filter(pk__in=[to_update.pk, to_delete.pk]).update(
            decided_by=curator, decided_at=timezone.now(), state=REJECTED
        )
        return bulk_create(*args, **kwargs)

    monkeypatch.setattr(Assignment.objects, "bulk_create", decide_then_bulk_create)
    papers_tag(paper_ids=[papers["rl agents"].pk, papers["reagents"].pk])

    rows = {row.pk: row for row in Assignment.objects.filter(decided_by=curator)}
    assert set(rows) == {to_update.pk, to_delete.pk}
    assert rows[to_update.pk].source == "classifier"
    assert {row.state for row in rows.values()} == {REJECTED}
