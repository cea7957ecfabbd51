"""The topic classifier: TF-IDF features over a paper's title and abstract and one linear model
(logistic regression, scikit-learn) per topic, each with its own threshold.

Two layers:

- :class:`TopicClassifier` is plain scikit-learn and NumPy: :meth:`~TopicClassifier.fit` on
  labelled texts, :meth:`~TopicClassifier.candidates` for tagging, :meth:`~TopicClassifier.
  scores`, :meth:`~TopicClassifier.explain`, and :meth:`~TopicClassifier.dumps` /
  :meth:`~TopicClassifier.loads` (joblib) for storage in ``ClassifierModel.artifact``.
- The Django side: :func:`classifier_settings` (the ``TOPICS_CLASSIFIER_*`` settings),
  :func:`classifier_active` (the active stored version, loaded once per process and version so
  that every worker scores with the same model) and :func:`classifier_explain`.

Training is :func:`topics.tagging.training.classifier_train` and writing assignments
:func:`topics.tagging.engine.papers_tag`; this module never writes to the database.
"""

from __future__ import annotations

import functools
import io
import logging
import math
import threading
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import joblib
import numpy as np
import scipy.sparse as sp
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold

from ..models import ClassifierModel
from .rules import fold

__all__ = [
    "ARTIFACT_FORMAT",
    "ClassifierLoadError",
    "ClassifierSettings",
    "TopicClassifier",
    "TopicExamples",
    "classifier_active",
    "classifier_explain",
    "classifier_settings",
    "paper_text",
    "threshold_for_precision",
    "tokenize",
]

logger = logging.getLogger(__name__)

ARTIFACT_FORMAT = 1
# Title and abstract are one text; this separator is neither whitespace nor a word character,
# so a rule's phrase cannot run from the end of the title into the abstract.
TITLE_ABSTRACT_SEPARATOR = "\n\x00\n"
# Stored scores are rounded to this many decimals, so a re-run with the same model writes the
# same values; a machine score that moves by less than SCORE_TOLERANCE is not rewritten.
SCORE_DECIMALS = 4
SCORE_TOLERANCE = 0.01
# Inverse regularisation strength of every topic's logistic regression.
REGULARISATION_C = 4.0


@functools.cache
def _separators() -> dict[int, str]:
    """``str.translate`` table turning punctuation, symbols, spaces and control characters of
    the Basic Multilingual Plane into spaces (built once, on first use)."""
    return {code: " " for code in range(0x10000) if unicodedata.category(chr(code))[0] in "PSZC"}


def tokenize(text: str) -> list[str]:
    """The words of ``text`` (already folded by :func:`paper_text`): runs of letters, digits
    and marks between punctuation, symbols and spaces (``"llm-based agents"`` gives ``llm``,
    ``based``, ``agents``). The classifier's tokenizer, for training and tagging alike;
    about twice as fast as a regular expression, which matters on tagging's hot path."""
    return text.translate(_separators()).split()


def paper_text(title: str, abstract: str) -> str:
    """A paper's title and abstract as one folded text (NFKC, case folded; see
    :func:`topics.tagging.rules.fold`): what rules match and what the classifier reads."""
    return fold(f"{title}{TITLE_ABSTRACT_SEPARATOR}{abstract}")


# --- settings --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClassifierSettings:
    """The ``TOPICS_CLASSIFIER_*`` settings, checked.

    - ``target_precision`` (0 < p <= 1, default 0.8): each topic's threshold is the lowest
      score whose held-out precision reaches it;
    - ``min_positives`` (>= 2, default 10): topics with fewer accepted labels get no model and
      are tagged by their rule alone;
    - ``review_margin`` (0 <= m < 1, default 0.1, score units): a score in
      ``[threshold - margin, threshold)`` makes a pending assignment (the review queue);
    - ``curator_weight`` (> 0, default 5.0): training weight of a curator decision; labels
      from rules and imports weigh 1;
    - ``max_papers`` (>= 1, default 200,000): training reads at most this many labelled
      papers, the newest first;
    - ``keep_versions`` (>= 1, default 3): stored versions kept after a training;
    - ``max_features`` (>= 1, default 50,000): TF-IDF vocabulary size.
    """

    target_precision: float = 0.8
    min_positives: int = 10
    review_margin: float = 0.1
    curator_weight: float = 5.0
    max_papers: int = 200_000
    keep_versions: int = 3
    max_features: int = 50_000


