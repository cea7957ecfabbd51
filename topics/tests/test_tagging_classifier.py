"""``topics.tagging.classifier``: thresholds, fitting on the real recorded arXiv records, scoring,
explanations, storage, settings and the per-process cache of the active version."""

from __future__ import annotations

import io

import joblib
import numpy as np
import pytest
from django.core.exceptions import ImproperlyConfigured

from papers.sources.recorded import recorded_sources
from papers.taxonomy import UnknownCategory, get_category
from topics.models import ClassifierModel
from topics.tagging import classifier as classifier_module
from topics.tagging.classifier import (
    ClassifierLoadError,
    ClassifierSettings,
    TopicClassifier,
    TopicExamples,
    classifier_active,
    classifier_explain,
    classifier_settings,
    paper_text,
    threshold_for_precision,
    tokenize,
)
from topics.tests.factories import TopicFactory

MATH, HEP_TH, FEW, ALL = 1, 2, 3, 4


@pytest.fixture(autouse=True)
def _forget_loaded_classifier(monkeypatch):
    """Each test starts with no classifier cached in this process."""
    monkeypatch.setattr(classifier_module, "_loaded", None)


@pytest.fixture(scope="module")
def records():
    """The real arXiv records in ``papers/recorded/`` (1,317 papers), parsed without a
    database: ``(folded text, set of archives)`` per paper."""
    papers = {}
    for source in recorded_sources():
        for chunk in source.chunks():
            for record in chunk.records:
                archives = set()
                for code in record.categories:
                    try:
                        archives.add(get_category(code).archive)
                    except UnknownCategory:
                        continue
                papers[record.arxiv_id] = (paper_text(record.title, record.abstract), archives)
    return list(papers.values())


def archive_examples(records, archive: str, *, keep_positives: int | None = None):
    rows = np.arange(len(records))
    labels = np.array([archive in archives for _, archives in records])
    if keep_positives is not None:
        positives = np.flatnonzero(labels)[keep_positives:]
        labels[positives] = False
        rows = np.setdiff1d(rows, positives)
        labels = labels[rows]
    return TopicExamples(rows=rows, labels=labels, weights=np.ones(len(rows)))


@pytest.fixture(scope="module")
def fitted(records):
    texts = [text for text, _ in records]
    examples = {
        MATH: archive_examples(records, "math"),
        HEP_TH: archive_examples(records, "hep-th"),
        # Only five positives: below min_positives.
        FEW: archive_examples(records, "cs", keep_positives=5),
        # Every paper positive: nothing to tell it from.
        ALL: TopicExamples(
            rows=np.arange(len(texts)),
            labels=np.ones(len(texts), dtype=bool),
            weights=np.ones(len(texts)),
        ),
    }
    return texts, TopicClassifier.fit(texts, examples, target_precision=0.8, min_positives=10)


# --- thresholds ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (0.75, (0.6, 0.75, 1.0)),  # the fourth cut: 3 of 4 right, every positive found
        (0.8, (0.8, 1.0, 2 / 3)),  # the fourth is too imprecise: stop at the second
        (1.0, (0.8, 1.0, 2 / 3)),
    ],
)
def test_threshold_for_precision_takes_the_lowest_threshold_reaching_the_target(target, expected):
    labels = [True, True, False, True, False, False]
    scores = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]
    assert threshold_for_precision(labels, scores, target) == pytest.approx(expected)


def test_threshold_for_precision_never_cuts_between_tied_scores():
    labels = [True, False, True]
    scores = [0.9, 0.9, 0.5]
    # Cutting at 0.9 takes both tied papers: precision 1/2; at 0.5 all three: 2/3.
    assert threshold_for_precision(labels, scores, 0.6) == pytest.approx((0.5, 2 / 3, 1.0))
    assert threshold_for_precision(labels, scores, 0.7) is None


def test_threshold_for_precision_without_positives_is_none():
    assert threshold_for_precision([False, False], [0.9, 0.1], 0.5) is None


# --- fitting ---------------------------------------------------------------------------------


def test_fit_trains_topics_with_enough_labels_to_the_target_precision(fitted, records):
    _, classifier = fitted
    assert set(classifier.topic_ids.tolist()) == {MATH, HEP_TH}
    for topic_id in (MATH, HEP_TH):
        metrics = classifier.metrics[topic_id]
        assert metrics["status"] == "trained"
        assert metrics["precision"] >= 0.8
        assert 0 < metrics["recall"] <= 1
        assert 0 < metrics["threshold"] < 1
        assert classifier.threshold(topic_id) == metrics["threshold"]
    math_papers = sum("math" in archives for _, archives in records)
    assert classifier.metrics[MATH]["positives"] == math_papers
    assert classifier.metrics[MATH]["negatives"] == len(records) - math_papers


