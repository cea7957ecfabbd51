"""The tagging engine (``topics.tagging.engine.papers_tag``) by rules and the classifier: the
right assignments, idempotent, curator decisions and imports untouched, stale machine
assignments removed, machine writes in the history; the rule index finds what trying every rule
finds."""

import datetime as dt
import json
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer

from papers.signals import papers_stored
from papers.tests.factories import PaperFactory
from topics.assignments import assignment_decide
from topics.models import Assignment, ClassifierModel, Topic
from topics.tagging import classifier as classifier_module
from topics.tagging import engine
from topics.tagging.classifier import TopicClassifier, tokenize
from topics.tagging.engine import papers_tag
from topics.tasks import tag_papers
from topics.tests.factories import AssignmentFactory, TopicFactory, UserFactory

pytestmark = pytest.mark.django_db

REFERENCE_PAGE = Path(__file__).resolve().parents[1] / "data" / "llm-agent-training.json"
RULE = Assignment.Source.RULE
CLASSIFIER = Assignment.Source.CLASSIFIER
IMPORT = Assignment.Source.IMPORT
ACCEPTED = Assignment.State.ACCEPTED
PENDING = Assignment.State.PENDING
REJECTED = Assignment.State.REJECTED


@pytest.fixture(autouse=True)
def _forget_loaded_classifier(monkeypatch):
    """Each test starts with no classifier cached in this process."""
    monkeypatch.setattr(classifier_module, "_loaded", None)


@pytest.fixture(params=["sql", "orm"])
def write_path(request, monkeypatch):
    """Run a test with PostgreSQL's write path (COPY and INSERT/UPDATE/DELETE ... RETURNING
    into the history) and with the ORM path other databases (the embedded SQLite) take."""
    if request.param == "orm":
        monkeypatch.setattr(engine, "_plan_write_sql", engine._plan_write_orm)
    return request.param


def assignment_rows():
    """Every assignment column, so a comparison catches any rewrite (``updated_at`` too)."""
    return list(Assignment.objects.order_by("pk").values())


def pairs(**filters):
    return set(Assignment.objects.filter(**filters).values_list("paper__title", "topic__name"))


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
    assert pairs(source=RULE) == {("A reagent database", "Not agents")}
    # Storing also queued its embedding; once its vector was stored it was tagged again by
    # meaning too: at most suggestions for review, nothing accepted on a zero-shot guess.
    assert not pairs(source="semantic", state="accepted")
    assert pairs(state="accepted") == {("A reagent database", "Not agents")}


def test_papers_tag_scores_on_one_blas_thread_and_gives_the_rest_back(library, monkeypatch):
    """A batch's matrix products are small: a second OpenBLAS thread only spin-waits, and
    beside another busy process made the semantic scoring 10-30 times slower. The caller's
    thread count is restored afterwards."""
    import threadpoolctl

    def blas_threads():
        return {
            info["num_threads"]
            for info in threadpoolctl.threadpool_info()
            if info["user_api"] == "blas"
        }

    before = blas_threads()
    seen = []
    judge = engine._wanted_assignments

    def spying(*args, **kwargs):
        seen.append(blas_threads())
        return judge(*args, **kwargs)

    monkeypatch.setattr(engine, "_wanted_assignments", spying)
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        papers_tag(paper_ids=[paper.pk for paper in library[0].values()])
        assert blas_threads() == {2}
    assert seen == [{1}]
    assert blas_threads() == before


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

    monkeypatch.setattr(engine, "TAG_BATCH_SIZE", 1)
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


def test_a_curator_decision_made_during_tagging_still_wins(library, monkeypatch, write_path):
    """A curator decides between the tagging run's read and its writes: the writes' own guards
    (not only the plan made from the read) keep the decision."""
    papers, topics = library
    to_update = AssignmentFactory(
        paper=papers["rl agents"], topic=topics["RL"], source="classifier", score=0.2
    )
    to_delete = AssignmentFactory(paper=papers["reagents"], topic=topics["RL"], source=RULE)
    curator = UserFactory()
    write = engine._plan_write_sql

    def decide_then_write(*args, **kwargs):
        Assignment.objects.filter(pk__in=[to_update.pk, to_delete.pk]).update(
            decided_by=curator, decided_at=timezone.now(), state=REJECTED
        )
        return write(*args, **kwargs)

    monkeypatch.setattr(engine, "_plan_write_sql", decide_then_write)
    papers_tag(paper_ids=[papers["rl agents"].pk, papers["reagents"].pk])

    rows = {row.pk: row for row in Assignment.objects.filter(decided_by=curator)}
    assert set(rows) == {to_update.pk, to_delete.pk}
    assert rows[to_update.pk].source == "classifier"
    assert {row.state for row in rows.values()} == {REJECTED}