_SETTING_CHECKS = {
    "target_precision": (lambda v: 0 < v <= 1, "a number in (0, 1]"),
    "min_positives": (lambda v: isinstance(v, int) and v >= 2, "an integer >= 2"),
    "review_margin": (lambda v: 0 <= v < 1, "a number in [0, 1)"),
    "curator_weight": (lambda v: v > 0, "a positive number"),
    "max_papers": (lambda v: isinstance(v, int) and v >= 1, "an integer >= 1"),
    "keep_versions": (lambda v: isinstance(v, int) and v >= 1, "an integer >= 1"),
    "max_features": (lambda v: isinstance(v, int) and v >= 1, "an integer >= 1"),
}


def classifier_settings() -> ClassifierSettings:
    """Read ``TOPICS_CLASSIFIER_TARGET_PRECISION``, ``..._MIN_POSITIVES``, ``..._REVIEW_MARGIN``,
    ``..._CURATOR_WEIGHT``, ``..._MAX_PAPERS``, ``..._KEEP_VERSIONS`` and ``..._MAX_FEATURES``
    from Django settings (unset: the defaults of :class:`ClassifierSettings`).

    Raises ``ImproperlyConfigured`` naming the setting and what it must be.
    """
    values = {}
    for name, (valid, expected) in _SETTING_CHECKS.items():
        setting = f"TOPICS_CLASSIFIER_{name.upper()}"
        value = getattr(settings, setting, getattr(ClassifierSettings, name))
        try:
            ok = not isinstance(value, bool) and valid(value)
        except TypeError:
            ok = False
        if not ok:
            raise ImproperlyConfigured(f"{setting}={value!r} must be {expected}.")
        values[name] = value
    return ClassifierSettings(**values)


# --- thresholds ------------------------------------------------------------------------------


def threshold_for_precision(
    labels: np.ndarray, scores: np.ndarray, target: float
) -> tuple[float, float, float] | None:
    """The lowest score threshold whose precision on (``labels``, ``scores``) reaches ``target``.

    ``labels``: booleans (positive or not); ``scores``: floats, same length. Predicting
    "positive" for ``score >= threshold``, returns ``(threshold, precision, recall)`` for the
    threshold with the highest recall among those with precision >= ``target``; ``None`` when
    no threshold reaches it (or there is no positive).
    """
    labels = np.asarray(labels, dtype=bool)
    scores = np.asarray(scores, dtype=np.float64)
    positives = int(labels.sum())
    if positives == 0:
        return None
    order = np.argsort(-scores, kind="stable")
    sorted_scores = scores[order]
    true_positives = np.cumsum(labels[order])
    predicted = np.arange(1, len(scores) + 1)
    # A cut can only fall where the next score is lower: tied scores go together.
    last_of_tie = np.append(sorted_scores[1:] < sorted_scores[:-1], True)
    precision = true_positives / predicted
    reaching = np.flatnonzero(last_of_tie & (precision >= target))
    if reaching.size == 0:
        return None
    cut = reaching[-1]
    return (
        float(sorted_scores[cut]),
        float(precision[cut]),
        float(true_positives[cut] / positives),
    )


# --- the model -------------------------------------------------------------------------------


@dataclass(frozen=True)
class TopicExamples:
    """The labelled papers of one topic for :meth:`TopicClassifier.fit`.

    ``rows``: indices into the training texts (ints); ``labels``: booleans, True for a
    positive; ``weights``: positive floats (a curator decision weighs more than a rule's
    label). All three have the same length; a row appears at most once.
    """

    rows: np.ndarray
    labels: np.ndarray
    weights: np.ndarray


