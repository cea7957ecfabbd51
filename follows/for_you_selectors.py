""" "For you": new papers ranked for one reader from what they saved (the library), what they
follow (topics, saved searches) and what they said they are not interested in.

After arxiv-sanity-lite (karpathy/arxiv-sanity-lite, ``serve.py``: one small linear model per
user, saved papers as positives, the rest as negatives), on the papers' stored sentence
embeddings (``papers.embeddings``) instead of TF-IDF:

- **positives**: the reader's saved papers (weight 1) and the newest papers of their follows
  (weight :data:`FOLLOWED_WEIGHT`, weaker: following a topic says less than saving a paper);
- **negatives**: the papers they pressed "Not interested" on (weight :data:`DISMISSED_WEIGHT`)
  and a random sample of the candidates (seeded by the user, so a page reload ranks the same);
- with at least :data:`MIN_TRAIN_POSITIVES` positives and :data:`MIN_TRAIN_NEGATIVES`
  negatives, a logistic regression (scikit-learn, balanced classes) scores each candidate with
  its probability of being a positive; with fewer, the cosine to the weighted mean of the
  positive vectors does;
- then a candidate loses :data:`DISMISSED_PENALTY` × its cosine to the nearest dismissed paper
  (its neighbours move down at once, whatever the model learned from one example) and gains
  :data:`FOLLOWED_BONUS` when one of the reader's follows matches it.

Candidates: live papers (neither withdrawn nor deleted) with a vector, submitted in the last
``FOR_YOU_DAYS`` days up to the newest submitted paper (so historical data works, as momentum
does), not saved, not dismissed, a paper stored under two ids once (``papers.duplicates``).
No side effects; a fixed number of queries whatever the number of picks.
"""

from __future__ import annotations

import datetime as dt
import random
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from django.conf import settings
from django.db.models import Max

from papers.duplicates import duplicates_collapse
from papers.embeddings.index import stored_matrix
from papers.embeddings.vectors import load_vectors, sound_vectors, stack, vector_from_bytes
from papers.models import Paper, PaperEmbedding
from topics.cards import PaperCard, paper_cards
from topicsite.blas import one_blas_thread

from .models import Follow, ForYouFeedback, LibraryItem
from .selectors import user_follow_matches, user_newest_paper_ids

# Picks on the /for-you/ page.
FOR_YOU_PICKS = 30
# New papers ranked at most (the newest first).
CANDIDATES_MAX = 3000
# The newest papers of the reader's follows taken as weak positives.
FOLLOWED_POSITIVES_MAX = 200
FOLLOWED_WEIGHT = 0.5
DISMISSED_WEIGHT = 3.0
# Candidates sampled as negatives for the model.
NEGATIVE_SAMPLE = 300
MIN_TRAIN_POSITIVES = 5
MIN_TRAIN_NEGATIVES = 20
DISMISSED_PENALTY = 0.5
FOLLOWED_BONUS = 0.1
# A pick says "close to <saved paper>" when its cosine to that paper is at least this.
CLOSE_TO_MIN = 0.3


@dataclass
class ForYouRanking:
    """What the ranking found for one reader: ``ranked`` ``[(paper id, score)]`` best first
    (scores comparable within one ranking only), ``close_to`` ``{paper id: (saved paper id,
    cosine)}`` (the nearest saved paper at or above :data:`CLOSE_TO_MIN`), ``saved_count``,
    ``follow_count`` and ``dismissed_count`` (the reader's signals), the submitted window
    ``since`` (exclusive) .. ``until`` (inclusive), ``None`` when nothing was ranked."""

    ranked: list[tuple[int, float]] = field(default_factory=list)
    close_to: dict[int, tuple[int, float]] = field(default_factory=dict)
    saved_count: int = 0
    follow_count: int = 0
    dismissed_count: int = 0
    since: dt.date | None = None
    until: dt.date | None = None

    @property
    def has_signal(self) -> bool:
        """Whether the reader saved or follows anything the ranking can start from."""
        return bool(self.saved_count or self.follow_count)


