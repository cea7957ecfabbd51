"""Training the topic classifier: read the training labels (curator decisions, accepted rule and
import assignments), fit a new version, store it as the active one and queue re-tagging with it.
The model itself is :mod:`topics.tagging.classifier`; tagging is :mod:`topics.tagging.engine`.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from papers.models import Paper

from ..models import Assignment, ClassifierModel, Topic
from .classifier import (
    ClassifierSettings,
    TopicClassifier,
    TopicExamples,
    classifier_settings,
    paper_text,
)
from .engine import TAG_CHUNK_SIZE, TagQueueResult, chunked, papers_tag_enqueue

__all__ = ["classifier_apply", "classifier_train"]

logger = logging.getLogger(__name__)

# Papers per query when training reads labels and texts.
TRAINING_READ_CHUNK = 5000


def _curator_decision() -> Q:
    """Assignments a person decided (a decision whose curator account was deleted keeps its
    time)."""
    return Q(decided_by__isnull=False) | Q(decided_at__isnull=False)


def _training_labels() -> Q:
    """Assignments the classifier learns from: curator decisions (accepted or rejected) and
    accepted ``rule`` and ``import`` assignments, on active topics. The classifier's own
    machine-made assignments and pending ones teach nothing."""
    decided = _curator_decision() & Q(
        state__in=[Assignment.State.ACCEPTED, Assignment.State.REJECTED]
    )
    machine = Q(
        decided_by__isnull=True,
        decided_at__isnull=True,
        source__in=[Assignment.Source.RULE, Assignment.Source.IMPORT],
        state=Assignment.State.ACCEPTED,
    )
    return Q(topic__active=True) & (decided | machine)


@dataclass
class _TrainingSet:
    """Texts of the labelled papers and, per active topic with a label, its examples."""

    texts: list[str]
    examples: dict[int, TopicExamples]
    label_count: int
    # Topics left without a model because every paper of theirs is a subtopic's: pk -> positives.
    covered: dict[int, int] = field(default_factory=dict)


def _training_set(config: ClassifierSettings) -> _TrainingSet:
    """Read the labels: the newest ``config.max_papers`` papers with a training label, their
    texts, their labels; build each topic's examples.

    A topic's positives are its accepted labels, its explicit negatives its curator
    rejections; every other labelled paper is an implicit negative, except papers accepted in
    an ancestor or descendant of the topic (a paper about a subtopic is not a negative of the
    parent). The classifier's own assignments play no part: leaving the papers it placed out
    of a topic's negatives let every retrain widen the topic on the same labels. Curator
    decisions weigh ``config.curator_weight``, everything else 1. Topics with fewer than
    ``config.min_positives`` positives get only their explicit labels (they get no model);
    a topic whose every positive is also a positive of smaller topics (not its ancestors) gets
    none either (``covered``: an umbrella over other topics, such as the reference page's own).
    """
    labelled = Assignment.objects.filter(_training_labels())
    paper_ids = list(
        Paper.objects.filter(pk__in=labelled.values("paper_id"))
        .order_by("-submitted", "-id")
        .values_list("pk", flat=True)[: config.max_papers]
    )
    paper_ids.sort()
    row_of = {paper_id: row for row, paper_id in enumerate(paper_ids)}
    texts = [""] * len(paper_ids)
    # (topic pk) -> {row: (label, weight)}
    labels: dict[int, dict[int, tuple[bool, float]]] = defaultdict(dict)
    for chunk in chunked(paper_ids, TRAINING_READ_CHUNK):
        for paper_id, title, abstract in Paper.objects.filter(pk__in=chunk).values_list(
            "pk", "title", "abstract"
        ):
            texts[row_of[paper_id]] = paper_text(title, abstract)
        rows = labelled.filter(paper_id__in=chunk).values_list(
            "paper_id", "topic_id", "state", "decided_by_id", "decided_at"
        )
        for paper_id, topic_id, state, decided_by_id, decided_at in rows:
            decided = decided_by_id is not None or decided_at is not None
            weight = config.curator_weight if decided else 1.0
            labels[topic_id][row_of[paper_id]] = (state == Assignment.State.ACCEPTED, weight)

    paths = dict(Topic.objects.active().values_list("pk", "path"))
    positives = {
        topic_id: {row for row, (label, _) in rows.items() if label}
        for topic_id, rows in labels.items()
    }
    examples: dict[int, TopicExamples] = {}
    covered: dict[int, int] = {}
    for topic_id, explicit in labels.items():
        if len(positives[topic_id]) < config.min_positives:
            examples[topic_id] = _examples(explicit, implicit_negatives=np.zeros(0, dtype=np.int64))
            continue
        path = paths.get(topic_id, "")
        related = [
            other
            for other, other_path in paths.items()
            if other != topic_id
            and other in positives
            and path
            and other_path
            and (other_path.startswith(path) or path.startswith(other_path))
        ]
        ancestors = {other for other in related if path.startswith(paths[other])}
        # The papers of smaller topics (not its ancestors): an umbrella is made of them.
        elsewhere = set().union(
            *(
                rows
                for other, rows in positives.items()
                if other not in ancestors and len(rows) < len(positives[topic_id])
            )
        )
        if positives[topic_id] <= elsewhere:
            # Every paper of it is a paper of a smaller topic, a subtopic or not (the reference
            # page's own topic, whose 30 papers each have their topics on the page): it is an
            # umbrella over them, and a model of it would only learn "not physics" and place
            # papers none of those topics wants (a 2008 paper on investments in "noisy
            # periodic environments" into LLM Agent Training). Covered by the others.
            covered[topic_id] = len(positives[topic_id])
            continue
        excluded = set().union(*(positives[other] for other in related))
        implicit = np.ones(len(paper_ids), dtype=bool)
        implicit[list(excluded | explicit.keys())] = False
        examples[topic_id] = _examples(explicit, implicit_negatives=np.flatnonzero(implicit))
    return _TrainingSet(
        texts=texts,
        examples=examples,
        label_count=sum(len(rows) for rows in labels.values()),
        covered=covered,
    )


def _examples(
    explicit: dict[int, tuple[bool, float]], *, implicit_negatives: np.ndarray
) -> TopicExamples:
    """Explicit ``{row: (label, weight)}`` plus implicit negatives (rows, weight 1)."""
    ordered = sorted(explicit.items())
    return TopicExamples(
        rows=np.concatenate(
            [np.array([row for row, _ in ordered], dtype=np.int64), implicit_negatives]
        ),
        labels=np.concatenate(
            [
                np.array([label for _, (label, _) in ordered], dtype=bool),
                np.zeros(len(implicit_negatives), dtype=bool),
            ]
        ),
        weights=np.concatenate(
            [
                np.array([weight for _, (_, weight) in ordered], dtype=np.float64),
                np.ones(len(implicit_negatives)),
            ]
        ),
    )


def classifier_train(*, apply: bool = True) -> ClassifierModel:
    """Train a new classifier version on the current labels, store it and make it the active
    one; with ``apply``, queue re-tagging of every paper with it once the transaction commits
    (:func:`classifier_apply`).

    Labels, on active topics, from the newest ``TOPICS_CLASSIFIER_MAX_PAPERS`` labelled papers:
    curator decisions (accepted or rejected; weight ``TOPICS_CLASSIFIER_CURATOR_WEIGHT``) and
    accepted machine-made ``rule`` and ``import`` assignments (weight 1); every other labelled
    paper is a negative of the topic (weight 1), but papers accepted in an ancestor or
    descendant of it and papers the classifier itself placed there. Topics with fewer than
    ``TOPICS_CLASSIFIER_MIN_POSITIVES`` accepted labels, or whose held-out precision cannot
    reach ``TOPICS_CLASSIFIER_TARGET_PRECISION``, get no model and are tagged by their rules
    alone. Fitting happens outside any transaction; storing is one transaction: the new row
    (version = the highest stored + 1, ``artifact`` the joblib bytes, ``metrics`` per topic),
    the previous active version deactivated, versions beyond the newest
    ``TOPICS_CLASSIFIER_KEEP_VERSIONS`` deleted.

    ``metrics``: ``{"papers", "labels", "features", "target_precision", "min_positives",
    "trained", "fallback", "topics": {"<topic pk>": {"name", "positives", "negatives",
    "status", "threshold", "precision", "recall", "f1"}}}`` (held-out figures, ``None`` for a
    topic without a model). Returns the stored ``ClassifierModel``. Raises
    ``ImproperlyConfigured`` for a malformed ``TOPICS_CLASSIFIER_*`` setting.
    """
    config = classifier_settings()
    training = _training_set(config)
    classifier = TopicClassifier.fit(
        training.texts,
        training.examples,
        target_precision=config.target_precision,
        min_positives=config.min_positives,
        max_features=config.max_features,
    )
    names = dict(Topic.objects.filter(pk__in=list(classifier.metrics)).values_list("pk", "name"))
    topic_metrics = {
        str(topic_id): {"name": names.get(topic_id, ""), **figures}
        for topic_id, figures in sorted(classifier.metrics.items())
    }
    names.update(Topic.objects.filter(pk__in=list(training.covered)).values_list("pk", "name"))
    for topic_id, count in training.covered.items():
        topic_metrics[str(topic_id)] = {
            "name": names.get(topic_id, ""),
            "positives": count,
            "negatives": 0,
            "status": "covered by other topics",
            "threshold": None,
            "precision": None,
            "recall": None,
            "f1": None,
        }
    metrics = {
        "papers": len(training.texts),
        "labels": training.label_count,
        "features": int(classifier.coef.shape[0]),
        "target_precision": config.target_precision,
        "min_positives": config.min_positives,
        "trained": classifier.topic_count,
        "fallback": len(classifier.metrics) - classifier.topic_count,
        "topics": topic_metrics,
    }
    artifact = classifier.dumps()
    with transaction.atomic():
        newest = ClassifierModel.objects.select_for_update().order_by("-version").first()
        ClassifierModel.objects.filter(active=True).update(active=False, updated_at=timezone.now())
        stored = ClassifierModel.objects.create(
            version=(newest.version if newest else 0) + 1,
            artifact=artifact,
            metrics=metrics,
            topic_count=classifier.topic_count,
            label_count=training.label_count,
            active=True,
        )
        stale = list(
            ClassifierModel.objects.order_by("-version").values_list("pk", flat=True)[
                config.keep_versions :
            ]
        )
        ClassifierModel.objects.filter(pk__in=stale).delete()
        if apply:
            transaction.on_commit(classifier_apply)
    logger.info(
        "Classifier v%s: %s of %s labelled topics trained on %s papers.",
        stored.version,
        classifier.topic_count,
        len(classifier.metrics),
        len(training.texts),
    )
    return stored


def classifier_apply(*, paper_ids: Iterable[int] | None = None) -> TagQueueResult:
    """Queue re-tagging (rules and the active classifier,
    :func:`~topics.tagging.engine.papers_tag`) of ``paper_ids`` (pks), or of every stored paper
    when ``None``, in chunks on the ``tag`` queue; sent when the surrounding transaction
    commits. Returns the :class:`~topics.tagging.engine.TagQueueResult`."""
    if paper_ids is None:
        paper_ids = (
            Paper.objects.order_by("pk").values_list("pk", flat=True).iterator(TAG_CHUNK_SIZE)
        )
    return papers_tag_enqueue(paper_ids=paper_ids)