def test_fit_leaves_topics_without_enough_labels_to_their_rules(fitted):
    _, classifier = fitted
    assert classifier.metrics[FEW]["status"] == "too few positives"
    assert classifier.metrics[FEW]["positives"] == 5
    assert classifier.metrics[ALL]["status"] == "too few negatives"
    for topic_id in (FEW, ALL):
        assert not classifier.has_topic(topic_id)
        assert classifier.metrics[topic_id]["threshold"] is None


def test_fit_with_a_precision_no_topic_can_reach_trains_none(records):
    texts = [text for text, _ in records]
    # Labels that say nothing about the text: every third paper.
    labels = np.arange(len(texts)) % 3 == 0
    examples = {
        MATH: TopicExamples(rows=np.arange(len(texts)), labels=labels, weights=np.ones(len(texts)))
    }

    classifier = TopicClassifier.fit(texts, examples, target_precision=0.95)

    assert classifier.topic_count == 0
    assert classifier.metrics[MATH]["status"] == "target precision not reached"
    assert list(classifier.candidates(texts[:5], margin=0.1)) == []


@pytest.mark.parametrize(
    ("examples", "options", "message"),
    [
        ({}, {"target_precision": 0}, "target_precision"),
        ({}, {"folds": 1}, "folds"),
        (
            {7: TopicExamples(rows=np.array([0, 1]), labels=np.array([True]), weights=np.ones(2))},
            {},
            "topic 7: rows, labels and weights differ",
        ),
        (
            {7: TopicExamples(rows=np.array([5]), labels=np.array([True]), weights=np.ones(1))},
            {},
            "topic 7: a row is outside the 2 texts",
        ),
    ],
)
def test_fit_refuses_bad_input_naming_it(examples, options, message):
    with pytest.raises(ValueError, match=message):
        TopicClassifier.fit(["a text", "another text"], examples, **options)


# --- scoring ---------------------------------------------------------------------------------


def test_counts_are_what_the_fitted_count_vectorizer_gives(fitted):
    texts, classifier = fitted
    sample = [
        *texts[:200],
        paper_text("LLM-based agents", "Tool use, “quoted”, naïve Straße; x_y + unknownword"),
        "",
    ]
    fast = classifier.counts(sample)
    assert (abs(fast - classifier.counter.transform(sample)) > 0).nnz == 0
    expected = classifier.tfidf.transform(classifier.counter.transform(sample))
    assert np.allclose(classifier.features(sample).toarray(), expected.toarray())


def test_tokenize_splits_on_punctuation_symbols_and_spaces():
    assert tokenize(paper_text("LLM-based Agents (GUI)", "x_y: 3.5 naïve")) == [
        "llm",
        "based",
        "agents",
        "gui",
        "x",
        "y",
        "3",
        "5",
        "naïve",
    ]


def test_candidates_are_the_pairs_within_the_margin_or_above(fitted):
    texts, classifier = fitted
    sample = texts[:400]
    scores = classifier.scores(sample)
    assert scores.shape == (400, 2)
    assert ((scores >= 0) & (scores <= 1)).all()

    margin = 0.1
    found = {(c.row, c.topic_id): c for c in classifier.candidates(sample, margin=margin)}
    assert found
    for column, topic_id in enumerate(classifier.topic_ids.tolist()):
        threshold = classifier.threshold(topic_id)
        lower = max(threshold - margin, threshold / 2)
        for row in range(len(sample)):
            score = round(float(scores[row, column]), 4)
            candidate = found.get((row, topic_id))
            if score >= lower:
                assert candidate is not None
                assert candidate.score == score
                assert candidate.accepted is (score >= threshold)
            else:
                assert candidate is None
    assert {c.accepted for c in found.values()} == {True, False}


def test_candidates_of_nothing_are_nothing(fitted):
    _, classifier = fitted
    assert list(classifier.candidates([], margin=0.1)) == []