def test_a_decision_whose_curator_account_is_gone_is_still_final(library):
    papers, topics = library
    orphaned = AssignmentFactory(
        paper=papers["reagents"],
        topic=topics["RL"],
        source=RULE,
        state=ACCEPTED,
        decided_by=None,
        decided_at=timezone.now() - dt.timedelta(days=1),
    )
    before = Assignment.objects.filter(pk=orphaned.pk).values().get()

    papers_tag(paper_ids=[papers["reagents"].pk])

    assert Assignment.objects.filter(pk=orphaned.pk).values().get() == before


# --- the history of machine writes -----------------------------------------------------------


def history_rows(**filters):
    return list(
        Assignment.history.filter(**filters)
        .order_by("history_id")
        .values_list("id", "history_type", "source", "state", "score", "history_change_reason")
    )


def test_machine_writes_are_recorded_in_the_history_per_batch(library, write_path):
    papers, topics = library
    paper_ids = [paper.pk for paper in papers.values()]

    papers_tag(paper_ids=paper_ids)

    created = sorted(Assignment.objects.values_list("id", flat=True))
    assert sorted(pk for pk, *_ in history_rows()) == created
    assert {row[1:] for row in history_rows()} == {("+", RULE, ACCEPTED, 1.0, "tagging: rules")}

    stale = Assignment.objects.get(paper=papers["strings"], topic=topics["RL"])
    changed = Assignment.objects.get(paper=papers["reagents"], topic=topics["Not agents"])
    Assignment.objects.filter(pk=changed.pk).update(source=CLASSIFIER, state=PENDING, score=0.3)
    Assignment.history.filter(id=changed.pk).delete()
    Topic.objects.filter(pk=topics["RL"].pk).update(rule_query='"rl agents"')

    papers_tag(paper_ids=paper_ids)

    assert history_rows(id=stale.pk)[-1][:2] == (stale.pk, "-")
    assert history_rows(id=changed.pk) == [(changed.pk, "~", RULE, ACCEPTED, 1.0, "tagging: rules")]
    # Everything written is in the history; nothing unwritten is: the two RL assignments
    # went, one changed back.
    assert len(history_rows()) == len(created) - 1 + 2 + 1


def test_without_tagging_history_machine_writes_leave_no_history(library, settings, write_path):
    settings.TOPICS_TAGGING_HISTORY = False
    papers, topics = library
    paper_ids = [paper.pk for paper in papers.values()]
    papers_tag(paper_ids=paper_ids)
    Topic.objects.filter(pk=topics["RL"].pk).update(rule_query="")

    papers_tag(paper_ids=paper_ids)

    assert Assignment.objects.exists()
    assert not pairs(topic=topics["RL"])
    assert not Assignment.history.exists()


# --- the classifier in tagging ---------------------------------------------------------------


def stored_classifier(
    weights: dict[Topic, dict[str, float]],
    *,
    intercept: float = -2.0,
    threshold: float = 0.75,
    version: int = 1,
) -> ClassifierModel:
    """Store and activate a hand-made classifier: per topic, a weight per word.

    The vocabulary is those words with equal IDF, so a text's features are its words'
    sublinear TF, L2-normalised: a text whose only known word is ``w`` scores
    ``sigmoid(weights[w] + intercept)`` (``agents`` at 4.0 with the default intercept:
    0.8808); one with ``w`` and ``v`` once each ``sigmoid((weights[w] + weights[v]) / sqrt 2
    + intercept)``.
    """
    vocabulary = sorted({word for words in weights.values() for word in words})
    counter = CountVectorizer(
        vocabulary=vocabulary, tokenizer=tokenize, token_pattern=None, lowercase=False
    )
    counts = counter.fit_transform([" ".join(vocabulary)])
    tfidf = TfidfTransformer(sublinear_tf=True).fit(counts)
    topics = list(weights)
    coef = np.array(
        [[weights[topic].get(word, 0.0) for topic in topics] for word in vocabulary],
        dtype=np.float32,
    )
    classifier = TopicClassifier(
        counter=counter,
        tfidf=tfidf,
        topic_ids=np.array([topic.pk for topic in topics]),
        coef=coef,
        intercept=np.full(len(topics), intercept, dtype=np.float32),
        thresholds=np.full(len(topics), threshold),
        metrics={},
    )
    ClassifierModel.objects.update(active=False)
    return ClassifierModel.objects.create(
        version=version, artifact=classifier.dumps(), topic_count=len(topics), active=True
    )