@dataclass
class ForYouPick:
    """One pick: the paper's ``card``, its ``score``, the saved paper it is close to
    (``close_to_title`` / ``close_to_url``, empty when none) and the reader's follows that
    matched it (``follows``, topics first)."""

    card: PaperCard
    score: float
    close_to_title: str = ""
    close_to_url: str = ""
    follows: list[Follow] = field(default_factory=list)

    @property
    def reasons(self) -> list[str]:
        """Why it was picked, as plain sentences: "close to <saved paper title>", "in
        <followed topic>", "matches your search “query”", "by <followed author>"."""
        reasons = [f"close to {self.close_to_title}"] if self.close_to_title else []
        for follow in self.follows:
            if follow.kind == Follow.Kind.TOPIC:
                reasons.append(f"in {follow.topic.display_name}")
            elif follow.kind == Follow.Kind.SEARCH:
                reasons.append(f"matches your search {follow.label}")
            else:  # an author follow, where the follows carry them
                reasons.append(f"by {follow.label}")
        return reasons


def _vectors_with_model(
    paper_ids: list[int],
) -> tuple[str | None, int, dict[int, np.ndarray]]:
    """``(model, dimension, {paper id: vector})``: the vectors of ``paper_ids`` of the model
    (and dimension) most of them were made with, damaged ones left out
    (:func:`~papers.embeddings.vectors.sound_vectors`); ``(None, 0, {})`` without any. No
    encoder is loaded. One query."""
    if not paper_ids:
        return None, 0, {}
    rows = list(
        PaperEmbedding.objects.filter(paper_id__in=paper_ids).values_list(
            "paper_id", "model", "dimension", "vector"
        )
    )
    if not rows:
        return None, 0, {}
    model, dimension = Counter((row[1], row[2]) for row in rows).most_common(1)[0][0]
    vectors = sound_vectors(
        {pk: vector_from_bytes(data) for pk, m, d, data in rows if (m, d) == (model, dimension)},
        dimension,
    )
    if not vectors:
        return None, 0, {}
    return model, dimension, vectors


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector


def _scores(
    *,
    candidates: np.ndarray,
    positives: np.ndarray,
    positive_weights: np.ndarray,
    dismissed: np.ndarray,
    seed: int,
) -> np.ndarray:
    """Base score of each row of ``candidates`` (n, d): the model's probability, or the cosine
    to the weighted mean of ``positives``; see the module docstring."""
    rng = random.Random(seed)
    sample = rng.sample(range(len(candidates)), min(NEGATIVE_SAMPLE, len(candidates)))
    negatives = len(sample) + len(dismissed)
    if len(positives) >= MIN_TRAIN_POSITIVES and negatives >= MIN_TRAIN_NEGATIVES:
        from sklearn.linear_model import LogisticRegression

        features = np.vstack([positives, candidates[sample], dismissed])
        labels = np.r_[np.ones(len(positives)), np.zeros(negatives)]
        weights = np.r_[
            positive_weights, np.ones(len(sample)), np.full(len(dismissed), DISMISSED_WEIGHT)
        ]
        model = LogisticRegression(C=1.0, class_weight="balanced", max_iter=500)
        model.fit(features, labels, sample_weight=weights)
        return model.predict_proba(candidates)[:, 1]
    centre = _unit((positives * positive_weights[:, None]).sum(axis=0))
    return candidates @ centre


def for_you_ranking(
    *, user, days: int | None = None, exclude_ids: set[int] | frozenset = frozenset()
) -> ForYouRanking:
    """Rank new papers for ``user`` (see the module docstring): at most
    :data:`CANDIDATES_MAX` papers submitted in the ``days`` days (default
    ``settings.FOR_YOU_DAYS``) up to the newest submitted paper, less ``exclude_ids``. Empty
    ``ranked`` when the reader saved and follows nothing or no candidate has a vector of the
    model of their papers' vectors. At most twelve queries, whatever the number of papers.
    The model and the products run on one BLAS thread (``topicsite.blas``): they are small,
    and a second thread doubled the CPU a request took for no gain in time. Raises
    ValueError when ``days`` < 1."""
    with one_blas_thread():
        return _for_you_ranking(user=user, days=days, exclude_ids=exclude_ids)