def test_explain_gives_the_words_that_raised_the_score_largest_first(fitted):
    texts, classifier = fitted
    scores = classifier.scores(texts)[:, classifier.topic_ids.tolist().index(MATH)]
    text = texts[int(np.argmax(scores))]

    words = classifier.explain(text, MATH, limit=5)

    assert 1 <= len(words) <= 5
    weights = [weight for _, weight in words]
    assert weights == sorted(weights, reverse=True)
    assert all(weight > 0 for weight in weights)
    assert {word for word, _ in words} <= set(tokenize(text))
    assert classifier.explain(text, FEW) == []


# --- storage ---------------------------------------------------------------------------------


def test_dumps_and_loads_give_the_same_classifier(fitted):
    texts, classifier = fitted
    copy = TopicClassifier.loads(classifier.dumps())
    assert copy.topic_ids.tolist() == classifier.topic_ids.tolist()
    assert copy.metrics == classifier.metrics
    assert np.array_equal(copy.scores(texts[:50]), classifier.scores(texts[:50]))
    assert copy.explain(texts[0], MATH) == classifier.explain(texts[0], MATH)


def test_loads_refuses_bytes_that_are_not_a_classifier():
    with pytest.raises(ValueError, match="not a stored classifier"):
        TopicClassifier.loads(b"not joblib at all")
    for state in ({"format": 999}, {"format": 1, "vectorizer": None}):
        other = io.BytesIO()
        joblib.dump(state, other)
        with pytest.raises(ValueError, match="format 1"):
            TopicClassifier.loads(other.getvalue())


# --- settings --------------------------------------------------------------------------------


def test_classifier_settings_default():
    assert classifier_settings() == ClassifierSettings()
    assert ClassifierSettings().target_precision == 0.8
    assert ClassifierSettings().min_positives == 10


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("TOPICS_CLASSIFIER_TARGET_PRECISION", 1.5),
        ("TOPICS_CLASSIFIER_MIN_POSITIVES", 1),
        ("TOPICS_CLASSIFIER_MIN_POSITIVES", True),
        ("TOPICS_CLASSIFIER_REVIEW_MARGIN", "0.1"),
        ("TOPICS_CLASSIFIER_KEEP_VERSIONS", 0),
    ],
)
def test_a_malformed_setting_is_named(settings, name, value):
    setattr(settings, name, value)
    with pytest.raises(ImproperlyConfigured, match=name):
        classifier_settings()


# --- the active stored classifier ------------------------------------------------------------


def store(classifier: TopicClassifier, version: int, *, active: bool = True) -> ClassifierModel:
    return ClassifierModel.objects.create(
        version=version,
        artifact=classifier.dumps(),
        topic_count=classifier.topic_count,
        active=active,
    )


@pytest.mark.django_db
def test_classifier_active_is_none_without_an_active_version(fitted):
    store(fitted[1], 1, active=False)
    assert classifier_active() is None


@pytest.mark.django_db
def test_classifier_active_loads_once_per_version(fitted, django_assert_num_queries):
    texts, classifier = fitted
    store(classifier, 1)
    with django_assert_num_queries(2):  # the active version, then its artifact
        first = classifier_active()
    assert first.version == 1
    assert np.array_equal(first.scores(texts[:5]), classifier.scores(texts[:5]))
    with django_assert_num_queries(1):  # the version check only
        assert classifier_active() is first

    ClassifierModel.objects.update(active=False)
    store(classifier, 2)
    second = classifier_active()
    assert second is not first
    assert second.version == 2


@pytest.mark.django_db
def test_a_stored_artifact_that_cannot_be_read_fails_loudly():
    ClassifierModel.objects.create(version=4, artifact=b"garbage", active=True)
    with pytest.raises(ClassifierLoadError, match="v4 cannot be loaded"):
        classifier_active()


@pytest.mark.django_db
def test_classifier_explain_uses_the_active_version(fitted):
    texts, classifier = fitted
    topic = TopicFactory()
    paper = type("Paper", (), {"title": "Algebraic curves", "abstract": "Moduli of curves."})
    assert classifier_explain(paper=paper, topic=topic) == []

    relabelled = TopicClassifier.loads(classifier.dumps())
    relabelled.topic_ids[relabelled.topic_ids == MATH] = topic.pk
    store(TopicClassifier.loads(relabelled.dumps()), 1)

    words = classifier_explain(paper=paper, topic=topic, limit=3)
    text = paper_text(paper.title, paper.abstract)
    assert words == classifier.explain(text, MATH, limit=3)
    assert words and words[0][0] in {"curves", "algebraic", "moduli"}
