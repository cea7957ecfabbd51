"""Semantic tagging: a paper's embedding against each topic's meaning.

A topic's **meaning** is the embedding of its name, description and keywords
(:func:`topic_text`); from its first labelled paper on, its **prototype** mixes that with the
mean of its accepted papers' vectors, curator rejections pushing it away
(:func:`prototypes_build`). Both move towards the stored papers that fit the topic best, and a
prior per topic estimated on them shifts its cosines (:func:`corpus_refined`,
:func:`corpus_prior_bias`). A paper's **cosine** to every prototype is one matrix product
(papers x topics); the shifted cosine and its distance below the paper's best topic become a
**calibrated probability** (:class:`Calibration`, a logistic curve fitted on held-out labels,
pooled over topics, with shipped defaults before there is any label). Each topic has a
threshold chosen on its own held-out labels (leave-one-out) when it has enough of them; a
paper whose best topic is below ``MIN_COSINE`` gets no topic.

Two layers, like :mod:`topics.tagging.classifier`:

- plain NumPy and scikit-learn: :func:`topic_text`, :func:`prototypes_build`,
  :class:`Calibration`, :class:`SemanticModel` (:meth:`~SemanticModel.fit`,
  :meth:`~SemanticModel.scores`, :meth:`~SemanticModel.candidates`); the bench
  (``bench/bench_classifier_quality.py``) runs exactly this code;
- the Django side: :func:`semantic_active` builds the model of the active topics from the
  database (topic texts embedded once per process and text, labels read again whenever they
  changed, so each curator decision counts from the next tagging run, with no
  retraining). This module never writes to the database; tagging is
  :func:`topics.tagging.engine.papers_tag`.

What a candidate becomes (see :meth:`SemanticModel.candidates`): **accepted** when the topic's
held-out precision at its threshold reaches the target (only topics with enough curator
labels can show that), otherwise **pending**: a suggestion in the review queue, ranked by
score, and only for the paper's best-fitting topic, so that zero-shot topics cannot fill the
queue.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from .classifier import SCORE_DECIMALS, threshold_for_precision

__all__ = [
    "DEFAULT_CALIBRATION",
    "Calibration",
    "SemanticCandidate",
    "SemanticLabels",
    "SemanticModel",
    "prototypes_build",
    "semantic_active",
    "topic_text",
    "topic_texts",
]

logger = logging.getLogger(__name__)

# How much a topic's labelled papers weigh against its own text in the prototype: the mean of
# k accepted papers counts LABEL_WEIGHT * k / (k + LABEL_SHRINK) times the text's vector
# (one paper half as much as the description, many as much: on the archive labels of
# bench_classifier_quality, weights 0.5 / 1 / 2 / 4 gave 0.62 / 0.63 / 0.60 / 0.53 micro F1
# with 3 labels per topic). Rejections push it away with REJECT_WEIGHT times their mean.
LABEL_WEIGHT = 1.0
LABEL_SHRINK = 1.0
REJECT_WEIGHT = 0.3
# Below this many accepted labels a topic's threshold is the pooled one (its own held-out
# figures would rest on too few papers) and it never accepts on its own.
MIN_TOPIC_LABELS = 5
# Held-out precision a topic must reach at its threshold to accept papers on its own.
TARGET_PRECISION = 0.8
# No paper is accepted or suggested for a topic below this cosine, whatever the calibration (or
# the vote of its labelled neighbours) says.
MIN_COSINE = 0.15
# The classifier's words may not place a paper in a topic whose meaning is far from it: a
# classifier pair is dropped when the paper's cosine to the topic is below MIN_COSINE, or when
# the topic's (prior-shifted) cosine is more than CLASSIFIER_VETO_GAP below the paper's best
# topic. Archive labels, every label, classifier + semantic micro F1: 0.724 without the gap,
# 0.727 / 0.733 / 0.734 / 0.732 at 0.04 / 0.08 / 0.10 / 0.15.
CLASSIFIER_VETO_GAP = 0.1
# Any topic suggests a paper when it is the paper's best-fitting topic or within this much of
# it (papers belong to a topic or two, rarely more), with a cosine of at least MIN_COSINE. The
# pooled calibration's threshold does not filter these: it is the F1-best cut over every
# (paper, topic) pair, fitted on a few labels, and it dropped papers' best topics (archive
# labels, 3 per topic: micro F1 0.650 with it, 0.668 without, mean of 3 label draws).
SUGGEST_MARGIN = 0.01
# Every topic also learns from the corpus: its meaning rows move towards the mean of the
# (unlabelled) papers whose best-fitting topic it is, CORPUS_WEIGHT times that mean's unit
# vector, when at least CORPUS_MIN_MEMBERS papers chose it (a name or a paragraph of
# description is a thin summary of a field; the papers it attracts show how the field writes);
# its labels are added after that. On the archive labels of bench_classifier_quality,
# zero-shot micro F1 0.594 -> 0.624 / 0.639 / 0.642 at weights 0.3 / 0.5 / 1.0 (corpus: the
# training folds' papers, labels unused); with the prior below and labels on the nearest row,
# moving labelled topics too took 3 labels per topic from 0.641 to 0.650.
CORPUS_WEIGHT = 0.5
CORPUS_MIN_MEMBERS = 5
# Topics are not equally common: a per-topic prior, estimated on the unlabelled corpus by EM
# (Saerens, Latinne & Decaestecker 2002, "Adjusting the outputs of a classifier to new a
# priori probabilities"), shifts each topic's cosine by PRIOR_WEIGHT * log(k * prior) before
# the best topic is chosen, so that a narrow topic whose words sit near many papers (eess,
# hep-lat) stops taking papers from a large one (hep-ph, cond-mat). PRIOR_TEMPERATURE turns
# cosines into the posteriors EM averages; PRIOR_SAMPLE corpus papers are used at most, none
# below PRIOR_MIN_CORPUS; a prior is floored at PRIOR_FLOOR / k (a shift of -0.069 at most),
# so a topic the corpus barely shows (the demo's LLM topics over 2008 papers) still has its
# best papers suggested; floors 0.01 / 0.1 / 0.3 gave the same F1 within 0.003. Archive labels,
# top-1 accuracy: zero-shot 0.697 -> 0.701, 3 labels 0.716 -> 0.739 (mean of 3 label draws).
PRIOR_TEMPERATURE = 0.03
PRIOR_WEIGHT = 0.03
PRIOR_ITERATIONS = 20
PRIOR_SAMPLE = 5000
PRIOR_FLOOR = 0.1
PRIOR_MIN_CORPUS = 200
PRIOR_CELLS = 10_000_000
# Newest embedded papers semantic_active reads as that corpus.
CORPUS_SAMPLE = 20_000
# (labelled pair, meaning row) rows scored per step of the leave-one-out pass (bounds its
# memory: this many prototype rows at once).
LEAVE_OUT_CHUNK = 4096
# A topic with many labels is more than their mean: a topic with at least KNN_MIN_LABELS accepted
# papers also scores KNN_WEIGHT times the share of a paper's KNN_NEIGHBOURS nearest neighbours
# (softmax-weighted by cosine at KNN_TEMPERATURE) that are its accepted papers. The neighbours
# are the labelled papers and every topic's prototype rows (each its topic's): a paper far from
# all labelled papers is nearest the meanings of its own field, not voted into the one labelled
# topic (the demo's 2008 physics went to LLM Agent Training when only papers voted). Archive
# labels, every label, semantic micro F1 (mean of 3 draws): 0.723 without; papers alone voting
# 0.735 / 0.746 / 0.764 / 0.769 / 0.765 at weights 0.05 / 0.1 / 0.2 / 0.3 / 0.5; with the
# prototypes 0.762 at 0.3, 0.768 at 0.5. Fewer labels are untouched (at 10 labels a minimum of
# 10 cost 0.004). At most KNN_REFERENCE labelled papers (evenly spaced) are searched, exactly:
# (papers x (KNN_REFERENCE + meaning rows)) cosines per tagging batch.
KNN_WEIGHT = 0.3
KNN_NEIGHBOURS = 10
KNN_TEMPERATURE = 0.05
KNN_MIN_LABELS = 20
KNN_REFERENCE = 20_000


@dataclass(frozen=True)
class Calibration:
    """A logistic curve from a (paper, topic) pair's ``cosine`` and ``gap`` (the cosine minus
    the paper's best cosine over all topics, <= 0) to the probability that the paper belongs
    to the topic: ``1 / (1 + exp(-(cosine_weight * cosine + gap_weight * gap + intercept)))``.
    ``threshold``: the probability at and above which a pair is predicted positive (chosen to
    maximise F1 on the pooled held-out pairs it was fitted on)."""

    cosine_weight: float
    gap_weight: float
    intercept: float
    threshold: float

    def probability(self, cosine: np.ndarray, gap: np.ndarray) -> np.ndarray:
        """Probabilities (float64, same shape as ``cosine`` and ``gap``)."""
        logit = self.cosine_weight * cosine + self.gap_weight * gap + self.intercept
        return 1.0 / (1.0 + np.exp(-logit))

    @classmethod
    def fit(cls, cosine: np.ndarray, gap: np.ndarray, labels: np.ndarray) -> Calibration:
        """Fit on pooled pairs: 1-d arrays of the same length, ``labels`` booleans. Raises
        ``ValueError`` without both a positive and a negative pair."""
        from sklearn.linear_model import LogisticRegression

        labels = np.asarray(labels, dtype=bool)
        if labels.all() or not labels.any():
            raise ValueError("calibration needs positive and negative pairs.")
        features = np.column_stack([cosine, gap])
        model = LogisticRegression(C=10.0, class_weight=None, max_iter=1000)
        model.fit(features, labels)
        (cosine_weight, gap_weight), intercept = model.coef_[0], model.intercept_[0]
        fitted = cls(float(cosine_weight), float(gap_weight), float(intercept), 0.5)
        return fitted._with_threshold(best_f1_threshold(labels, fitted.probability(cosine, gap)))

    def _with_threshold(self, threshold: float) -> Calibration:
        return Calibration(self.cosine_weight, self.gap_weight, self.intercept, threshold)


# Fitted with Calibration.fit on zero-shot pairs of the reference page (its 58 topics' names
# against its 30 papers and the 1,317 recorded arXiv papers; all-MiniLM-L6-v2): what ranks
# suggestions before any topic has a label. Its threshold lets through every pair at
# MIN_COSINE or more (the probability there); which pairs are suggested is decided by the
# best-topic rule of SemanticModel.decide. bench/bench_classifier_quality.py evaluates it on
# other labels (arXiv archives and categories).
DEFAULT_CALIBRATION = Calibration(
    cosine_weight=17.357, gap_weight=0.962, intercept=-9.430, threshold=0.001
)


def _midway_below(scores: np.ndarray, threshold: float) -> float:
    """Halfway from ``threshold`` down to the highest of ``scores`` below it (the same
    decisions on these scores, and room for new papers a little below the lowest positive)."""
    below = scores[scores < threshold]
    return float((threshold + below.max()) / 2) if below.size else float(threshold)


def best_f1_threshold(labels: np.ndarray, scores: np.ndarray) -> float:
    """The score threshold (predict positive at ``score >= threshold``) with the highest F1 on
    (``labels``, ``scores``), 1-d arrays of the same length, placed halfway to the next lower
    score; 1.0 without a positive."""
    labels = np.asarray(labels, dtype=bool)
    positives = int(labels.sum())
    if not positives:
        return 1.0
    order = np.argsort(-scores, kind="stable")
    ranked = scores[order]
    true_positives = np.cumsum(labels[order])
    predicted = np.arange(1, len(scores) + 1)
    last_of_tie = np.append(ranked[1:] < ranked[:-1], True)
    f1 = np.where(last_of_tie, 2 * true_positives / (predicted + positives), -1.0)
    return _midway_below(scores, float(ranked[int(np.argmax(f1))]))


def topic_texts(name: str, description: str = "", keywords: Sequence[str] = ()) -> list[str]:
    """The texts a topic's meaning is embedded from: :func:`topic_text` of all of it or, when
    the description has several paragraphs (blank-line separated: an archive's categories, a
    long scope note the encoder would cut at its maximum length), of its name and keywords
    and ``"<name>: <paragraph>"`` for each paragraph."""
    paragraphs = [part for part in re.split(r"\n\s*\n", description) if part.strip()]
    if len(paragraphs) <= 1:
        return [topic_text(name, description, keywords)]
    return [
        topic_text(name, "", keywords),
        *(topic_text(f"{name.strip()}: {part.strip()}") for part in paragraphs),
    ]


def topic_text(name: str, description: str = "", keywords: Sequence[str] = ()) -> str:
    """The text a topic's meaning is embedded from: ``"<name>. <description> Keywords: a,
    b."`` (blank parts left out)."""
    parts = [name.strip()]
    if description.strip():
        parts.append(" ".join(description.split()))
    words = [word.strip() for word in keywords if word.strip()]
    if words:
        parts.append(f"Keywords: {', '.join(words)}.")
    return ". ".join(part.rstrip(".") for part in parts if part) + "."