@dataclass(frozen=True)
class Candidate:
    """A (paper, topic) pair the classifier scored within the review margin or above.

    ``row`` indexes the texts given to :meth:`TopicClassifier.candidates`; ``score`` is in
    [0, 1], rounded to 4 decimals; ``accepted`` is ``score >= threshold`` (else it is pending
    review)."""

    row: int
    topic_id: int
    score: float
    accepted: bool


def _logit(probability: float) -> float:
    probability = min(max(probability, 1e-12), 1 - 1e-12)
    return math.log(probability / (1 - probability))


class TopicClassifier:
    """A fitted TF-IDF vectoriser and one logistic regression per trained topic.

    - ``counter`` (scikit-learn ``CountVectorizer``: vocabulary, tokens) and ``tfidf``
      (``TfidfTransformer``: sublinear TF, IDF weights, L2 norm), ``None`` with no topic;
    - ``topic_ids``: topic pks with a model, in column order (int64 array, length k);
    - ``coef``: (features, k) float32 weights; ``intercept``, ``thresholds``: length k;
    - ``metrics``: per topic pk (every topic given to :meth:`fit`, trained or not) a dict with
      ``positives``, ``negatives``, ``status`` (``"trained"``, ``"too few positives"``,
      ``"too few negatives"``, ``"target precision not reached"``), ``threshold`` and the
      held-out ``precision``, ``recall`` and ``f1`` at that threshold (``None`` when not
      trained).

    Build with :meth:`fit` or :meth:`loads`.
    """

    def __init__(
        self,
        *,
        counter: CountVectorizer | None,
        tfidf: TfidfTransformer | None,
        topic_ids: np.ndarray,
        coef: np.ndarray,
        intercept: np.ndarray,
        thresholds: np.ndarray,
        metrics: dict[int, dict],
    ):
        self.counter = counter
        self.tfidf = tfidf
        self.topic_ids = np.asarray(topic_ids, dtype=np.int64)
        self.coef = np.asarray(coef, dtype=np.float32)
        self.intercept = np.asarray(intercept, dtype=np.float32)
        self.thresholds = np.asarray(thresholds, dtype=np.float64)
        self.metrics = metrics
        # The stored version it was loaded from (set by classifier_active), else None.
        self.version: int | None = None
        self._columns = {int(topic_id): column for column, topic_id in enumerate(self.topic_ids)}
        self._feature_names = None
        # Token -> feature column + 1: every value is truthy, so ``filter(None, ...)`` drops
        # stop words and unknown tokens in C (:meth:`counts`).
        self._vocabulary_get = (
            {token: column + 1 for token, column in counter.vocabulary_.items()}.get
            if counter is not None
            else None
        )

    def __repr__(self):
        return f"<TopicClassifier {len(self.topic_ids)} topics>"

    @property
    def topic_count(self) -> int:
        return len(self.topic_ids)

    def has_topic(self, topic_id: int) -> bool:
        return topic_id in self._columns

    def threshold(self, topic_id: int) -> float:
        """The score at and above which ``topic_id`` is accepted; KeyError without a model."""
        return float(self.thresholds[self._columns[topic_id]])

    # --- training ----------------------------------------------------------------------------

    @classmethod
    def fit(
        cls,
        texts: Sequence[str],
        examples: Mapping[int, TopicExamples],
        *,
        target_precision: float = 0.8,
        min_positives: int = 10,
        folds: int = 3,
        max_features: int = 50_000,
        random_state: int = 0,
    ) -> TopicClassifier:
        """Fit the vectoriser on ``texts`` (folded with :func:`paper_text`) and, for each topic
        pk in ``examples`` with at least ``min_positives`` positives and 2 negatives, a
        logistic regression on its labelled rows.

        Each topic's threshold comes from out-of-fold scores (stratified cross validation over
        its examples, ``folds`` folds or fewer when a class has fewer examples): the lowest
        with precision >= ``target_precision`` (:func:`threshold_for_precision`). A topic that
        cannot reach it gets no model. The model kept is then fitted on all its examples.

        Raises ``ValueError`` for ``target_precision`` outside (0, 1], ``folds`` < 2, or
        examples whose arrays differ in length or point outside ``texts``.
        """
        if not 0 < target_precision <= 1:
            raise ValueError(f"target_precision {target_precision!r} is not in (0, 1].")
        if folds < 2:
            raise ValueError(f"folds {folds!r}: cross-validation needs at least 2.")
        for topic_id, example in examples.items():
            sizes = {len(example.rows), len(example.labels), len(example.weights)}
            if len(sizes) != 1:
                raise ValueError(f"topic {topic_id}: rows, labels and weights differ in length.")
            if len(example.rows) and (min(example.rows) < 0 or max(example.rows) >= len(texts)):
                raise ValueError(f"topic {topic_id}: a row is outside the {len(texts)} texts.")

        metrics: dict[int, dict] = {}
        trainable = []
        for topic_id, example in examples.items():
            labels = np.asarray(example.labels, dtype=bool)
            positives, negatives = int(labels.sum()), int((~labels).sum())
            metrics[topic_id] = {
                "positives": positives,
                "negatives": negatives,
                "status": "trained",
                "threshold": None,
                "precision": None,
                "recall": None,
                "f1": None,
            }
            if positives < min_positives:
                metrics[topic_id]["status"] = "too few positives"
            elif negatives < 2:
                metrics[topic_id]["status"] = "too few negatives"
            else:
                trainable.append(topic_id)

        counter = tfidf = features = None
        if trainable:
            counter = CountVectorizer(
                lowercase=False,
                tokenizer=tokenize,
                token_pattern=None,
                stop_words="english",
                min_df=2 if len(texts) >= 20 else 1,
                max_features=max_features,
                dtype=np.float32,
            )
            tfidf = TfidfTransformer(sublinear_tf=True)
            features = tfidf.fit_transform(counter.fit_transform(texts))

        topic_ids, columns, intercepts, thresholds = [], [], [], []
        for topic_id in trainable:
            example = examples[topic_id]
            rows = np.asarray(example.rows, dtype=np.int64)
            labels = np.asarray(example.labels, dtype=bool)
            weights = np.asarray(example.weights, dtype=np.float64)
            matrix = features[rows]
            held_out = np.zeros(len(rows))
            splits = min(folds, int(labels.sum()), int((~labels).sum()))
            splitter = StratifiedKFold(n_splits=splits, shuffle=True, random_state=random_state)
            for train, test in splitter.split(np.zeros(len(rows)), labels):
                model = _logistic_regression(random_state)
                model.fit(matrix[train], labels[train], sample_weight=weights[train])
                held_out[test] = model.predict_proba(matrix[test])[:, 1]
            chosen = threshold_for_precision(labels, held_out, target_precision)
            topic_metrics = metrics[topic_id]
            if chosen is None:
                topic_metrics["status"] = "target precision not reached"
                continue
            threshold, precision, recall = chosen
            topic_metrics.update(
                threshold=round(threshold, SCORE_DECIMALS),
                precision=round(precision, 4),
                recall=round(recall, 4),
                f1=round(2 * precision * recall / (precision + recall), 4),
            )
            model = _logistic_regression(random_state)
            model.fit(matrix, labels, sample_weight=weights)
            topic_ids.append(topic_id)
            columns.append(model.coef_[0].astype(np.float32))
            intercepts.append(float(model.intercept_[0]))
            thresholds.append(round(threshold, SCORE_DECIMALS))

        feature_count = features.shape[1] if features is not None else 0
        coef = (
            np.column_stack(columns) if columns else np.zeros((feature_count, 0), dtype=np.float32)
        )
        return cls(
            counter=counter,
            tfidf=tfidf,
            topic_ids=np.array(topic_ids, dtype=np.int64),
            coef=coef,
            intercept=np.array(intercepts, dtype=np.float32),
            thresholds=np.array(thresholds, dtype=np.float64),
            metrics=metrics,
        )

    # --- scoring -----------------------------------------------------------------------------

    def counts(self, texts: Sequence[str]) -> sp.csr_array:
        """(len(texts), features) token counts: what ``counter.transform(texts)`` gives, in
        about two thirds of its time (tagging's hot path). With unigrams, dropping stop words
        and out-of-vocabulary tokens is one dictionary lookup per token."""
        vocabulary_get, separators = self._vocabulary_get, _separators()
        indices: list[int] = []
        indptr = [0]
        for text in texts:
            indices.extend(filter(None, map(vocabulary_get, text.translate(separators).split())))
            indptr.append(len(indices))
        columns = np.array(indices, dtype=np.int32)
        columns -= 1
        counts = sp.csr_array(
            (np.ones(len(columns), dtype=np.float32), columns, np.array(indptr, dtype=np.int32)),
            shape=(len(texts), len(self.counter.vocabulary_)),
        )
        counts.sum_duplicates()
        return counts

    def features(self, texts: Sequence[str]) -> sp.csr_array:
        """(len(texts), features) TF-IDF rows, L2-normalised, float32."""
        return self.tfidf.transform(self.counts(texts), copy=False)

    def _decision(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), k) log-odds."""
        return np.asarray(self.features(texts) @ self.coef) + self.intercept

    def scores(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), k) float64 scores in [0, 1], columns in ``topic_ids`` order; texts as
        :func:`paper_text` makes them. Not rounded."""
        if not self.topic_count or not len(texts):
            return np.zeros((len(texts), self.topic_count))
        return 1.0 / (1.0 + np.exp(-self._decision(texts).astype(np.float64)))

    def candidates(self, texts: Sequence[str], *, margin: float) -> Iterator[Candidate]:
        """The (text, topic) pairs scoring at least ``threshold - margin`` (and at least half
        the threshold, so a low threshold does not flood the review queue), as
        :class:`Candidate`, in row then column order. ``margin`` is in score units, >= 0."""
        if not self.topic_count or not len(texts):
            return
        lower = np.maximum(self.thresholds - margin, self.thresholds / 2)
        # Compare log-odds first: only the few pairs above the bound get a sigmoid.
        bound = np.array([_logit(value) for value in lower]) - 1e-6
        decision = self._decision(texts)
        rows, columns = np.nonzero(decision >= bound)
        values = decision[rows, columns].astype(np.float64)
        scores = np.round(1.0 / (1.0 + np.exp(-values)), SCORE_DECIMALS)
        pairs = zip(rows.tolist(), columns.tolist(), scores.tolist(), strict=True)
        for row, column, score in pairs:
            if score >= lower[column]:
                yield Candidate(
                    row=row,
                    topic_id=int(self.topic_ids[column]),
                    score=score,
                    accepted=bool(score >= self.thresholds[column]),
                )

    def explain(self, text: str, topic_id: int, *, limit: int = 10) -> list[tuple[str, float]]:
        """The words of ``text`` that raised its score for ``topic_id`` most, largest first:
        ``[(word, weight), ...]`` with at most ``limit`` entries, ``weight`` > 0 being the word's
        contribution to the log-odds (TF-IDF value times the model's coefficient), rounded to
        4 decimals. ``[]`` when the topic has no model."""
        column = self._columns.get(topic_id)
        if column is None or self.counter is None:
            return []
        features = self.features([text])
        contributions = features.data * self.coef[features.indices, column]
        if self._feature_names is None:
            self._feature_names = self.counter.get_feature_names_out()
        ranked = sorted(
            (
                (str(self._feature_names[index]), float(weight))
                for index, weight in zip(features.indices, contributions, strict=True)
                if weight > 0
            ),
            key=lambda item: (-item[1], item[0]),
        )
        return [(word, round(weight, 4)) for word, weight in ranked[:limit]]

    # --- storage -----------------------------------------------------------------------------

    def dumps(self) -> bytes:
        """The classifier serialised with joblib (compressed), for ``ClassifierModel.artifact``."""
        buffer = io.BytesIO()
        joblib.dump(
            {
                "format": ARTIFACT_FORMAT,
                "counter": self.counter,
                "tfidf": self.tfidf,
                "topic_ids": self.topic_ids,
                "coef": self.coef,
                "intercept": self.intercept,
                "thresholds": self.thresholds,
                "metrics": self.metrics,
            },
            buffer,
            compress=3,
        )
        return buffer.getvalue()

    @classmethod
    def loads(cls, data: bytes) -> TopicClassifier:
        """Rebuild a classifier from :meth:`dumps` output. Only load bytes this project stored:
        joblib unpickles them. Raises ``ValueError`` for bytes that are not such an artifact."""
        try:
            state = joblib.load(io.BytesIO(bytes(data)))
        except Exception as error:  # joblib raises many kinds for foreign bytes
            raise ValueError(f"not a stored classifier: {error}") from error
        if not isinstance(state, dict) or state.get("format") != ARTIFACT_FORMAT:
            raise ValueError(f"not a classifier artifact of format {ARTIFACT_FORMAT}.")
        state.pop("format")
        try:
            return cls(**state)
        except TypeError as error:  # the fields of another layout
            raise ValueError(
                f"not a classifier artifact of format {ARTIFACT_FORMAT}: {error}"
            ) from error


