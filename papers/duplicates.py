"""Near-duplicates: the same paper stored under two ids (an arXiv identifier and a local or
snapshot copy, or two arXiv identifiers for the same text), detected, linked
(:class:`~papers.models.PaperDuplicate`) and sent once.

Detection (:func:`duplicates_detect`) has two steps:

1. **Blocking**, cheap: for each paper, at most :data:`CANDIDATES` stored papers that share
   two of the three longest words of its title (PostgreSQL full-text search on the title's
   part of ``Paper.search_vector``, so one typo in the title still finds the copy), or its
   first author.
2. **Similarity**: TF-IDF cosines of the titles (character n-grams) and of the abstracts
   (words), combined (:func:`text_similarities`, scikit-learn); a pair at or above
   :data:`DUPLICATE_THRESHOLD` is linked. The threshold was chosen by
   ``bench/bench_duplicates.py`` on the recorded arXiv papers: planted copies (whitespace,
   TeX, a version note, a typo) against real companion papers (same authors, related topic);
   the measured separation is in ``bench/README.md``. TF-IDF separated them better than
   MiniLM embeddings did (issue 16), so no vectors are needed here.

"Sent once" (:func:`duplicates_collapse`): a list of papers keeps one paper of each linked
pair, the original (the arXiv one, else the earlier submitted, else the older row), and
leaves out a paper whose twin was sent already.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from django.contrib.postgres.search import SearchQuery, SearchRank
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q, Window
from django.db.models.functions import RowNumber
from django.utils import timezone
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, TfidfVectorizer

from topicsite.lookups import Ids
from topicsite.signals import content_changed_on_commit

from .models import Authorship, Paper, PaperDuplicate
from .text import tex_to_text

# Pairs at or above this TF-IDF cosine are linked (chosen by bench/bench_duplicates.py).
DUPLICATE_THRESHOLD = 0.72
# Candidates compared with each paper, per blocking key.
CANDIDATES = 20
# Title words used for blocking: the longest few (long words are the rare ones).
BLOCKING_WORDS = 3

_WORD = re.compile(r"[^\W_]{4,}")
# TeX that changes the characters but not the text: macros, braces, math delimiters.
_TEX_MARKUP = re.compile(r"\\[a-zA-Z]+\*?|[{}$]")


def duplicate_text(text: str) -> str:
    """A title or an abstract as papers are compared on it: TeX accents resolved
    (``papers.text.tex_to_text``) and TeX markup (macro names, braces, ``$``) dropped."""
    return _TEX_MARKUP.sub(" ", tex_to_text(text))


def _cosines(vectorizer: TfidfVectorizer, texts: Sequence[str], pairs: list) -> np.ndarray:
    try:
        matrix = vectorizer.fit_transform(texts)
    except ValueError:  # no term at all in any text (empty vocabulary)
        return np.zeros(len(pairs))
    left = matrix[[i for i, _ in pairs]]
    right = matrix[[j for _, j in pairs]]
    return np.clip(np.asarray(left.multiply(right).sum(axis=1)).ravel(), 0.0, 1.0)


def text_similarities(
    titles: Sequence[str], abstracts: Sequence[str], pairs: Iterable[tuple[int, int]]
) -> list[float]:
    """The similarity in [0, 1] of each pair ``(i, j)`` of indexes into ``titles`` and
    ``abstracts`` (the same length; texts as :func:`duplicate_text` gives them).

    The geometric mean of two TF-IDF cosines: the titles' on character 3- to 5-grams (a typo
    changes a few of them, not the whole word) and the abstracts' on word unigrams and
    bigrams (English stop words removed); sublinear term frequencies, L2-normalised rows.
    When both abstracts are empty, the titles' cosine alone. Measured by
    ``bench/bench_duplicates.py``, this separates planted copies from companion papers whose
    abstracts are near-identical but whose titles differ (a series "Part II", "Part III"),
    which a cosine of title + abstract as one text did not. The vectorizers are fitted on the
    texts given, so pass the papers compared and their candidates together: terms every
    candidate shares weigh less. Raises IndexError for an index out of range, ValueError for
    lists of different lengths."""
    pairs = list(pairs)
    if len(titles) != len(abstracts):
        raise ValueError(f"{len(titles)} titles but {len(abstracts)} abstracts")
    if not pairs:
        return []
    title_cos = _cosines(
        TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True), titles, pairs
    )
    abstract_cos = _cosines(
        TfidfVectorizer(ngram_range=(1, 2), stop_words="english", sublinear_tf=True),
        abstracts,
        pairs,
    )
    scores = []
    for (i, j), title, abstract in zip(pairs, title_cos, abstract_cos, strict=True):
        if not abstracts[i].strip() and not abstracts[j].strip():
            scores.append(float(title))
        else:
            scores.append(float(np.sqrt(title * abstract)))
    return scores


def _title_words(title: str) -> list[str]:
    words = {word.casefold() for word in _WORD.findall(tex_to_text(title))}
    words -= ENGLISH_STOP_WORDS
    return sorted(words, key=lambda w: (-len(w), w))[:BLOCKING_WORDS]


def _title_query(title: str) -> SearchQuery | None:
    """Two of the title's longest words, any two, in a title (weight A): ``(a & b) | (a & c)
    | (b & c)``; None for a title with fewer than two such words."""
    words = _title_words(title)
    if len(words) < 2:
        return None
    terms = [f"{word}:A" for word in words]
    pairs = [f"({a} & {b})" for k, a in enumerate(terms) for b in terms[k + 1 :]]
    return SearchQuery(" | ".join(pairs), search_type="raw", config="english")


def duplicate_candidates(papers: Sequence[Paper]) -> dict[int, set[int]]:
    """For each of ``papers``, the pks of stored papers worth comparing with it (itself
    excluded): the :data:`CANDIDATES` best title matches (two of its three longest title words
    in their titles; PostgreSQL only) and the :data:`CANDIDATES` newest papers with the same
    first author. ``{paper pk: {candidate pk, ...}}``; one query per paper plus two."""
    found: dict[int, set[int]] = {paper.pk: set() for paper in papers}
    if connection.vendor == "postgresql":
        for paper in papers:
            query = _title_query(paper.title)
            if query is None:
                continue
            found[paper.pk].update(
                Paper.objects.filter(search_vector=query)
                .exclude(pk=paper.pk)
                .annotate(rank=SearchRank(F("search_vector"), query))
                .order_by("-rank", "-id")
                .values_list("pk", flat=True)[:CANDIDATES]
            )
    first_authors = dict(
        Authorship.objects.filter(paper_id__in=found, position=0).values_list(
            "paper_id", "author_id"
        )
    )
    by_author: dict[int, list[int]] = {}
    first_authored = (
        Authorship.objects.filter(author_id__in=set(first_authors.values()), position=0)
        .annotate(
            newest=Window(RowNumber(), partition_by=[F("author_id")], order_by=F("paper_id").desc())
        )
        .filter(newest__lte=CANDIDATES + 1)
        .values_list("author_id", "paper_id")
    )
    for author_id, paper_id in first_authored:
        by_author.setdefault(author_id, []).append(paper_id)
    for paper_pk, author_id in first_authors.items():
        found[paper_pk].update(pk for pk in by_author.get(author_id, ()) if pk != paper_pk)
    return found


def _kept_first(paper: Paper) -> tuple:
    """Sort key: the paper a pair keeps comes first (arXiv, earlier submitted, older row)."""
    return (paper.arxiv_id is None, paper.submitted or dt.date.max, paper.pk)


@dataclass(frozen=True)
class DetectionResult:
    """What :func:`duplicates_detect` did: ``compared`` pairs, ``linked`` (new pairs),
    ``updated`` (detected pairs whose similarity changed)."""

    compared: int
    linked: int
    updated: int


_TEXT_FIELDS = ("id", "arxiv_id", "import_key", "title", "abstract", "submitted")


def duplicates_detect(
    *, paper_ids: Iterable[int], threshold: float | None = None
) -> DetectionResult:
    """Compare each paper of ``paper_ids`` (pks; missing ones are skipped) with its candidates
    (:func:`duplicate_candidates`) and link each pair whose similarity is at least
    ``threshold`` (default :data:`DUPLICATE_THRESHOLD`) as a ``detected``
    :class:`~papers.models.PaperDuplicate`, the kept paper as ``original``.

    Idempotent: a pair already linked keeps its row (a detected one gets the new similarity;
    a curator's decision is never changed), a pair below the threshold is left alone. Pages
    are refreshed once the transaction commits. Raises ValueError for a threshold outside
    [0, 1]."""
    threshold = DUPLICATE_THRESHOLD if threshold is None else threshold
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be between 0 and 1, got {threshold!r}")
    papers = {p.pk: p for p in Paper.objects.filter(pk__in=set(paper_ids)).only(*_TEXT_FIELDS)}
    candidates = duplicate_candidates(list(papers.values()))
    missing = set().union(*candidates.values()) - papers.keys() if candidates else set()
    everyone = dict(papers)
    everyone.update((p.pk, p) for p in Paper.objects.filter(pk__in=missing).only(*_TEXT_FIELDS))
    pairs = sorted(
        {
            (min(pk, other), max(pk, other))
            for pk, others in candidates.items()
            for other in others
            if other in everyone
        }
    )
    order = list(everyone)
    index = {pk: i for i, pk in enumerate(order)}
    scores = text_similarities(
        [duplicate_text(everyone[pk].title) for pk in order],
        [duplicate_text(everyone[pk].abstract) for pk in order],
        [(index[a], index[b]) for a, b in pairs],
    )
    linked = updated = 0
    with transaction.atomic():
        for (a, b), score in zip(pairs, scores, strict=True):
            if score < threshold:
                continue
            kept, copy = sorted((everyone[a], everyone[b]), key=_kept_first)
            pair = Q(paper_id=a, original_id=b) | Q(paper_id=b, original_id=a)
            existing = PaperDuplicate.objects.filter(pair).first()
            if existing is None:
                try:
                    with transaction.atomic():
                        PaperDuplicate.objects.create(paper=copy, original=kept, similarity=score)
                    linked += 1
                    continue
                except IntegrityError:  # linked by a concurrent detection since the read
                    existing = PaperDuplicate.objects.get(pair)
            if (
                existing.decision == PaperDuplicate.Decision.DETECTED
                and abs(existing.similarity - score) > 1e-6
            ):
                existing.similarity = score
                existing.save(update_fields=["similarity"])
                updated += 1
        if linked or updated:
            content_changed_on_commit()
    return DetectionResult(compared=len(pairs), linked=linked, updated=updated)


def duplicate_decide(*, duplicate: PaperDuplicate, decision: str, user) -> PaperDuplicate:
    """A curator confirms or rejects ``duplicate`` (``decision``: ``confirmed`` or
    ``rejected``; final, detection never changes it). Returns the saved pair. Raises ValueError
    for any other decision."""
    if decision not in (PaperDuplicate.Decision.CONFIRMED, PaperDuplicate.Decision.REJECTED):
        raise ValueError(f"A curator decision is confirmed or rejected, not {decision!r}.")
    with transaction.atomic():
        duplicate.decision = decision
        duplicate.decided_by = user
        duplicate.decided_at = timezone.now()
        duplicate.save(update_fields=["decision", "decided_by", "decided_at"])
        content_changed_on_commit()
    return duplicate


def duplicate_links(paper_ids: Iterable[int]) -> list[tuple[int, int]]:
    """The linked pairs (``(copy pk, original pk)``, rejected pairs left out) that involve any
    of ``paper_ids``. One query."""
    ids = list(set(paper_ids))
    if not ids:
        return []
    return list(
        PaperDuplicate.objects.exclude(decision=PaperDuplicate.Decision.REJECTED)
        .filter(Q(paper_id__any=Ids(ids)) | Q(original_id__any=Ids(ids)))
        .values_list("paper_id", "original_id")
    )


def duplicate_twins(paper_ids: Iterable[int]) -> set[int]:
    """The pks of papers linked as the same paper (detected or confirmed) to any of
    ``paper_ids``, those themselves left out. One query."""
    ids = set(paper_ids)
    return {pk for pair in duplicate_links(ids) for pk in pair} - ids


def duplicates_collapse(paper_ids: Sequence[int], *, already: Iterable[int] = ()) -> list[int]:
    """``paper_ids`` in their order with each paper sent once: of linked papers (detected or
    confirmed pairs, :func:`duplicate_links`) both in the list, the original stays and its
    copies go (the first in the list stays when none is an original); a paper whose twin is in
    ``already`` (pks sent before) goes. One query."""
    ids = list(paper_ids)
    already = set(already)
    links = duplicate_links(ids)
    if not links:
        return ids
    twins: dict[int, set[int]] = {}
    copies: set[int] = set()
    for copy, original in links:
        twins.setdefault(copy, set()).add(original)
        twins.setdefault(original, set()).add(copy)
        copies.add(copy)
    listed = set(ids)
    # An original listed beside its copy is what the reader gets, wherever it sits in the list.
    keep_originals = {pk for pk in listed if pk in twins and pk not in copies}
    result: list[int] = []
    kept: set[int] = set()
    for pk in ids:
        linked = twins.get(pk, set())
        if linked & already:
            continue
        if linked & kept:
            continue
        if pk in copies and linked & keep_originals:
            continue
        result.append(pk)
        kept.add(pk)
    return result


def paper_twins(paper: Paper) -> list[Paper]:
    """The papers ``paper`` is linked to as the same paper (detected or confirmed), kept one
    first: what the paper page lists as "Also listed as". Two queries."""
    links = duplicate_links([paper.pk])
    others = {a if b == paper.pk else b for a, b in links}
    return sorted(Paper.objects.filter(pk__in=others), key=_kept_first)