def _pooled(cosine: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """(n, k) the highest of each topic's columns of ``cosine`` ((n, m)); ``starts`` its
    first column per topic."""
    if cosine.shape[1] == len(starts):
        return cosine
    return np.maximum.reduceat(cosine, starts, axis=1)


def _normalised(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return (matrix / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def prototypes_build(
    meanings: np.ndarray,
    positive_sums: np.ndarray,
    positive_counts: np.ndarray,
    negative_sums: np.ndarray | None = None,
    negative_counts: np.ndarray | None = None,
) -> np.ndarray:
    """Topic prototypes, (k, d) float32, rows L2-normalised.

    ``meanings``: (k, d) unit vectors of the topics' texts; ``positive_sums``: (k, d) sums of
    each topic's accepted papers' vectors, ``positive_counts``: (k,) how many; likewise
    ``negative_*`` for curator rejections (optional). Row j is
    ``meaning + LABEL_WEIGHT * n/(n + LABEL_SHRINK) * mean(accepted) - REJECT_WEIGHT *
    mean(rejected)``, normalised; a topic without labels keeps its meaning."""
    counts = np.asarray(positive_counts, dtype=np.float64)[:, None]
    mix = meanings.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(counts > 0, positive_sums / np.maximum(counts, 1), 0.0)
        mix = mix + LABEL_WEIGHT * counts / (counts + LABEL_SHRINK) * _normalised(mean)
        if negative_sums is not None and negative_counts is not None:
            rejected = np.asarray(negative_counts, dtype=np.float64)[:, None]
            away = np.where(rejected > 0, negative_sums / np.maximum(rejected, 1), 0.0)
            mix = mix - REJECT_WEIGHT * _normalised(away)
    return _normalised(mix)


def corpus_refined(
    meanings: np.ndarray,
    owners: np.ndarray,
    starts: np.ndarray,
    prototypes: np.ndarray,
    corpus: np.ndarray,
) -> np.ndarray:
    """Meaning rows ((m, d) unit rows, ``owners`` (m,) their topic columns, ``starts`` each
    topic's first row) moved towards the corpus: each corpus paper ((c, d) unit rows) goes to
    its best-fitting topic by ``prototypes`` ((m, d)); a topic chosen by at least
    ``CORPUS_MIN_MEMBERS`` papers has each of its rows replaced by ``normalise(row +
    CORPUS_WEIGHT * unit(mean of those papers))``. Returns a new (m, d) float32 array; the
    other topics' rows are unchanged."""
    corpus = np.asarray(corpus, dtype=np.float32)
    best = np.zeros(len(corpus), dtype=np.int64)
    for start in range(0, len(corpus), LEAVE_OUT_CHUNK):
        block = corpus[start : start + LEAVE_OUT_CHUNK]
        best[start : start + len(block)] = _pooled(block @ prototypes.T, starts).argmax(axis=1)
    refined = meanings.copy()
    sums = np.zeros((len(starts), corpus.shape[1]), dtype=np.float64)
    np.add.at(sums, best, corpus)
    counts = np.bincount(best, minlength=len(starts))
    for column in np.flatnonzero(counts >= CORPUS_MIN_MEMBERS).tolist():
        rows = owners == column
        refined[rows] = _normalised(meanings[rows] + CORPUS_WEIGHT * _normalised(sums[column]))
    return refined


def _nearest_rows(
    vectors: np.ndarray,
    meanings: np.ndarray,
    starts: np.ndarray,
    sizes: np.ndarray,
    papers: np.ndarray,
    columns: np.ndarray,
) -> np.ndarray:
    """For each (paper, topic) pair (``papers``, ``columns``: (p,) indices into ``vectors``
    and topic columns), the meaning row of that topic nearest to the paper: (p,) int64 rows of
    ``meanings`` ((m, d)); ``starts``/``sizes``: each topic's first row and row count."""
    nearest = starts[columns].astype(np.int64) if len(columns) else np.zeros(0, np.int64)
    several = np.flatnonzero(sizes[columns] > 1) if len(columns) else np.zeros(0, np.int64)
    if not several.size:
        return nearest
    order = several[np.argsort(columns[several], kind="stable")]
    topics, first = np.unique(columns[order], return_index=True)
    for column, group in zip(topics.tolist(), np.split(order, first[1:]), strict=True):
        block = meanings[starts[column] : starts[column] + sizes[column]]
        nearest[group] = starts[column] + (vectors[papers[group]] @ block.T).argmax(axis=1)
    return nearest


def _row_sums(
    vectors: np.ndarray, papers: np.ndarray, rows: np.ndarray, chosen: np.ndarray, m: int
) -> tuple[np.ndarray, np.ndarray]:
    """(sums (m, d) float64, counts (m,) float64) of the ``chosen`` pairs' paper vectors per
    meaning row (``papers``/``rows``: (p,) each pair's paper and meaning row)."""
    from scipy import sparse

    picked = np.flatnonzero(chosen)
    counts = np.bincount(rows[picked], minlength=m).astype(np.float64)
    if not picked.size:
        return np.zeros((m, vectors.shape[1] if vectors.ndim == 2 else 0)), counts
    matrix = sparse.csr_matrix(
        (np.ones(picked.size), (rows[picked], papers[picked])), shape=(m, len(vectors))
    )
    return np.asarray(matrix @ vectors.astype(np.float64)), counts


def corpus_prior_bias(prototypes: np.ndarray, starts: np.ndarray, corpus: np.ndarray) -> np.ndarray:
    """(k,) float32 shifts of each topic's cosine: ``PRIOR_WEIGHT * log(k * prior)``, the
    prior of each topic estimated by EM on (at most ``PRIOR_SAMPLE`` and ``PRIOR_CELLS / k``,
    evenly spaced) papers of ``corpus`` ((c, d) unit rows), their posteriors a softmax of
    cosines to ``prototypes`` ((m, d); ``starts`` each topic's first row) at
    ``PRIOR_TEMPERATURE``. Zeros with fewer than ``PRIOR_MIN_CORPUS`` papers; each prior
    floored at ``PRIOR_FLOOR / k`` (a topic the corpus barely shows still gets its best papers
    suggested)."""
    k = len(starts)
    if len(corpus) < PRIOR_MIN_CORPUS or k < 2:
        return np.zeros(k, dtype=np.float32)
    # At most PRIOR_CELLS (paper, topic) cells: 40 MB whatever the taxonomy's size.
    size = min(len(corpus), PRIOR_SAMPLE, max(PRIOR_MIN_CORPUS, PRIOR_CELLS // k))
    picked = np.unique(np.linspace(0, len(corpus) - 1, size).astype(np.int64))
    sample = np.asarray(corpus[picked], dtype=np.float32)
    likelihood = np.empty((len(sample), k), dtype=np.float32)
    for start in range(0, len(sample), LEAVE_OUT_CHUNK):
        block = _pooled(sample[start : start + LEAVE_OUT_CHUNK] @ prototypes.T, starts)
        logits = (block - block.max(axis=1, keepdims=True)) / PRIOR_TEMPERATURE
        likelihood[start : start + len(block)] = np.exp(logits)
    prior = np.full(k, 1.0 / k)
    for _ in range(PRIOR_ITERATIONS):
        posterior = likelihood * prior.astype(np.float32)
        posterior /= posterior.sum(axis=1, keepdims=True)
        prior = np.maximum(posterior.mean(axis=0, dtype=np.float64), PRIOR_FLOOR / k)
        prior /= prior.sum()
    return (PRIOR_WEIGHT * np.log(k * prior)).astype(np.float32)


def _knn_votes(
    vectors: np.ndarray,
    reference: np.ndarray,
    labels,
    *,
    exclude: np.ndarray | None = None,
) -> np.ndarray:
    """(n, k) float32: for each of ``vectors`` ((n, d) unit rows) the share of its
    ``KNN_NEIGHBOURS`` nearest ``reference`` papers ((r, d) unit rows), softmax-weighted by
    cosine at ``KNN_TEMPERATURE``, that each topic accepted (``labels``: (r, k) 0/1, a SciPy
    sparse matrix or an array). ``exclude``: (n,) the reference row that is the paper itself
    (left out of its own neighbours), -1 for none. Exact: one (n, r) product, in chunks."""
    from scipy import sparse

    n, total = len(vectors), len(reference)
    votes = np.zeros((n, labels.shape[1]), dtype=np.float32)
    neighbours = min(KNN_NEIGHBOURS, total - (1 if exclude is not None else 0))
    if neighbours <= 0 or not n:
        return votes
    table = sparse.csr_matrix(labels, dtype=np.float32)
    # 256 papers at a time: (256, r) cosines and their partition indices, 60 MB at r = 20,000.
    for start in range(0, n, 256):
        sims = vectors[start : start + 256] @ reference.T
        if exclude is not None:
            own = exclude[start : start + len(sims)]
            mine = np.flatnonzero(own >= 0)
            sims[mine, own[mine]] = -np.inf
        nearest = np.argpartition(-sims, neighbours - 1, axis=1)[:, :neighbours]
        near = np.take_along_axis(sims, nearest, axis=1)
        weights = np.exp((near - near.max(axis=1, keepdims=True)) / KNN_TEMPERATURE)
        weights /= weights.sum(axis=1, keepdims=True)
        rows = np.repeat(np.arange(len(sims)), neighbours)
        picked = sparse.csr_matrix(
            (weights.ravel(), (rows, nearest.ravel())), shape=(len(sims), total)
        )
        votes[start : start + len(sims)] = (picked @ table).toarray()
    return votes


@dataclass(frozen=True)
class SemanticLabels:
    """The labelled papers of the topics, for :meth:`SemanticModel.fit`.

    ``vectors``: (n, d) unit vectors of the labelled papers; ``positives`` / ``negatives``:
    per topic (column order of the model) the row indices into ``vectors`` of its accepted /
    rejected papers (int arrays). A paper accepted in one topic and in no other counts as a
    negative of no other topic unless listed there: archive-like taxonomies overlap."""

    vectors: np.ndarray
    positives: Sequence[np.ndarray]
    negatives: Sequence[np.ndarray]
    paper_ids: np.ndarray | None = None  # (n,) the labelled papers' pks, for evidence


@dataclass(frozen=True)
class SemanticCandidate:
    """A (paper, topic) pair :meth:`SemanticModel.candidates` proposes: ``row`` indexes the
    vectors given, ``score`` the calibrated probability (4 decimals), ``cosine`` to the
    prototype, ``accepted`` (else a suggestion for review)."""

    row: int
    topic_id: int
    score: float
    cosine: float
    accepted: bool


@dataclass
class SemanticModel:
    """Prototypes and calibration of k topics.

    - ``topic_ids``: (k,) int64 topic pks, column order;
    - ``prototypes``: (m, d) float32 unit rows (:func:`prototypes_build`), one per meaning
      text, a topic's rows together; ``starts``: (k,) the first row of each topic;
    - ``calibration``: the pooled :class:`Calibration`;
    - ``thresholds``: (k,) probability thresholds (a topic's own where it has
      ``MIN_TOPIC_LABELS`` accepted labels and a threshold was found, else the pooled one);
    - ``precision``: (k,) held-out precision at the threshold, NaN where not measured;
    - ``accepts``: (k,) bools, topics whose precision reaches ``TARGET_PRECISION``;
    - ``metrics``: per topic pk ``{"positives", "negatives", "threshold", "precision",
      "recall", "accepts"}``;
    - ``bias``: (k,) float32 shifts of the cosines by each topic's prior
      (:func:`corpus_prior_bias`), ``None`` for none;
    - ``knn``: (k,) float32 weight of each topic's labelled-neighbour vote (``KNN_WEIGHT`` for
      topics with ``KNN_MIN_LABELS`` labels, else 0), ``knn_vectors`` ((r, d)) and
      ``knn_labels`` ((r, k) SciPy sparse 0/1) the labelled papers voting; ``None`` without;
    - ``label_vectors`` / ``label_paper_ids`` / ``positives``: the labels it was built from,
      for :meth:`nearest_labelled`.

    Build with :meth:`fit`.
    """

    topic_ids: np.ndarray
    prototypes: np.ndarray
    starts: np.ndarray
    calibration: Calibration
    thresholds: np.ndarray
    precision: np.ndarray
    accepts: np.ndarray
    metrics: dict[int, dict] = field(default_factory=dict)
    bias: np.ndarray | None = None
    knn: np.ndarray | None = None
    knn_vectors: np.ndarray | None = None
    knn_labels: object = None
    label_vectors: np.ndarray | None = None
    label_paper_ids: np.ndarray | None = None
    positives: Sequence[np.ndarray] = ()

    @property
    def topic_count(self) -> int:
        return len(self.topic_ids)

    @functools.cached_property
    def column_of(self) -> dict[int, int]:
        """Topic pk -> its column."""
        return {int(topic_id): column for column, topic_id in enumerate(self.topic_ids)}

    @classmethod
    def fit(
        cls,
        topic_ids: Sequence[int],
        meanings: np.ndarray,
        labels: SemanticLabels | None = None,
        *,
        owners: Sequence[int] | None = None,
        target_precision: float = TARGET_PRECISION,
        default: Calibration = DEFAULT_CALIBRATION,
        corpus: np.ndarray | None = None,
    ) -> SemanticModel:
        """Build the model of topics ``topic_ids`` whose texts embed to ``meanings`` ((m, d)
        unit rows) from ``labels`` (``None``: zero-shot).

        ``owners`` ((m,) non-decreasing column indices, every topic at least once; default one
        row per topic) says whose text each meaning row is: a topic with several texts
        (:func:`topic_texts`: a long description's paragraphs) gets one prototype per text,
        each moved by its labels alike, and a paper's cosine to it is the highest of them.

        Held-out scores come from leave-one-out prototypes: each labelled paper is scored
        against prototypes built without it (exact, by subtracting it from the sums). The
        pooled calibration is fitted on every labelled paper's pairs with all topics that
        have a label (a paper is positive for the topics that list it, negative for those
        where it is rejected or that have labels and do not list it); ``default`` serves
        without both kinds of pair. Each topic's threshold: the F1-best on its own held-out
        pairs with at least ``MIN_TOPIC_LABELS`` accepted labels, the pooled one otherwise;
        it accepts on its own where its held-out precision there reaches
        ``target_precision``.

        Each accepted or rejected pair moves only the meaning row of its topic nearest to the
        paper (an archive's labelled papers teach the category paragraphs they are about).

        ``corpus`` ((c, d) unit rows, optional): unlabelled papers. Each topic has its meaning
        rows moved towards the papers of ``corpus`` whose best-fitting topic it is
        (:func:`corpus_refined`), and a prior estimated on them (:func:`corpus_prior_bias`)
        shifts its cosines (``bias``). Raises ``ValueError`` when shapes disagree."""
        topic_ids = np.asarray(topic_ids, dtype=np.int64)
        meanings = _normalised(np.asarray(meanings, dtype=np.float32))
        k = len(topic_ids)
        owners = np.arange(k) if owners is None else np.asarray(owners, dtype=np.int64)
        if meanings.shape[0] != len(owners):
            raise ValueError(f"{len(owners)} meaning owners but {meanings.shape[0]} vectors.")
        if not np.array_equal(np.unique(owners), np.arange(k)) or np.any(np.diff(owners) < 0):
            raise ValueError(
                f"{k} topics but meaning owners {owners.tolist()[:10]}...: each "
                "topic needs a meaning, in column order."
            )
        dimension = meanings.shape[1] if meanings.ndim == 2 else 0
        if labels is None:
            labels = SemanticLabels(
                np.zeros((0, dimension), np.float32), [np.zeros(0, int)] * k, [np.zeros(0, int)] * k
            )
        if len(labels.positives) != k or len(labels.negatives) != k:
            raise ValueError("labels must list positives and negatives for every topic.")
        vectors = np.asarray(labels.vectors, dtype=np.float32)
        if len(vectors) and vectors.shape[1] != dimension:
            raise ValueError(f"label vectors have {vectors.shape[1]} dimensions, not {dimension}.")
        n = len(vectors)
        membership = np.zeros((n, k), dtype=np.int8)  # 1 accepted, -1 rejected
        for column in range(k):
            membership[np.asarray(labels.negatives[column], dtype=np.int64), column] = -1
            membership[np.asarray(labels.positives[column], dtype=np.int64), column] = 1
        accepted = (membership == 1).astype(np.float32)
        rejected = (membership == -1).astype(np.float32)
        positive_counts = accepted.sum(axis=0)
        negative_counts = rejected.sum(axis=0)
        starts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]]) if k else owners
        sizes = np.diff(np.r_[starts, len(owners)])
        # Each labelled pair moves the one meaning row of its topic nearest to the paper (an
        # archive's labelled papers each teach the category paragraph they belong to, rather
        # than blurring every paragraph with the mean of all of them).
        pair_papers, pair_columns = np.nonzero(membership)
        pair_meanings = _nearest_rows(vectors, meanings, starts, sizes, pair_papers, pair_columns)
        pair_accepted = membership[pair_papers, pair_columns] == 1
        row_positive = _row_sums(vectors, pair_papers, pair_meanings, pair_accepted, len(owners))
        row_negative = _row_sums(vectors, pair_papers, pair_meanings, ~pair_accepted, len(owners))

        def prototypes_of(rows: np.ndarray) -> np.ndarray:
            return prototypes_build(rows, *row_positive, *row_negative)

        prototypes = prototypes_of(meanings)
        bias = np.zeros(k, dtype=np.float32)
        if corpus is not None and len(corpus) and k:
            meanings = corpus_refined(meanings, owners, starts, prototypes, corpus)
            prototypes = prototypes_of(meanings)
            bias = corpus_prior_bias(prototypes, starts, corpus)

        # Topics with enough labels also score by their labelled neighbours (KNN_*).
        knn = knn_rows = knn_vectors = knn_labels = None
        knn_topics = positive_counts >= KNN_MIN_LABELS
        if KNN_WEIGHT and n and knn_topics.any():
            from scipy import sparse

            knn = (KNN_WEIGHT * knn_topics).astype(np.float32)
            knn_rows = np.unique(np.linspace(0, n - 1, min(n, KNN_REFERENCE)).astype(np.int64))
            # The topics' own prototypes are neighbours too, each voting for its topic: a paper
            # far from every labelled paper (a field the labels do not cover) is nearest its
            # topics' meanings, which outvote the labelled papers of a distant topic.
            knn_vectors = np.vstack([vectors[knn_rows], prototypes])
            knn_labels = sparse.vstack(
                [
                    sparse.csr_matrix(accepted[knn_rows]),
                    sparse.csr_matrix(
                        (np.ones(len(owners), dtype=np.float32), (np.arange(len(owners)), owners)),
                        shape=(len(owners), k),
                    ),
                ],
                dtype=np.float32,
            ).tocsr()

        calibration = default
        held_out = np.zeros((n, k))
        labelled_topics = (positive_counts > 0) | (negative_counts > 0)
        if n:
            # Leave-one-out cosines: a labelled pair is scored against its topic's prototype
            # built without that paper; unlabelled pairs need no change.
            cosine = _pooled(vectors @ prototypes.T, starts)
            # Chunks of pairs holding at most LEAVE_OUT_CHUNK (pair, meaning row) rows (a pair
            # of an archive with 40 paragraphs is 40 rows), and at least one pair.
            expanded = np.cumsum(sizes[pair_columns])
            bounds = [0]
            while bounds[-1] < len(pair_papers):
                done = expanded[bounds[-1] - 1] if bounds[-1] else 0
                end = int(np.searchsorted(expanded, done + LEAVE_OUT_CHUNK, side="right"))
                bounds.append(max(end, bounds[-1] + 1))
            for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
                chunk = slice(start, stop)
                r, c = pair_papers[chunk], pair_columns[chunk]
                # One row per (pair, meaning row of its topic), pairs contiguous.
                count = sizes[c]
                pair = np.repeat(np.arange(len(r)), count)
                offset = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
                meaning_rows = starts[c][pair] + offset
                rr, cc = r[pair], c[pair]
                own = vectors[rr]
                # The paper left out of the row it taught.
                mine = (meaning_rows == pair_meanings[chunk][pair]).astype(np.float32)
                was_accepted = (accepted[rr, cc] * mine)[:, None]
                was_rejected = (rejected[rr, cc] * mine)[:, None]
                leave_out = prototypes_build(
                    meanings[meaning_rows],
                    row_positive[0][meaning_rows] - was_accepted * own,
                    row_positive[1][meaning_rows] - was_accepted[:, 0],
                    row_negative[0][meaning_rows] - was_rejected * own,
                    row_negative[1][meaning_rows] - was_rejected[:, 0],
                )
                each = np.einsum("ij,ij->i", leave_out, own)
                cosine[r, c] = np.maximum.reduceat(each, np.cumsum(count) - count)
            cosine = cosine + bias
            if knn is not None:
                # Left out of its own neighbours, as the prototypes leave it out.
                exclude = np.full(n, -1, dtype=np.int64)
                exclude[knn_rows] = np.arange(len(knn_rows))
                cosine = cosine + knn * _knn_votes(
                    vectors, knn_vectors, knn_labels, exclude=exclude
                )
            gap = cosine - cosine.max(axis=1, keepdims=True)
            # Pairs with a label: the topic has labels and the paper is known in or out.
            pair_labels = membership[:, labelled_topics] == 1
            if pair_labels.any() and not pair_labels.all():
                calibration = Calibration.fit(
                    cosine[:, labelled_topics].ravel(),
                    gap[:, labelled_topics].ravel(),
                    pair_labels.ravel(),
                )
            held_out = calibration.probability(cosine, gap)

        thresholds = np.full(k, calibration.threshold)
        precision = np.full(k, np.nan)
        accepts = np.zeros(k, dtype=bool)
        metrics: dict[int, dict] = {}
        for column, topic_id in enumerate(topic_ids.tolist()):
            figures = {
                "positives": int(positive_counts[column]),
                "negatives": int(negative_counts[column]),
                "threshold": round(float(calibration.threshold), SCORE_DECIMALS),
                "precision": None,
                "recall": None,
                "accepts": False,
            }
            metrics[topic_id] = figures
            truth = membership[:, column] == 1
            # Precision needs papers the topic should not take: without as many labelled
            # papers outside it as in it (a root whose labels are every labelled paper), it
            # cannot be measured and the topic only suggests.
            if positive_counts[column] < MIN_TOPIC_LABELS or (~truth).sum() < MIN_TOPIC_LABELS:
                continue
            scores = held_out[:, column]
            threshold = max(best_f1_threshold(truth, scores), 1e-4)
            predicted = scores >= threshold
            hits = int((predicted & truth).sum())
            topic_precision = hits / max(int(predicted.sum()), 1)
            thresholds[column] = threshold
            precision[column] = topic_precision
            accepts[column] = topic_precision >= target_precision
            if not accepts[column]:
                # The threshold where it would reach the target, if any: accepting there is
                # safe, suggesting from the F1-best one up is useful.
                reaching = threshold_for_precision(truth, scores, target_precision)
                if reaching is not None and reaching[2] > 0:
                    accepts[column] = True
                    thresholds[column] = max(_midway_below(scores, reaching[0]), 1e-4)
                    topic_precision = reaching[1]
                    precision[column] = topic_precision
            figures.update(
                threshold=round(float(thresholds[column]), SCORE_DECIMALS),
                precision=round(float(precision[column]), 4),
                recall=round(float((held_out[:, column] >= thresholds[column])[truth].mean()), 4),
                accepts=bool(accepts[column]),
            )
        return cls(
            topic_ids=topic_ids,
            prototypes=prototypes,
            starts=starts,
            calibration=calibration,
            thresholds=thresholds,
            precision=precision,
            accepts=accepts,
            metrics=metrics,
            bias=bias,
            knn=knn,
            knn_vectors=knn_vectors,
            knn_labels=knn_labels,
            label_vectors=vectors,
            label_paper_ids=labels.paper_ids,
            positives=[np.asarray(rows, dtype=np.int64) for rows in labels.positives],
        )

    # --- scoring -----------------------------------------------------------------------------

    def cosines(self, vectors: np.ndarray) -> np.ndarray:
        """(n, k) float32 cosines of unit ``vectors`` ((n, d)) to each topic: the highest over
        its prototypes. One matrix product."""
        if not self.topic_count or not len(vectors):
            return np.zeros((len(vectors), self.topic_count), dtype=np.float32)
        return _pooled(np.asarray(vectors, dtype=np.float32) @ self.prototypes.T, self.starts)

    def fits(self, vectors: np.ndarray, *, cosine: np.ndarray | None = None) -> np.ndarray:
        """(n, k) float32: how well each of unit ``vectors`` ((n, d)) fits each topic, what
        the best topic, the gap and the calibration are read from: its :meth:`cosines`
        (``cosine`` when the caller has them) shifted by the topic's prior (``bias``) plus,
        for a topic with ``KNN_MIN_LABELS`` accepted labels, ``KNN_WEIGHT`` times the share
        of the paper's nearest neighbours (labelled papers and prototype rows) that are the
        topic's (``knn``)."""
        if cosine is None:
            cosine = self.cosines(vectors)
        fit = cosine if self.bias is None else cosine + self.bias
        if self.knn is not None and self.knn.any() and len(vectors):
            fit = fit + self.knn * _knn_votes(
                np.asarray(vectors, dtype=np.float32), self.knn_vectors, self.knn_labels
            )
        return fit

    def scores(self, vectors: np.ndarray) -> np.ndarray:
        """(n, k) float64 calibrated probabilities in [0, 1], columns in ``topic_ids`` order."""
        fit = self.fits(vectors)
        if not fit.size:
            return fit.astype(np.float64)
        return self.calibration.probability(fit, fit - fit.max(axis=1, keepdims=True))

    def decide(
        self,
        vectors: np.ndarray,
        *,
        cosine: np.ndarray | None = None,
        fit: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(accepted, suggested, score)``, each (n, k): what tagging does with unit
        ``vectors`` ((n, d)). A topic that ``accepts`` takes every paper scoring at or above
        its threshold with a cosine of at least ``MIN_COSINE``; any topic is suggested a paper
        it does not take whose best-fitting topic it is (or within ``SUGGEST_MARGIN`` of it,
        on cosines shifted by the topics' priors and labelled neighbours, :meth:`fits`), with
        a cosine of at least ``MIN_COSINE`` (so a topic without labels sends the papers
        closest to it, not every near one, to the review queue). ``score``: the calibrated
        probabilities (float64). ``cosine`` / ``fit``: :meth:`cosines` / :meth:`fits` of
        ``vectors`` when the caller has them already (computed here otherwise)."""
        if cosine is None:
            cosine = self.cosines(vectors)
        if not cosine.size:
            empty = np.zeros(cosine.shape, dtype=bool)
            return empty, empty, cosine.astype(np.float64)
        if fit is None:
            fit = self.fits(vectors, cosine=cosine)
        best = fit.max(axis=1, keepdims=True)
        score = self.calibration.probability(fit, fit - best)
        above = score >= self.thresholds
        accepted = above & self.accepts & (cosine >= MIN_COSINE)
        # Suggestions: the paper's best-fitting topics, for any topic (below its own threshold
        # for one that accepts), near enough in meaning.
        suggested = ~accepted & (fit >= best - SUGGEST_MARGIN) & (cosine >= MIN_COSINE)
        return accepted, suggested, score

    @staticmethod
    def vetoes(cosine: np.ndarray, fit: np.ndarray) -> np.ndarray:
        """(n, k) bools: the pairs whose paper is too far in meaning from the topic for the
        classifier to place it there (``CLASSIFIER_VETO_GAP``, ``MIN_COSINE``); ``cosine`` /
        ``fit``: :meth:`cosines` / :meth:`fits` of the papers."""
        if not fit.size:
            return np.zeros(fit.shape, dtype=bool)
        far = fit < fit.max(axis=1, keepdims=True) - CLASSIFIER_VETO_GAP
        return far | (cosine < MIN_COSINE)

    def predict(self, vectors: np.ndarray) -> np.ndarray:
        """(n, k) bools: the pairs tagging accepts or suggests (:meth:`decide`); what the
        bench scores."""
        accepted, suggested, _ = self.decide(vectors)
        return accepted | suggested

    def candidates(
        self,
        vectors: np.ndarray,
        *,
        cosine: np.ndarray | None = None,
        fit: np.ndarray | None = None,
    ) -> Iterator[SemanticCandidate]:
        """The pairs of :meth:`decide` as :class:`SemanticCandidate`, in row then column
        order. ``vectors``: (n, d) unit rows; ``cosine`` / ``fit``: their :meth:`cosines` /
        :meth:`fits`, when the caller has them (computed once per batch, not once per use)."""
        if cosine is None:
            cosine = self.cosines(vectors)
        accepted, suggested, score = self.decide(vectors, cosine=cosine, fit=fit)
        rows, columns = np.nonzero(accepted | suggested)
        # Picked out in one go each: indexing numpy per pair cost more than the judging.
        for row, topic_id, pair_score, pair_cosine, pair_accepted in zip(
            rows.tolist(),
            self.topic_ids[columns].tolist(),
            score[rows, columns].astype(np.float64).tolist(),
            cosine[rows, columns].astype(np.float64).tolist(),
            accepted[rows, columns].tolist(),
            strict=True,
        ):
            yield SemanticCandidate(
                row=row,
                topic_id=topic_id,
                score=round(pair_score, SCORE_DECIMALS),
                cosine=round(pair_cosine, 4),
                accepted=pair_accepted,
            )

    def nearest_labelled(self, vector: np.ndarray, topic_id: int, *, limit: int = 3) -> list[int]:
        """The pks of the ``limit`` accepted papers of ``topic_id`` nearest to ``vector``,
        nearest first; ``[]`` without labels or paper pks."""
        matrix = np.asarray(vector, dtype=np.float32).reshape(1, -1)
        return self.nearest_labelled_many(matrix, [(0, topic_id)], limit=limit)[0]

    def nearest_labelled_many(
        self, vectors: np.ndarray, pairs: Sequence[tuple[int, int]], *, limit: int = 3
    ) -> list[list[int]]:
        """:meth:`nearest_labelled` for many pairs at once: ``pairs`` are ``(row of
        vectors, topic pk)``; returns one list of paper pks per pair, in ``pairs`` order. One
        matrix product per topic instead of one per pair (a batch's semantic suggestions
        number in the hundreds)."""
        found: list[list[int]] = [[] for _ in pairs]
        if self.label_paper_ids is None or self.label_vectors is None:
            return found
        by_topic: dict[int, list[int]] = defaultdict(list)
        for position, (_, topic_id) in enumerate(pairs):
            by_topic[topic_id].append(position)
        for topic_id, positions in by_topic.items():
            column = self.column_of.get(topic_id)
            if column is None or not len(self.positives[column]):
                continue
            rows = self.positives[column]
            matrix = vectors[[pairs[position][0] for position in positions]]
            similarity = np.asarray(matrix, dtype=np.float32) @ self.label_vectors[rows].T
            order = np.argsort(-similarity, axis=1, kind="stable")[:, :limit]
            nearest = self.label_paper_ids[rows[order]].tolist()
            for position, paper_ids in zip(positions, nearest, strict=True):
                found[position] = paper_ids
        return found


# --- the Django side: the model of the active topics ----------------------------------------

_lock = threading.Lock()
# (encoder model id, topic text) -> unit vector: a topic's text is embedded once per process
# and text (an edit of the name, description or keywords is a new text).
_meanings: dict[tuple[str, str], np.ndarray] = {}
# (fingerprint of topics and labels, model): the last model built, reused while nothing changed.
_built: tuple[tuple, SemanticModel] | None = None
# ((encoder model id, corpus size bucket), vectors): the unlabelled corpus sample.
_corpus: tuple[tuple, np.ndarray] | None = None


def _corpus_bucket(encoder_id: str) -> int:
    """When the corpus sample (and so the model) must be read again. While at most
    ``CORPUS_SAMPLE`` papers are embedded, every one of them is in the sample: minus their
    number, so each newly embedded paper counts (a model built halfway through the first
    embedding would otherwise stay, and a second run of the same data would tag differently).
    Above that, a number that grows by one each time the highest embedded paper id grows by
    a quarter: the sample is read again as the corpus grows, not at every new paper. Two
    index-only queries, the first reading at most ``CORPUS_SAMPLE + 1`` index entries."""
    import math

    from django.db.models import Max

    from papers.models import PaperEmbedding

    embedded = PaperEmbedding.objects.filter(model=encoder_id)
    count = embedded[: CORPUS_SAMPLE + 1].count()
    if count <= CORPUS_SAMPLE:
        return -count
    last = embedded.aggregate(last=Max("paper_id"))["last"]
    return int(math.log(last, 1.25)) + 1


def _corpus_sample(encoder_id: str, bucket: int, dimension: int) -> np.ndarray:
    """(c, ``dimension``) float32 unit vectors of the ``CORPUS_SAMPLE`` newest embedded papers
    of the encoder's model, withdrawn ones and damaged ones left out (``(0, 0)`` without
    any), read once per bucket."""
    global _corpus
    from papers.embeddings.vectors import sound_vectors, vector_from_bytes
    from papers.models import PaperEmbedding

    cached = _corpus
    if cached is not None and cached[0] == (encoder_id, bucket):
        return cached[1]
    rows = (
        PaperEmbedding.objects.filter(model=encoder_id, paper__withdrawn=False)
        .order_by("-paper_id")
        .values_list("paper_id", "vector")[:CORPUS_SAMPLE]
    )
    vectors = sound_vectors(
        {paper_id: vector_from_bytes(data) for paper_id, data in rows.iterator(chunk_size=2000)},
        dimension,
    )
    sample = np.stack(list(vectors.values())) if vectors else np.zeros((0, 0), dtype=np.float32)
    _corpus = ((encoder_id, bucket), sample)
    return sample


def _labels_query():
    """Assignments the semantic model learns from: curator decisions (accepted or rejected)
    and accepted ``import`` assignments, on active topics. Machine-made assignments (rules,
    classifier, semantic) teach nothing: learning from its own guesses would let a topic widen
    on every run."""
    from django.db.models import Q

    from ..models import Assignment

    decided = (Q(decided_by__isnull=False) | Q(decided_at__isnull=False)) & Q(
        state__in=[Assignment.State.ACCEPTED, Assignment.State.REJECTED]
    )
    imported = Q(
        decided_by__isnull=True,
        decided_at__isnull=True,
        source=Assignment.Source.IMPORT,
        state=Assignment.State.ACCEPTED,
    )
    return Assignment.objects.filter(topic__active=True).filter(decided | imported)


def _fingerprint(encoder_id: str) -> tuple:
    """What the model depends on, in two aggregate queries: the active topics (count, last
    change) and the labels (count, last change, highest pk)."""
    from django.db.models import Count, Max

    from ..models import Topic

    topics = Topic.objects.active().aggregate(n=Count("pk"), changed=Max("updated_at"))
    labels = _labels_query().aggregate(n=Count("pk"), changed=Max("updated_at"), last=Max("pk"))
    return (
        encoder_id,
        topics["n"],
        topics["changed"],
        labels["n"],
        labels["changed"],
        labels["last"],
        _corpus_bucket(encoder_id),
    )


def semantic_active() -> SemanticModel | None:
    """The semantic model of the active topics and their current labels, or ``None`` when
    there is no active topic or no encoder (``papers.embeddings.encoder.EncoderUnavailable``:
    the model files are missing; tagging then uses words alone).

    Built from the database at the first call and again whenever a topic or a label changed
    (each curator decision counts from the next tagging run, with no retraining): topic texts
    (:func:`topic_texts` of name, description, keywords) embedded once per process and text;
    labels (:func:`_labels_query`) with their stored vectors
    (``papers.embeddings.vectors.load_vectors``; a labelled paper without one, or with a
    damaged one, is left out);
    the newest ``CORPUS_SAMPLE`` embedded papers as the unlabelled corpus (read again as the
    corpus grows by a quarter); :meth:`SemanticModel.fit`."""
    global _built
    from papers.embeddings.encoder import EncoderUnavailable, get_encoder
    from papers.embeddings.vectors import load_vectors, sound_vectors

    from ..models import Topic

    try:
        encoder = get_encoder()
    except EncoderUnavailable as error:
        logger.warning("Semantic tagging off: %s", error)
        return None
    key = _fingerprint(encoder.model_id)
    built = _built
    if built is not None and built[0] == key:
        return built[1]
    with _lock:
        if _built is not None and _built[0] == key:
            return _built[1]
        topics = list(
            Topic.objects.active()
            .order_by("pk")
            .values_list("pk", "name", "description", "keywords")
        )
        if not topics:
            return None
        texts, owners = [], []
        for column, (_, name, description, keywords) in enumerate(topics):
            for text in topic_texts(name, description, keywords.split(",")):
                texts.append(text)
                owners.append(column)
        missing = sorted({text for text in texts if (encoder.model_id, text) not in _meanings})
        if missing:
            for text, vector in zip(missing, encoder.encode(missing), strict=True):
                _meanings[(encoder.model_id, text)] = np.asarray(vector, dtype=np.float32)
        meanings = np.stack([_meanings[(encoder.model_id, text)] for text in texts])
        column = {pk: index for index, (pk, *_) in enumerate(topics)}
        rows = list(_labels_query().values_list("paper_id", "topic_id", "state"))
        # A damaged stored vector (NaN, inf, cut short) would poison every prototype and the
        # calibration, or fail the model.
        vectors = sound_vectors(
            load_vectors(sorted({paper_id for paper_id, _, _ in rows})), meanings.shape[1]
        )
        paper_ids = np.array(sorted(vectors), dtype=np.int64)
        row_of = {int(paper_id): row for row, paper_id in enumerate(paper_ids)}
        positives: list[list[int]] = [[] for _ in topics]
        negatives: list[list[int]] = [[] for _ in topics]
        for paper_id, topic_id, state in rows:
            if paper_id in row_of and topic_id in column:
                target = positives if state == "accepted" else negatives
                target[column[topic_id]].append(row_of[paper_id])
        labels = SemanticLabels(
            vectors=(
                np.stack([vectors[int(pk)] for pk in paper_ids])
                if len(paper_ids)
                else np.zeros((0, meanings.shape[1]), np.float32)
            ),
            positives=[np.array(sorted(set(r)), dtype=np.int64) for r in positives],
            negatives=[np.array(sorted(set(r)), dtype=np.int64) for r in negatives],
            paper_ids=paper_ids,
        )
        corpus = _corpus_sample(encoder.model_id, key[-1], meanings.shape[1])
        model = SemanticModel.fit(
            [pk for pk, *_ in topics],
            meanings,
            labels,
            owners=owners,
            corpus=corpus if corpus.shape[1:] == meanings.shape[1:] else None,
        )
        _built = (key, model)
        logger.info(
            "Semantic model: %s topics, %s labelled papers, %s topics accept on their own.",
            model.topic_count,
            len(paper_ids),
            int(model.accepts.sum()),
        )
        return model