def _logistic_regression(random_state: int) -> LogisticRegression:
    # liblinear: fast on sparse TF-IDF; balanced class weights, since positives are rare.
    return LogisticRegression(
        C=REGULARISATION_C,
        solver="liblinear",
        class_weight="balanced",
        max_iter=1000,
        random_state=random_state,
    )


# --- the stored, active classifier -----------------------------------------------------------


class ClassifierLoadError(RuntimeError):
    """The active stored classifier cannot be loaded; the message names its version."""


_loaded_lock = threading.Lock()
# ((row pk, version), classifier): the pk too, so a version number reused after the table
# was emptied never serves the old model.
_loaded: tuple[tuple[int, int], TopicClassifier] | None = None


def classifier_active() -> TopicClassifier | None:
    """The active stored classifier, or ``None`` when no version is active.

    Each process keeps the last loaded version: one query (the active row's pk and version)
    when it is still current, two when a newer version is loaded. Raises
    :class:`ClassifierLoadError` when the stored artifact cannot be read, so tagging fails
    loudly instead of tagging without the model.
    """
    global _loaded
    key = ClassifierModel.objects.filter(active=True).values_list("pk", "version").first()
    if key is None:
        return None
    loaded = _loaded
    if loaded is not None and loaded[0] == key:
        return loaded[1]
    with _loaded_lock:
        if _loaded is not None and _loaded[0] == key:
            return _loaded[1]
        artifact = ClassifierModel.objects.filter(pk=key[0]).values_list("artifact", flat=True)
        artifact = artifact.first()
        if artifact is None:
            raise ClassifierLoadError(f"Classifier v{key[1]} disappeared while loading it.")
        try:
            classifier = TopicClassifier.loads(artifact)
        except ValueError as error:
            raise ClassifierLoadError(f"Classifier v{key[1]} cannot be loaded: {error}") from None
        classifier.version = key[1]
        logger.info("Loaded classifier v%s (%s topics).", key[1], classifier.topic_count)
        _loaded = (key, classifier)
        return classifier


def classifier_explain(*, paper, topic, limit: int = 10) -> list[tuple[str, float]]:
    """The words of ``paper``'s title and abstract that raised its classifier score for
    ``topic`` most, largest first: ``[(word, weight), ...]``, at most ``limit``; ``weight`` is
    the word's contribution to the log-odds. ``[]`` when no classifier is active or ``topic``
    has no model in it. Raises :class:`ClassifierLoadError` like :func:`classifier_active`."""
    classifier = classifier_active()
    if classifier is None:
        return []
    return classifier.explain(paper_text(paper.title, paper.abstract), topic.pk, limit=limit)