@pytest.fixture
def agents_papers(categories):
    make = PaperFactory
    return {
        # Only "agents" among the known words: 0.8808, accepted.
        "agents": make(title="Agents at work", abstract="We study agents."),
        # "agents" and "tools": sigmoid(4 / sqrt 2 - 2) = 0.6960, pending review.
        "agents and tools": make(title="Agents and tools", abstract=""),
        # Only "tools": sigmoid(-2) = 0.1192, nothing.
        "tools": make(title="Tools for proofs", abstract="Proof assistants."),
    }


def classifier_rows(**filters):
    return set(
        Assignment.objects.filter(**filters).values_list(
            "paper__title", "topic__name", "source", "state", "score"
        )
    )


def test_classifier_scores_become_accepted_and_pending_assignments(agents_papers, write_path):
    agents = TopicFactory(name="Agents")
    stored_classifier({agents: {"agents": 4.0, "tools": 0.0}})

    papers_tag(paper_ids=[paper.pk for paper in agents_papers.values()])

    assert classifier_rows() == {
        ("Agents at work", "Agents", CLASSIFIER, ACCEPTED, 0.8808),
        ("Agents and tools", "Agents", CLASSIFIER, PENDING, 0.696),
    }
    assert {row[-1] for row in history_rows()} == {"tagging: rules and classifier v1"}


def test_tagging_with_the_classifier_twice_writes_nothing(agents_papers, write_path):
    agents = TopicFactory(name="Agents", rule_query="proofs")
    stored_classifier({agents: {"agents": 4.0, "tools": 0.0}})
    paper_ids = [paper.pk for paper in agents_papers.values()]
    assert papers_tag(paper_ids=paper_ids) == 3
    first = assignment_rows()

    assert papers_tag(paper_ids=paper_ids) == 0
    assert assignment_rows() == first


def test_a_rule_match_wins_over_the_classifier(agents_papers):
    agents = TopicFactory(name="Agents", rule_query='"agents and tools"')
    stored_classifier({agents: {"agents": 4.0, "tools": 0.0}})

    papers_tag(paper_ids=[paper.pk for paper in agents_papers.values()])

    assert classifier_rows() == {
        ("Agents at work", "Agents", CLASSIFIER, ACCEPTED, 0.8808),
        ("Agents and tools", "Agents", RULE, ACCEPTED, 1.0),
    }


def test_the_classifier_never_touches_curator_decisions_or_imports(agents_papers, write_path):
    agents = TopicFactory(name="Agents")
    tools = TopicFactory(name="Tools")
    stored_classifier({agents: {"agents": 4.0, "tools": 0.0}, tools: {"tools": 4.0}})
    curator = UserFactory()
    decided_at = timezone.now() - dt.timedelta(days=2)
    rejected = AssignmentFactory(
        paper=agents_papers["agents"],
        topic=agents,
        source=CLASSIFIER,
        state=REJECTED,
        score=0.9,
        decided_by=curator,
        decided_at=decided_at,
    )
    accepted_pending = AssignmentFactory(
        paper=agents_papers["tools"],
        topic=agents,
        source=CLASSIFIER,
        state=ACCEPTED,
        score=0.7,
        decided_by=curator,
        decided_at=decided_at,
    )
    imported = AssignmentFactory(
        paper=agents_papers["agents and tools"], topic=agents, source=IMPORT, score=None
    )
    protected = {pk: row for pk, row in ((r["id"], r) for r in assignment_rows())}

    papers_tag(paper_ids=[paper.pk for paper in agents_papers.values()])
    papers_tag(paper_ids=[paper.pk for paper in agents_papers.values()])

    after = {row["id"]: row for row in assignment_rows()}
    for assignment in (rejected, accepted_pending, imported):
        assert after[assignment.pk] == protected[assignment.pk]
    # Tagging went on around them.
    assert classifier_rows(decided_by__isnull=True, source=CLASSIFIER) == {
        ("Tools for proofs", "Tools", CLASSIFIER, ACCEPTED, 0.8808),
        ("Agents and tools", "Tools", CLASSIFIER, PENDING, 0.696),
    }