def _for_you_ranking(*, user, days: int | None, exclude_ids: set[int] | frozenset) -> ForYouRanking:
    days = settings.FOR_YOU_DAYS if days is None else days
    if days < 1:
        raise ValueError(f"days must be at least 1, got {days}")
    saved_ids = list(LibraryItem.objects.filter(user=user).values_list("paper_id", flat=True))
    dismissed_ids = list(
        ForYouFeedback.objects.filter(user=user).values_list("paper_id", flat=True)
    )
    follow_count = Follow.objects.filter(user=user).count()
    ranking = ForYouRanking(
        saved_count=len(saved_ids), follow_count=follow_count, dismissed_count=len(dismissed_ids)
    )
    if not ranking.has_signal:
        return ranking
    until = Paper.objects.live().aggregate(newest=Max("submitted"))["newest"]
    if until is None:  # no live paper at all
        return ranking
    since = until - dt.timedelta(days=days)
    excluded = set(saved_ids) | set(dismissed_ids) | set(exclude_ids)
    # The candidates are the window's newest CANDIDATES_MAX + len(excluded) papers, so a
    # followed one among them has no more followed papers above it than that: the same
    # number of the follows' newest papers in the window holds every one of them.
    followed_window = (
        user_newest_paper_ids(user=user, limit=CANDIDATES_MAX + len(excluded), after=since)
        if follow_count
        else []
    )
    # The follows' newest papers, the weak positives: the window's first ones when it holds
    # enough of them (the same papers, in the same order: every paper in the window is newer
    # than any before it), else read without the window.
    if len(followed_window) >= FOLLOWED_POSITIVES_MAX or not follow_count:
        followed_ids = followed_window[:FOLLOWED_POSITIVES_MAX]
    else:
        followed_ids = user_newest_paper_ids(user=user, limit=FOLLOWED_POSITIVES_MAX)
    model, dimension, known = _vectors_with_model(saved_ids + followed_ids + dismissed_ids)
    if model is None:
        return ranking
    ranking.since, ranking.until = since, until
    window = Paper.objects.live().filter(submitted__gt=since, submitted__lte=until)
    window_ids = [
        pk
        for pk in window.newest_first().values_list("pk", flat=True)[
            : CANDIDATES_MAX + len(excluded)
        ]
        if pk not in excluded
    ][:CANDIDATES_MAX]
    followed_new = set(followed_window).intersection(window_ids)
    # The candidates' vectors from the vector index where it holds them (no query).
    candidate_ids, candidates = stored_matrix(window_ids, model=model, dimension=dimension)
    if not candidate_ids:
        return ranking
    saved_known = [pk for pk in saved_ids if pk in known]
    saved_set = set(saved_ids)
    followed_known = [pk for pk in followed_ids if pk in known and pk not in saved_set]
    positive_ids = saved_known + followed_known
    if not positive_ids:
        return ranking
    positives = stack((known[pk] for pk in positive_ids), dimension)
    weights = np.r_[np.ones(len(saved_known)), np.full(len(followed_known), FOLLOWED_WEIGHT)]
    dismissed = stack((known[pk] for pk in dismissed_ids if pk in known), dimension)
    scores = _scores(
        candidates=candidates,
        positives=positives,
        positive_weights=weights,
        dismissed=dismissed,
        seed=user.pk,
    )
    if len(dismissed):
        scores = scores - DISMISSED_PENALTY * np.clip((candidates @ dismissed.T).max(axis=1), 0, 1)
    scores = scores + FOLLOWED_BONUS * np.fromiter(
        (pk in followed_new for pk in candidate_ids), dtype=bool, count=len(candidate_ids)
    )
    order = np.argsort(-scores, kind="stable")
    ranked_ids = duplicates_collapse([candidate_ids[i] for i in order], already=saved_ids)
    score_of = dict(zip(candidate_ids, scores.tolist(), strict=True))
    ranking.ranked = [(pk, score_of[pk]) for pk in ranked_ids]
    if saved_known:
        saved_matrix = stack((known[pk] for pk in saved_known), dimension)
        cosines = candidates @ saved_matrix.T
        best = cosines.argmax(axis=1)
        best_cosine = cosines[np.arange(len(candidate_ids)), best]
        for row in np.flatnonzero(best_cosine >= CLOSE_TO_MIN).tolist():
            ranking.close_to[candidate_ids[row]] = (
                saved_known[int(best[row])],
                float(best_cosine[row]),
            )
    return ranking


