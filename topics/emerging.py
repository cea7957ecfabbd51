"""Emerging topics: clusters of recent papers that no topic fits, for curators to adopt as new
topics (issue 16, item 7).

:func:`emerging_clusters_refresh` (``manage.py find_emerging``, the ``topics.tasks.find_emerging``
task) recomputes them:

1. **Papers no topic fits**: live papers submitted in the last ``weeks`` weeks (default
   :data:`WINDOW_WEEKS`) with an embedding and no accepted or pending assignment. Pending is
   the review queue, where semantic tagging sends a topic's best-fitting papers as
   suggestions: a paper with none has a low best semantic score for every topic, and a paper a
   topic was suggested for is left to the curator deciding it. At most :data:`MAX_PAPERS`,
   newest first (clustering costs memory quadratic in the papers).
2. **Clusters** on their embeddings: scikit-learn's agglomerative clustering, average linkage
   on cosine distance, cut at ``distance_threshold`` (default :data:`DISTANCE_THRESHOLD`);
   clusters of fewer than ``min_size`` papers (default :data:`MIN_SIZE`) are dropped.
3. For each: size, growth (the last four weeks against the four before), suggested name terms
   (class-based TF-IDF, "c-TF-IDF": a term's frequency in the cluster's titles and abstracts
   weighed by how rare it is across all clusters and the unclustered papers; unigrams and
   bigrams, a bigram preferred to the words it holds) and example titles (the papers nearest
   the centre).

:func:`emerging_cluster_adopt` makes a cluster a topic in one step: the topic (through
``topics.services.topic_create``) and its papers as curator-accepted assignments (through
``topics.assignments.assignment_add``), the topic's first labels.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone
from sklearn.cluster import AgglomerativeClustering
from sklearn.feature_extraction.text import CountVectorizer

from papers.models import Paper, PaperEmbedding

from .assignments import assignment_add
from .models import Assignment, EmergingCluster, EmergingClusterPaper, Topic
from .services import topic_create

# The recent papers clustered: the last this many weeks (growth compares its last four weeks
# with the four before).
WINDOW_WEEKS = 8
GROWTH_WEEKS = 4
# Clusters are cut where the average cosine distance between two groups passes this; chosen
# by bench/bench_emerging.py (beyond it, clusters stop being mostly one arXiv category).
DISTANCE_THRESHOLD = 0.55
MIN_SIZE = 5
MAX_PAPERS = 4000
TERMS = 8
EXAMPLES = 5


def unfitted_recent_papers(*, since: dt.date, until: dt.date) -> list[int]:
    """The pks of live papers submitted in ``[since, until]`` that have an embedding and no
    accepted or pending assignment, newest first, at most :data:`MAX_PAPERS`. One query."""
    fitted = Assignment.objects.filter(
        paper_id=OuterRef("pk"),
        state__in=(Assignment.State.ACCEPTED, Assignment.State.PENDING),
    )
    return list(
        Paper.objects.live()
        .filter(submitted__gte=since, submitted__lte=until, embedding__isnull=False)
        .exclude(Exists(fitted))
        .newest_first()
        .values_list("pk", flat=True)[:MAX_PAPERS]
    )


def _vectors(paper_ids: Sequence[int]) -> dict[int, np.ndarray]:
    """The papers' embeddings of the current model (the newest embedding's), float32 rows."""
    model = PaperEmbedding.objects.order_by("-embedded_at").values_list("model", flat=True).first()
    rows = PaperEmbedding.objects.filter(paper_id__in=paper_ids, model=model).values_list(
        "paper_id", "vector"
    )
    return {pk: np.frombuffer(bytes(vector), dtype="<f4") for pk, vector in rows}


def cluster_vectors(vectors: np.ndarray, *, distance_threshold: float, min_size: int) -> list:
    """Group the rows of ``vectors`` (n × d, L2-normalised float32) by agglomerative
    clustering (average linkage, cosine distance, cut at ``distance_threshold`` in [0, 2]).
    Returns the clusters of at least ``min_size`` rows as arrays of row indexes, largest
    first. Raises ValueError for a threshold outside [0, 2] or ``min_size`` below 2."""
    if not 0.0 <= distance_threshold <= 2.0:
        raise ValueError(f"distance_threshold must be between 0 and 2, got {distance_threshold}")
    if min_size < 2:
        raise ValueError(f"min_size must be at least 2, got {min_size}")
    if len(vectors) < min_size:
        return []
    labels = AgglomerativeClustering(
        n_clusters=None,
        metric="cosine",
        linkage="average",
        distance_threshold=distance_threshold,
    ).fit_predict(vectors)
    groups = [np.flatnonzero(labels == label) for label in np.unique(labels)]
    return sorted((g for g in groups if len(g) >= min_size), key=lambda g: (-len(g), g[0]))


def cluster_terms(documents: Sequence[str], clusters: Sequence[Sequence[int]], *, top: int = TERMS):
    """The ``top`` name terms of each cluster (lists of indexes into ``documents``), best
    first, by class-based TF-IDF: each cluster's documents joined as one class, the documents
    in no cluster as one more; a term's weight in a class is its frequency there (L1) times
    ``log(1 + average class size in words / its frequency over all classes)``. Unigrams and
    bigrams of words (letters, inner hyphens: ``x-ray``), English stop words and terms in
    fewer than two documents left out; a word gives way to a bigram holding it that weighs at
    least half as much; a term that is another chosen one in the plural or in another order
    ("galaxies" after "galaxy") is skipped. Each term is given as the cluster's texts most
    often write it (``QCD``, ``X-ray``). Returns one list of strings per cluster."""
    if not clusters:
        return []
    in_cluster = np.zeros(len(documents), dtype=bool)
    classes = []
    for members in clusters:
        classes.append(" ".join(documents[i] for i in members))
        in_cluster[list(members)] = True
    classes.append(" ".join(d for d, used in zip(documents, in_cluster, strict=True) if not used))
    vectorizer = CountVectorizer(
        ngram_range=(1, 2), stop_words="english", min_df=2, token_pattern=_TOKEN
    )
    try:
        vectorizer.fit(documents)
    except ValueError:  # no term in two documents
        return [[] for _ in clusters]
    counts = vectorizer.transform(classes).astype(np.float64).toarray()
    words_per_class = counts.sum(axis=1)
    frequency = counts.sum(axis=0)
    tf = counts / np.maximum(words_per_class[:, None], 1.0)
    idf = np.log(1.0 + words_per_class.mean() / np.maximum(frequency, 1.0))
    weights = tf * idf
    names = list(vectorizer.get_feature_names_out())
    # The bigrams holding each word: a word whose bigram weighs at least half as much gives
    # way to it ("diffusion" to "diffusion policy").
    holders: dict[str, list[int]] = {}
    for index, term in enumerate(names):
        for word in term.split(" ") if " " in term else ():
            holders.setdefault(word, []).append(index)
    result = []
    for row in weights[: len(clusters)]:
        chosen: list[str] = []
        for index in np.argsort(-row, kind="stable"):
            if row[index] <= 0 or len(chosen) == top:
                break
            term = names[index]
            if " " not in term:
                inside = holders.get(term, [])
                if any(term in c.split(" ") for c in chosen if " " in c) or any(
                    row[b] >= row[index] / 2 for b in inside
                ):
                    continue
            if _term_key(term) in {_term_key(c) for c in chosen}:
                continue
            chosen.append(term)
        result.append(chosen)
    return [
        [_surface_form(term, [documents[i] for i in members]) for term in chosen]
        for chosen, members in zip(result, clusters, strict=True)
    ]


# Words of letters (inner hyphens too: "x-ray", "born-infeld"), three characters at least.
_TOKEN = r"(?u)\b(?:[^\W\d_]+(?:-[^\W\d_]+)+|[^\W\d_]{3,})\b"


def _term_key(term: str) -> frozenset[str]:
    """The words of ``term`` in no order, each without a plural ending: "galaxies" and
    "galaxy", "lie algebra" and "algebra lie" have one key."""
    words = set()
    for word in term.split(" "):
        if word.endswith("ies") and len(word) > 4:
            word = word[:-3] + "y"
        elif word.endswith("s") and not word.endswith("ss") and len(word) > 3:
            word = word[:-1]
        words.add(word)
    return frozenset(words)


def _surface_form(term: str, texts: Sequence[str]) -> str:
    """``term`` as ``texts`` most often write it (case and hyphens kept; ties: the lower-case
    form); ``term`` itself when they never do."""
    pattern = re.compile(
        r"(?<![\w-])" + r"[\s-]+".join(re.escape(word) for word in term.split(" ")) + r"(?![\w-])",
        re.IGNORECASE,
    )
    forms = Counter(match.group(0) for text in texts for match in pattern.finditer(text))
    if not forms:
        return term
    return max(forms.items(), key=lambda item: (item[1], item[0].islower()))[0]


def suggested_name(terms: Sequence[str]) -> str:
    """A topic name from name ``terms``: the first two, the first letter capitalised
    (``["diffusion policy", "robot"]`` -> ``"Diffusion policy, robot"``); ``"Unnamed cluster"``
    without terms."""
    if not terms:
        return "Unnamed cluster"
    name = ", ".join(terms[:2])
    return name[0].upper() + name[1:]


def emerging_clusters_refresh(
    *,
    as_of: dt.date | None = None,
    weeks: int = WINDOW_WEEKS,
    distance_threshold: float = DISTANCE_THRESHOLD,
    min_size: int = MIN_SIZE,
) -> list[EmergingCluster]:
    """Recompute the emerging clusters over the ``weeks`` weeks up to ``as_of`` (default
    today): the clusters not adopted are replaced, adopted ones kept as a record. Returns the
    new clusters, growing and large first. Idempotent: the same papers give the same clusters.

    Raises ValueError for ``weeks`` below 1 or a window reaching before year 1, and as
    :func:`cluster_vectors` does for the threshold and the size; nothing is changed then."""
    if weeks < 1:
        raise ValueError(f"weeks must be at least 1, got {weeks}")
    cluster_vectors(np.zeros((0, 1)), distance_threshold=distance_threshold, min_size=min_size)
    as_of = as_of or timezone.localdate()
    try:
        since = as_of - dt.timedelta(weeks=max(weeks, 2 * GROWTH_WEEKS)) + dt.timedelta(days=1)
    except OverflowError:
        raise ValueError(
            f"the window of {weeks} weeks up to {as_of.isoformat()} reaches before year 1"
        ) from None
    since = as_of - dt.timedelta(weeks=weeks) + dt.timedelta(days=1)
    paper_ids = unfitted_recent_papers(since=since, until=as_of)
    vectors = _vectors(paper_ids)
    paper_ids = [pk for pk in paper_ids if pk in vectors]
    matrix = np.vstack([vectors[pk] for pk in paper_ids]) if paper_ids else np.zeros((0, 1))
    clusters = cluster_vectors(matrix, distance_threshold=distance_threshold, min_size=min_size)
    papers = Paper.objects.in_bulk(paper_ids) if clusters else {}
    documents = [f"{papers[pk].title}. {papers[pk].abstract}" for pk in paper_ids] if papers else []
    terms = cluster_terms(documents, clusters)
    recent_from = as_of - dt.timedelta(weeks=GROWTH_WEEKS)
    previous_from = recent_from - dt.timedelta(weeks=GROWTH_WEEKS)
    with transaction.atomic():
        EmergingCluster.objects.filter(adopted_topic__isnull=True).delete()
        made = []
        for members, cluster_terms_ in zip(clusters, terms, strict=True):
            centre = matrix[members].mean(axis=0)
            centre /= np.linalg.norm(centre) or 1.0
            similarity = matrix[members] @ centre
            order = np.argsort(-similarity, kind="stable")
            member_papers = [papers[paper_ids[i]] for i in members]
            recent = sum(p.submitted > recent_from for p in member_papers)
            previous = sum(previous_from < p.submitted <= recent_from for p in member_papers)
            cluster = EmergingCluster.objects.create(
                name=suggested_name(cluster_terms_),
                terms=list(cluster_terms_),
                example_titles=[member_papers[i].title for i in order[:EXAMPLES]],
                size=len(members),
                recent_count=recent,
                previous_count=previous,
                growth=(recent + 1) / (previous + 1),
                window_start=since,
                window_end=as_of,
            )
            EmergingClusterPaper.objects.bulk_create(
                EmergingClusterPaper(
                    cluster=cluster, paper=member_papers[i], similarity=float(similarity[i])
                )
                for i in range(len(members))
            )
            made.append(cluster)
    return sorted(made, key=lambda c: (-c.growth, -c.size, c.pk))


def emerging_cluster_adopt(
    *, cluster: EmergingCluster, name: str, parent: Topic | None, user, slug: str | None = None
) -> Topic:
    """Make ``cluster`` a topic named ``name`` under ``parent`` (None: a root), its
    description naming the cluster's terms, and place each of its live papers in it as a
    curator (source curator, accepted, decided by ``user``): the topic's first labels. One
    transaction; the cluster records the topic, who adopted it and when.

    Returns the topic. Raises ValueError when the cluster was adopted already (naming the
    topic) and as ``topics.services.topic_create`` does (a blank name; Django's
    ``ValidationError`` for a used slug); nothing is written then."""
    with transaction.atomic():
        locked = EmergingCluster.objects.select_for_update().get(pk=cluster.pk)
        if locked.adopted_topic_id is not None:
            raise ValueError(
                f"This cluster was adopted already, as the topic {locked.adopted_topic.name!r}."
            )
        topic = topic_create(
            name=name,
            slug=slug,
            parent=parent,
            description="Adopted from an emerging cluster of recent papers; its terms: "
            + ", ".join(locked.terms)
            + ".",
        )
        for paper in (
            Paper.objects.live().filter(pk__in=locked.members.values("paper_id")).order_by("pk")
        ):
            assignment_add(paper=paper, topic=topic, user=user)
        locked.adopted_topic = topic
        locked.adopted_by = user
        locked.adopted_at = timezone.now()
        locked.save(update_fields=["adopted_topic", "adopted_by", "adopted_at", "updated_at"])
    for name_ in ("adopted_topic", "adopted_by", "adopted_at"):
        setattr(cluster, name_, getattr(locked, name_))
    return topic