def test_a_new_model_moves_machine_assignments_and_removes_stale_ones(agents_papers, write_path):
    agents = TopicFactory(name="Agents")
    dropped = TopicFactory(name="Dropped")
    stored_classifier({agents: {"agents": 4.0, "tools": 0.0}, dropped: {"tools": 5.0}})
    paper_ids = [paper.pk for paper in agents_papers.values()]
    papers_tag(paper_ids=paper_ids)
    assert ("Tools for proofs", "Dropped", CLASSIFIER, ACCEPTED, 0.9526) in classifier_rows()

    # v2: "tools" now counts for Agents too, and Dropped has no model any more.
    stored_classifier({agents: {"agents": 4.0, "tools": 2.0}}, version=2)
    written = papers_tag(paper_ids=paper_ids)

    assert classifier_rows() == {
        ("Agents at work", "Agents", CLASSIFIER, ACCEPTED, 0.8808),
        # sigmoid(6 / sqrt 2 - 2) = 0.904: from pending to accepted.
        ("Agents and tools", "Agents", CLASSIFIER, ACCEPTED, 0.904),
        # sigmoid(2 - 2) = 0.5: below the review band [0.65, 0.75).
    }
    assert written == 3  # one changed, two removed (Dropped's)
    reasons = {row[-1] for row in history_rows() if row[1] in "~-"}
    assert reasons == {"tagging: rules and classifier v2"}


def test_without_an_active_classifier_its_assignments_are_left_alone(agents_papers):
    agents = TopicFactory(name="Agents")
    stored_classifier({agents: {"agents": 4.0}})
    paper_ids = [paper.pk for paper in agents_papers.values()]
    papers_tag(paper_ids=paper_ids)
    before = assignment_rows()
    assert before

    ClassifierModel.objects.update(active=False)
    assert papers_tag(paper_ids=paper_ids) == 0
    assert assignment_rows() == before


def test_inactive_topics_get_no_classifier_assignments(agents_papers):
    agents = TopicFactory(name="Agents", active=False)
    stored_classifier({agents: {"agents": 4.0}})

    papers_tag(paper_ids=[paper.pk for paper in agents_papers.values()])

    assert not Assignment.objects.exists()


def test_a_score_that_barely_moved_is_not_rewritten(agents_papers):
    agents = TopicFactory(name="Agents")
    stored_classifier({agents: {"agents": 4.0}})
    paper_ids = [agents_papers["agents"].pk]
    papers_tag(paper_ids=paper_ids)
    # sigmoid(1.97) = 0.8776: 0.003 below 0.8808.
    stored_classifier({agents: {"agents": 3.97}}, version=2)

    assert papers_tag(paper_ids=paper_ids) == 0
    assert classifier_rows() == {("Agents at work", "Agents", CLASSIFIER, ACCEPTED, 0.8808)}