def for_you_picks(
    *,
    user,
    days: int | None = None,
    limit: int = FOR_YOU_PICKS,
    exclude_ids: set[int] | frozenset = frozenset(),
) -> tuple[ForYouRanking, list[ForYouPick]]:
    """The ranking (:func:`for_you_ranking`) and its first ``limit`` papers as
    :class:`ForYouPick` s, best first, each with why it was picked. At most twenty queries,
    whatever ``limit``."""
    ranking = for_you_ranking(user=user, days=days, exclude_ids=exclude_ids)
    top = ranking.ranked[:limit]
    if not top:
        return ranking, []
    return ranking, _explained(user=user, top=top, close_to=ranking.close_to)


def explained_picks(*, user, paper_ids: list[int]) -> list[ForYouPick]:
    """``paper_ids`` (picks made earlier, such as a digest's) as :class:`ForYouPick` s in that
    order, each with why it is for ``user`` now: the nearest saved paper at or above
    :data:`CLOSE_TO_MIN` and the follows that match it (``score`` 0.0; a paper deleted since
    is left out). Eight queries at most, whatever the number of papers."""
    if not paper_ids:
        return []
    close_to = {
        pk: nearest
        for pk, nearest in _nearest_saved(user=user, paper_ids=paper_ids).items()
        if nearest[1] >= CLOSE_TO_MIN
    }
    return _explained(user=user, top=[(pk, 0.0) for pk in paper_ids], close_to=close_to)


def _explained(
    *, user, top: list[tuple[int, float]], close_to: dict[int, tuple[int, float]]
) -> list[ForYouPick]:
    ids = [pk for pk, _ in top]
    cards = {card.pk: card for card in paper_cards(paper_ids=ids)}
    matches = user_follow_matches(user=user, paper_ids=ids)
    saved_refs = {close_to[pk][0] for pk in ids if pk in close_to}
    titles = {
        paper.pk: (paper.title, paper.get_absolute_url())
        for paper in Paper.objects.filter(pk__in=saved_refs).only("pk", "arxiv_id", "title")
    }
    picks = []
    for pk, score in top:
        if pk not in cards:
            continue
        title, url = titles.get(close_to.get(pk, (None, 0))[0], ("", ""))
        picks.append(
            ForYouPick(
                card=cards[pk],
                score=score,
                close_to_title=title,
                close_to_url=url,
                follows=matches.get(pk, []),
            )
        )
    return picks


def saved_closeness(*, user, paper_ids: list[int]) -> dict[int, float]:
    """``{paper id: cosine to the nearest paper ``user`` saved}`` for the papers of
    ``paper_ids`` with a vector (of the model of the saved papers' vectors); empty when the
    reader saved nothing with a vector. Three queries at most."""
    return {
        pk: cosine for pk, (_, cosine) in _nearest_saved(user=user, paper_ids=paper_ids).items()
    }


def _nearest_saved(*, user, paper_ids: list[int]) -> dict[int, tuple[int, float]]:
    """``{paper id: (nearest saved paper id, cosine)}``, as :func:`saved_closeness`."""
    saved_ids = list(LibraryItem.objects.filter(user=user).values_list("paper_id", flat=True))
    model, dimension, saved = _vectors_with_model(saved_ids)
    if model is None or not paper_ids:
        return {}
    vectors = sound_vectors(load_vectors(paper_ids, model=model), dimension)
    if not vectors:
        return {}
    saved_pks = list(saved)
    saved_matrix = stack(saved.values(), dimension)
    ids = list(vectors)
    cosines = stack((vectors[pk] for pk in ids), dimension) @ saved_matrix.T
    best = cosines.argmax(axis=1)
    return {
        pk: (saved_pks[int(column)], float(cosines[row, column]))
        for row, (pk, column) in enumerate(zip(ids, best, strict=True))
    }


def relevance_key(
    *, matched_follows: int, closeness: float | None, submitted: dt.date, pk: int
) -> tuple:
    """The sort key that puts the more relevant of two papers of one period first: more of the
    reader's follows matching it first, then closer (cosine) to the nearest paper the reader
    saved (no vector: last), then newest submitted, then newest id. Ascending order."""
    return (
        -matched_follows,
        -(closeness if closeness is not None else -2.0),
        -submitted.toordinal(),
        -pk,
    )