def test_queries_do_not_grow_with_the_number_of_papers_with_the_classifier(categories):
    agents = TopicFactory(name="Agents", rule_query="theory")
    stored_classifier({agents: {"agents": 4.0, "tools": 0.0}})
    papers_tag(paper_ids=[])  # loads the classifier: two queries once per process

    def queries_for(count):
        new = [
            PaperFactory(title=f"Agents and tools {n}", abstract="Agents.") for n in range(count)
        ]
        stale = [
            AssignmentFactory(paper=paper, topic=agents, source=RULE) for paper in new[: count // 2]
        ]
        with CaptureQueriesContext(connection) as context:
            papers_tag(paper_ids=[paper.pk for paper in new])
        assert Assignment.objects.filter(paper__in=new, source=CLASSIFIER).count() == count
        assert not Assignment.objects.filter(pk__in=[a.pk for a in stale], source=RULE).exists()
        return len(context.captured_queries)

    assert queries_for(2) == queries_for(20)


# --- the rule index ------------------------------------------------------------------------------


def test_the_rule_index_finds_what_trying_every_rule_finds(categories, monkeypatch):
    """With many keyword rules tagging looks rules up by the papers' words, with few by the
    literals their terms need: the same assignments as trying every rule on every paper."""
    call_command("import_openalex_topics", "--field", "Computer Science", stdout=StringIO())
    for name, query in [
        ("Hyphens", '"self-improving agents" OR "part-of-speech tagging"'),
        ("Punctuation", '"c++" OR gpt-4 OR "(ALD)"'),
        ("Prefix", "agent*"),
        ("Negation", "NOT physics"),
        ("Both", "language models"),
        ("Unicode", '"Straße" OR naïve'),
    ]:
        TopicFactory(name=name, rule_query=query)
    reference = json.loads(REFERENCE_PAGE.read_text(encoding="utf-8"))
    papers = [
        PaperFactory(title=paper["title"], abstract=paper["abstract"])
        for paper in reference["papers"]
    ] + [
        PaperFactory(title="Self-improving agents write C++", abstract="With GPT-4 and (ALD)."),
        PaperFactory(title="Part-of-speech tagging", abstract="A naïve tagger for STRASSE."),
        PaperFactory(title="Neural networks", abstract="Deep learning and machine learning."),
    ]
    paper_ids = [paper.pk for paper in papers]

    monkeypatch.setattr(engine, "RULE_INDEX_MIN_RULES", 10**9)
    monkeypatch.setattr(engine, "LITERAL_INDEX_MIN_RULES", 10**9)
    assert engine._tagger().rule_index is None
    papers_tag(paper_ids=paper_ids)
    every_rule = pairs()

    for minimum, literal_minimum, kind in [
        (10**9, 1, engine.LiteralIndex),
        (1, 1, engine.RuleIndex),
    ]:
        Assignment.objects.all().delete()
        monkeypatch.setattr(engine, "RULE_INDEX_MIN_RULES", minimum)
        monkeypatch.setattr(engine, "LITERAL_INDEX_MIN_RULES", literal_minimum)
        assert isinstance(engine._tagger().rule_index, kind)
        papers_tag(paper_ids=paper_ids)
        assert pairs() == every_rule, kind
    names = {name for _, name in every_rule}
    assert {"Hyphens", "Punctuation", "Prefix", "Negation", "Both", "Unicode"} <= names
    assert len(names) >= 10  # OpenAlex topics matched too


@pytest.mark.django_db(transaction=True)
def test_a_curator_accepting_in_another_connection_while_tagging_deletes_wins(library, write_path):
    """The rule stops matching and tagging is about to delete the machine assignment when a
    curator, on another connection, accepts it: the decision stands, whichever commits first
    (the guarded DELETE skips a decided row; a row tagging locked first is made again with the
    decision once tagging commits)."""
    from topics.tests.test_hardening import finish, run_concurrently

    papers, topics = library
    doomed = AssignmentFactory(paper=papers["reagents"], topic=topics["RL"], source=RULE)
    curator = UserFactory()
    threads = []

    def decide_first(execute, sql, params, many, context):
        if 'DELETE FROM "topics_assignment"' in sql and not threads:
            threads.append(
                run_concurrently(
                    lambda: assignment_decide(
                        assignment=Assignment.objects.get(pk=doomed.pk),
                        state=ACCEPTED,
                        user=curator,
                    )
                )
            )
        return execute(sql, params, many, context)

    with connection.execute_wrapper(decide_first):
        papers_tag(paper_ids=[papers["reagents"].pk])
    assert threads, "tagging deleted nothing"
    finish(threads[0])

    kept = Assignment.objects.get(paper=papers["reagents"], topic=topics["RL"])
    assert (kept.source, kept.state, kept.decided_by) == (RULE, ACCEPTED, curator)
    assert kept.history.latest("history_id").decided_by_id == curator.pk
    before = Assignment.objects.filter(pk=kept.pk).values().get()
    papers_tag(paper_ids=[papers["reagents"].pk])
    assert Assignment.objects.filter(pk=kept.pk).values().get() == before


def test_a_machine_assignment_stored_without_evidence_is_given_it(library, write_path):
    """Assignments written before tagging said why get their evidence on the next run;
    those that have it are not rewritten."""
    papers, topics = library
    paper_ids = [paper.pk for paper in papers.values()]
    papers_tag(paper_ids=paper_ids)
    silent = Assignment.objects.get(paper=papers["strings"], topic=topics["RL"])
    Assignment.objects.filter(pk=silent.pk).update(evidence={})
    others = {
        row["pk"]: row["updated_at"]
        for row in Assignment.objects.exclude(pk=silent.pk).values("pk", "updated_at")
    }

    assert papers_tag(paper_ids=paper_ids) == 1

    silent.refresh_from_db()
    assert silent.evidence == {"rule": '"reinforcement learning"', "categories": False}
    assert {
        row["pk"]: row["updated_at"]
        for row in Assignment.objects.exclude(pk=silent.pk).values("pk", "updated_at")
    } == others
