"""The tagging engine: apply every active topic's rule, the active classifier and semantic
similarity (for papers with a stored vector) to papers and write the machine-made assignments
they call for, in batches (plan, then one COPY and a few
guarded statements on PostgreSQL, the ORM elsewhere), with the assignment history; and queue
that work on the ``tag`` queue.

Curator decisions and ``import`` assignments are never changed or deleted here; only
machine-made ``rule``, ``classifier`` and ``semantic`` assignments (:data:`MACHINE_SOURCES`,
no decision).
"""

from __future__ import annotations

import functools
import gc
import json
import logging
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.db.models import (
    BooleanField,
    Case,
    CharField,
    ExpressionWrapper,
    FloatField,
    JSONField,
    Q,
    Value,
    When,
)
from django.utils import timezone

from papers.embeddings.encoder import EncoderUnavailable
from papers.embeddings.vectors import load_vectors, sound_vectors
from papers.models import Paper
from topicsite.blas import one_blas_thread
from topicsite.interpreter import garbage_collection_paused, switch_interval

from ..caches import topic_caches_invalidate_on_commit
from ..models import Assignment, Topic
from ..tasks import tag_papers
from .classifier import (
    SCORE_TOLERANCE,
    TopicClassifier,
    classifier_active,
    classifier_settings,
    paper_text,
)
from .rules import LiteralIndex, Rule, RuleIndex, RuleSyntaxError, compile_rule, rule_index
from .semantic import SemanticModel, semantic_active

__all__ = [
    "MACHINE_SOURCES",
    "RULE_INDEX_MIN_RULES",
    "TAG_BATCH_SIZE",
    "TAG_CHUNK_SIZE",
    "TagQueueResult",
    "chunked",
    "papers_tag",
    "papers_tag_enqueue",
]

logger = logging.getLogger(__name__)

TAG_BATCH_SIZE = 1000
TAG_CHUNK_SIZE = 1000
# With this many keyword rules or more, tagging looks rules up by the words of a paper
# (:class:`~topics.tagging.rules.RuleIndex`); with fewer, by the literals their terms need
# (:class:`~topics.tagging.rules.LiteralIndex`), instead of trying every rule on every paper.
RULE_INDEX_MIN_RULES = 64
LITERAL_INDEX_MIN_RULES = 1
# The interpreter's switch interval (seconds) while a pipelined run's threads work: after each
# round trip to PostgreSQL the reader and the writer wait for the GIL, which the judging
# thread keeps for up to the interval (5 ms by default). A batch's write makes about eight
# round trips, so at 5 ms the writer lost up to 40 ms a batch and became the run's
# critical path (``bench/README.md``, issue 16: 7,968 against 10,326 papers/s at 0.5 ms,
# interleaved in one process).
TAG_SWITCH_INTERVAL = 0.0005
# Batches between two garbage collections (:func:`_collected_between`).
TAG_COLLECT_EVERY = 10

MACHINE_SOURCES = (
    Assignment.Source.RULE,
    Assignment.Source.CLASSIFIER,
    Assignment.Source.SEMANTIC,
)
_ASSIGNMENT_FIELDS = [model_field.attname for model_field in Assignment._meta.concrete_fields]
# What tagging wants for a (paper, topic): (source, state, score, evidence).
_Target = tuple[str, str, float, dict]


def _machine_made() -> Q:
    """Assignments no person decided (neither a decider nor a decision time: a decision whose
    curator account was deleted keeps its time) that came from a rule or the classifier: the
    only ones tagging may change or delete."""
    return Q(decided_by__isnull=True, decided_at__isnull=True, source__in=MACHINE_SOURCES)


@dataclass(frozen=True)
class _TopicRule:
    """A topic's rule compiled for one tagging run: the query and the category pks it needs."""

    topic_id: int
    rule: Rule
    category_ids: frozenset[int]
    query: str = ""

    @functools.cached_property
    def evidence(self) -> dict:
        """Why a match is placed: the rule's query, and whether categories restrict it. One
        dict per rule and run, shared by all its matches (never changed): a batch's write
        serialises it once (:func:`_plan_write_sql`)."""
        return {"rule": self.query, "categories": bool(self.category_ids)}


@dataclass(frozen=True)
class _Tagger:
    """What one :func:`papers_tag` call applies to every batch: the compiled rules, the active
    topics, the active classifier (``None``: rules only), the review margin, whether
    machine writes are recorded in the assignment history, and the semantic model, built on
    the first batch that has papers with vectors (:meth:`semantic`)."""

    rules: tuple[_TopicRule, ...]
    topic_ids: frozenset[int]
    classifier: TopicClassifier | None
    review_margin: float
    history: bool
    rule_index: RuleIndex | LiteralIndex | None = None
    # Category pk -> positions in ``rules`` of the rules restricted to categories that include
    # it; and the positions of rules open to every category. A paper tries only the rules of
    # its categories (an archive taxonomy has a category rule per topic: one or two apply).
    rules_by_category: dict[int, tuple[int, ...]] = field(default_factory=dict, compare=False)
    uncategorised: tuple[int, ...] = ()
    # Active topic pk -> its ancestors' pks (from the materialised paths).
    ancestors: dict[int, tuple[int, ...]] = field(default_factory=dict, compare=False)
    _semantic: list = field(default_factory=list, compare=False)

    def semantic(self) -> SemanticModel | None:
        """The semantic model (:func:`~topics.tagging.semantic.semantic_active`), built once
        per tagging run and only when needed: papers without a vector never load the
        encoder."""
        if not self._semantic:
            self._semantic.append(semantic_active())
        return self._semantic[0]

    @property
    def change_reason(self) -> str:
        if self.classifier is None:
            return "tagging: rules"
        return f"tagging: rules and classifier v{self.classifier.version}"


@functools.lru_cache(maxsize=65536)
def _compiled_rule(query: str) -> Rule:
    """:func:`~topics.tagging.rules.compile_rule`, once per process and query (a rule's dozen
    regular expressions cost more to compile than to match a batch)."""
    return compile_rule(query)


def _topic_rules() -> tuple[tuple[_TopicRule, ...], frozenset[int]]:
    """Every active topic that has a rule, compiled (once per process and query), and the pks
    of all active topics. Two queries, whatever the number of topics.

    A stored query that no longer parses (edited outside the services) is logged and its topic
    skipped, so one bad rule does not stop tagging for every other topic."""
    category_ids: dict[int, set[int]] = defaultdict(set)
    for topic_id, category_id in Topic.rule_categories.through.objects.filter(
        topic__active=True
    ).values_list("topic_id", "category_id"):
        category_ids[topic_id].add(category_id)
    compiled = []
    topic_ids = set()
    for topic_id, slug, rule_query in (
        Topic.objects.active().order_by("pk").values_list("pk", "slug", "rule_query")
    ):
        topic_ids.add(topic_id)
        if not rule_query.strip() and not category_ids[topic_id]:
            continue
        try:
            rule = _compiled_rule(rule_query)
        except RuleSyntaxError as error:
            logger.error("Topic %s (%s): rule not applied: %s", topic_id, slug, error)
            continue
        compiled.append(
            _TopicRule(topic_id, rule, frozenset(category_ids[topic_id]), rule_query.strip())
        )
    return tuple(compiled), frozenset(topic_ids)


def _tagger() -> _Tagger:
    rules, topic_ids = _topic_rules()
    ancestors = {
        pk: tuple(int(part) for part in path.split("/")[:-2] if part)
        for pk, path in Topic.objects.active().values_list("pk", "path")
    }
    classifier = classifier_active()
    keyword_rules = sum(not topic_rule.rule.is_empty for topic_rule in rules)
    # Positions in either index are positions in ``rules``.
    index = None
    if keyword_rules >= RULE_INDEX_MIN_RULES:
        index = rule_index(tuple(topic_rule.rule for topic_rule in rules))
    elif keyword_rules >= LITERAL_INDEX_MIN_RULES:
        index = LiteralIndex.build([topic_rule.rule for topic_rule in rules])
    rules_by_category: dict[int, list[int]] = defaultdict(list)
    for position, topic_rule in enumerate(rules):
        for category_id in topic_rule.category_ids:
            rules_by_category[category_id].append(position)
    return _Tagger(
        rule_index=index,
        rules_by_category={key: tuple(value) for key, value in rules_by_category.items()},
        uncategorised=tuple(
            position for position, topic_rule in enumerate(rules) if not topic_rule.category_ids
        ),
        rules=rules,
        topic_ids=topic_ids,
        ancestors=ancestors,
        classifier=classifier,
        review_margin=classifier_settings().review_margin,
        history=getattr(settings, "TOPICS_TAGGING_HISTORY", True)
        and getattr(settings, "SIMPLE_HISTORY_ENABLED", True),
    )


def chunked(items: Iterable[int], size: int) -> Iterator[list[int]]:
    """``items`` (ids, possibly a lazy iterator, consumed once) as lists of at most ``size``."""
    chunk: list[int] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def papers_tag(*, paper_ids: Sequence[int]) -> int:
    """Apply every active topic's rule, the active classifier and semantic similarity to the
    papers ``paper_ids`` (pks; unknown ones ignored), so that their machine-made assignments are
    what they say now.

    - **Rules**: a paper matches a topic when the rule query matches its title and abstract
      and, if the topic lists rule categories, its primary category or a cross-list is one of
      them (topics without a rule are skipped). A match is an assignment with source ``rule``,
      state ``accepted``, score 1.0.
    - **Classifier** (when a version is active, see ``topics.tagging.classifier``): for a topic
      with a model and no rule match, a score at or above the topic's threshold is a ``classifier``
      assignment, ``accepted``; a score within ``TOPICS_CLASSIFIER_REVIEW_MARGIN`` below it is
      ``pending`` (the review queue, not shown on pages). Scores are in [0, 1], 4 decimals.
    - **Semantic similarity** (papers with a stored vector of the current model,
      ``papers.embeddings.vectors.load_vectors``; see ``topics.tagging.semantic``): a topic
      whose held-out precision reaches the target accepts papers at or above its threshold
      (``semantic``, ``accepted``); any other topic gets a paper whose best-fitting topic it
      is as a suggestion (``pending``). A rule match wins over both, an accepted classifier
      score over a semantic one, a semantic acceptance over a pending classifier score.
      Papers without a vector are tagged by their words until it is stored.
    - Every machine assignment says why in ``evidence``: the rule's query, the classifier
      version, or the cosine, the topic's accepted papers nearest to the paper and their number.
    - A machine-made (no decider, no decision time) ``rule``, ``classifier`` or ``semantic``
      assignment that none supports any more is removed; without an active classifier,
      ``classifier`` assignments are left as they are (nothing can judge them), and so are
      ``semantic`` ones of papers without a vector or with no encoder.
    - Curator decisions and ``import`` assignments are never changed or deleted, and no
      machine assignment is created where one of them exists.

    Work goes in batches of :data:`TAG_BATCH_SIZE` papers in a fixed number of queries
    whatever the batch holds: three reads (papers, cross-lists, vectors) to judge the batch,
    then one transaction that reads its existing assignments and writes: on PostgreSQL the
    batch's plan is copied (COPY) into a temporary table and applied by at most one INSERT,
    one UPDATE and one DELETE, each writing the history rows of exactly the rows it wrote in
    the same statement; other databases take the ORM with a few more statements. Called
    outside a transaction with more than one batch on PostgreSQL, a reader thread reads the
    next batch and a writer thread writes the one before while a batch is judged, each on its
    own connection (:func:`_tag_pipelined`).
    ``TOPICS_TAGGING_HISTORY`` (default on) records machine writes in the assignment history, one
    row per assignment written, in bulk per batch, with the change reason "tagging: rules and
    classifier vN" ("tagging: rules" without a classifier). Running it twice leaves the same
    database (the second run writes nothing). A classifier score that moved by less than 0.01 is not
    rewritten.

    The matrix products run on one BLAS thread: a batch's are small (a thousand papers
    against the topics' prototypes and labelled neighbours), and OpenBLAS's second thread
    spin-waits for the first; beside another busy process (a second Celery worker, the
    database) that made a batch's cosines and neighbour votes 10 to 30 times slower.

    Automatic garbage collection is paused for the run, the process's existing objects set
    aside (``topicsite.interpreter.garbage_collection_paused``); the run collects its own
    every :data:`TAG_COLLECT_EVERY` batches.

    Returns the number of assignments created, changed or removed (a creation that loses a
    race to a concurrent curator addition is still counted; the curator's row wins).
    Raises ``topics.tagging.classifier.ClassifierLoadError`` when the active classifier cannot be
    loaded (nothing is written then).
    """
    with one_blas_thread(), garbage_collection_paused():
        return _papers_tag(paper_ids)


def _papers_tag(paper_ids: Sequence[int]) -> int:
    tagger = _tagger()
    batches = _collected_between(chunked(sorted(set(paper_ids)), TAG_BATCH_SIZE))
    if (
        connection.in_atomic_block
        or connection.vendor != "postgresql"
        or len(paper_ids) <= TAG_BATCH_SIZE
    ):
        # Inside a caller's transaction the writes must share its connection (a second one
        # would not see its uncommitted papers); SQLite has one writer and would make the
        # readers wait; one batch has nothing to overlap.
        return sum(_tag_batch(batch, tagger) for batch in batches)
    return _tag_pipelined(batches, tagger)


def _collected_between(batches: Iterable[list[int]]) -> Iterator[list[int]]:
    """``batches``, with a garbage collection before every :data:`TAG_COLLECT_EVERY`-th after
    the first: tagging runs with automatic collection paused (what a batch makes is freed by
    reference counting; a run's collections looked at the process's every object, 0.16 s
    per 20,000 papers), so what cycles a long run leaves are collected here."""
    for number, batch in enumerate(batches):
        if number and not number % TAG_COLLECT_EVERY:
            gc.collect()
        yield batch


def _wanted_assignments(
    papers: list[tuple[int, str, str, int]],
    cross_lists: dict[int, set[int]],
    tagger: _Tagger,
    vectors: dict[int, np.ndarray] | None = None,
) -> dict[tuple[int, int], _Target]:
    """``(paper pk, topic pk) -> (source, state, score, evidence)`` the rules, the classifier
    and, for papers in ``vectors`` (pk -> unit vector), semantic similarity give. A rule match
    wins; then an accepted classifier score; a semantic acceptance beats a classifier's
    pending score."""
    wanted: dict[tuple[int, int], _Target] = {}
    classifier = tagger.classifier
    texts = []
    for paper_id, title, abstract, primary_category_id in papers:
        category_ids = {primary_category_id, *cross_lists[paper_id]}
        # Folded on first need: category-only rules never need the text, the classifier does.
        folded = paper_text(title, abstract) if classifier is not None else None
        if classifier is not None:
            texts.append(folded)
        # The rules this paper's categories allow, in ``tagger.rules`` order; with many
        # keyword rules, only those whose words the text holds.
        positions = set(tagger.uncategorised)
        for category_id in category_ids:
            positions.update(tagger.rules_by_category.get(category_id, ()))
        if tagger.rule_index is not None and positions:
            folded = folded or paper_text(title, abstract)
            positions &= tagger.rule_index.candidates(folded)
        for position in sorted(positions):
            topic_rule = tagger.rules[position]
            if not topic_rule.rule.is_empty:
                if folded is None:
                    folded = paper_text(title, abstract)
                if not topic_rule.rule.matches_folded(folded):
                    continue
            wanted[(paper_id, topic_rule.topic_id)] = (
                Assignment.Source.RULE,
                Assignment.State.ACCEPTED,
                1.0,
                topic_rule.evidence,
            )
    if classifier is not None:
        evidence = {"classifier": classifier.version}  # shared, as a rule's is
        for candidate in classifier.candidates(texts, margin=tagger.review_margin):
            key = (papers[candidate.row][0], candidate.topic_id)
            if key in wanted or candidate.topic_id not in tagger.topic_ids:
                continue
            state = Assignment.State.ACCEPTED if candidate.accepted else Assignment.State.PENDING
            wanted[key] = (Assignment.Source.CLASSIFIER, state, candidate.score, evidence)
    semantic = tagger.semantic() if vectors else None
    if semantic is not None:
        rows = [paper for paper in papers if paper[0] in vectors]
        matrix = np.stack([vectors[paper[0]] for paper in rows])
        cosine = semantic.cosines(matrix)
        fit = semantic.fits(matrix, cosine=cosine)
        _classifier_vetoed(wanted, rows, semantic.vetoes(cosine, fit), semantic)
        settled = _settled(wanted, rows, fit, semantic)
        placed = []
        for candidate in semantic.candidates(matrix, cosine=cosine, fit=fit):
            key = (rows[candidate.row][0], candidate.topic_id)
            if candidate.topic_id not in tagger.topic_ids:
                continue
            if settled[candidate.row] and not candidate.accepted:
                continue
            known = wanted.get(key)
            if known is not None and (
                known[0] == Assignment.Source.RULE
                or known[1] == Assignment.State.ACCEPTED
                or not candidate.accepted
            ):
                continue
            placed.append((key, candidate))  # each pair once: candidates are (row, topic)
        nearest = semantic.nearest_labelled_many(
            matrix, [(candidate.row, candidate.topic_id) for _, candidate in placed]
        )
        for (key, candidate), nearest_ids in zip(placed, nearest, strict=True):
            state = Assignment.State.ACCEPTED if candidate.accepted else Assignment.State.PENDING
            evidence = {
                "cosine": candidate.cosine,
                "nearest": nearest_ids,
                "labels": semantic.metrics[candidate.topic_id]["positives"],
            }
            wanted[key] = (Assignment.Source.SEMANTIC, state, candidate.score, evidence)
    _under_descendants_dropped(wanted, tagger)
    return wanted


def _under_descendants_dropped(wanted: dict[tuple[int, int], _Target], tagger: _Tagger) -> None:
    """Drop, in place, classifier and semantic pairs whose paper a rule places in a descendant
    of the topic: parent topics show their descendants' papers, so a paper is not written
    under its ancestors too (the demo's group topics took hundreds of their archives' papers,
    accepted or pending, from a classifier that learnt "physics" from them)."""
    ruled: dict[int, set[int]] = defaultdict(set)
    for (paper_id, topic_id), target in wanted.items():
        if target[0] == Assignment.Source.RULE:
            ruled[paper_id].update(tagger.ancestors.get(topic_id, ()))
    for key in [
        key
        for key, target in wanted.items()
        if target[0] != Assignment.Source.RULE and key[1] in ruled.get(key[0], ())
    ]:
        del wanted[key]


def _settled(
    wanted: dict[tuple[int, int], _Target], rows: list, fit: np.ndarray, semantic
) -> np.ndarray:
    """(len(rows),) bools: papers a rule or the classifier already accepts into a topic that
    fits them (``semantic.fits`` within ``CLASSIFIER_VETO_GAP`` of their best). Such a paper
    has a home; suggesting its nearest other topic too sent one paper in two of the demo to
    the review queue, mostly another archive than its own arXiv categories. ``rows``: the
    papers (pk first) of ``fit`` ((len(rows), topics))."""
    from .semantic import CLASSIFIER_VETO_GAP

    settled = np.zeros(len(rows), dtype=bool)
    if not fit.size:
        return settled
    row_of = {paper[0]: row for row, paper in enumerate(rows)}
    column_of = semantic.column_of
    accepted = Assignment.State.ACCEPTED
    pairs = [
        (row_of[paper_id], column_of[topic_id])
        for (paper_id, topic_id), target in wanted.items()
        if target[1] == accepted and paper_id in row_of and topic_id in column_of
    ]
    if pairs:
        home_rows, home_columns = np.array(pairs).T
        near = fit[home_rows, home_columns] >= fit.max(axis=1)[home_rows] - CLASSIFIER_VETO_GAP
        settled[home_rows[near]] = True
    return settled


def _classifier_vetoed(
    wanted: dict[tuple[int, int], _Target], rows: list, vetoed: np.ndarray, semantic
) -> None:
    """Drop, in place, the classifier's pairs whose paper is far in meaning from the topic
    (``SemanticModel.vetoes``: a cosine below ``MIN_COSINE``, or far below the paper's
    best-fitting topic): TF-IDF weights of words such as "noisy" or "environments" put a 2008
    paper on investments into LLM Agent Training; its embedding is nowhere near.
    ``vetoed``: (len(rows), topics) ``semantic.vetoes`` of the papers ``rows`` (pk first)."""
    row_of = {paper[0]: row for row, paper in enumerate(rows)}
    keys = [
        key
        for key, target in wanted.items()
        if target[0] == Assignment.Source.CLASSIFIER and key[0] in row_of
    ]
    if not keys:
        return
    column_of = semantic.column_of
    for paper_id, topic_id in keys:
        column = column_of.get(topic_id)
        if column is not None and vetoed[row_of[paper_id], column]:
            del wanted[(paper_id, topic_id)]


@dataclass(frozen=True)
class _Stored:
    """An assignment as tagging reads it: ``machine`` is true for a machine-made ``rule`` or
    ``classifier`` assignment (the only kind tagging may change); ``has_evidence`` whether it
    says why (its evidence itself is never needed here, so never parsed)."""

    pk: int
    topic_id: int
    source: str
    state: str
    score: float | None
    machine: bool
    has_evidence: bool


def _needs_update(stored: _Stored, target: _Target) -> bool:
    source, state, score, evidence = target
    if (stored.source, stored.state) != (source, state) or stored.score is None:
        return True
    if evidence and not stored.has_evidence:  # written before assignments said why
        return True
    if source == Assignment.Source.RULE:
        return stored.score != score
    return abs(stored.score - score) >= SCORE_TOLERANCE


def _batch_filter(paper_ids: list[int], field: str) -> dict:
    """Filter arguments selecting the sorted ``paper_ids`` by ``field``: a range when they are
    dense (what harvests and ``tag --all`` send: mostly consecutive pks), which costs the ORM
    a fraction of an IN list of a thousand parameters to compile; the caller drops rows of
    papers outside the batch. An IN list otherwise."""
    if paper_ids[-1] - paper_ids[0] < 2 * len(paper_ids):
        return {f"{field}__gte": paper_ids[0], f"{field}__lte": paper_ids[-1]}
    return {f"{field}__in": paper_ids}


@dataclass(frozen=True)
class _Wanted:
    """One batch's papers as tagging judged them: the sorted ``paper_ids``, the assignments
    they call for, and which of them have a vector of the current model."""

    paper_ids: list[int]
    wanted: dict[tuple[int, int], _Target]
    with_vector: frozenset[int]


@dataclass(frozen=True)
class _Read:
    """One batch as the database holds it: ``papers`` rows (pk, title, abstract, primary
    category pk) in pk order, each paper's cross-listed category pks, and the vectors of the
    current model (pk -> unit vector; empty without an encoder)."""

    paper_ids: list[int]
    papers: list[tuple[int, str, str, int]]
    cross_lists: dict[int, set[int]]
    vectors: dict[int, np.ndarray]


def _batch_read(paper_ids: list[int]) -> _Read:
    """Read the papers ``paper_ids`` (sorted pks), their cross-lists and vectors: three
    queries, nothing written."""
    batch = set(paper_ids)
    cross_lists: dict[int, set[int]] = defaultdict(set)
    for paper_id, category_id in Paper.cross_lists.through.objects.filter(
        **_batch_filter(paper_ids, "paper_id")
    ).values_list("paper_id", "category_id"):
        cross_lists[paper_id].add(category_id)
    papers = [
        row
        for row in Paper.objects.filter(**_batch_filter(paper_ids, "pk")).values_list(
            "pk", "title", "abstract", "primary_category_id"
        )
        if row[0] in batch
    ]
    # Papers with a vector are scored semantically too; the others by their words alone
    # until their vector is stored (``topics.receivers`` re-tags them then). A damaged stored
    # vector (NaN, cut short) counts as none: it would fail the batch or judge it on NaNs.
    try:
        vectors = load_vectors([row[0] for row in papers]) if papers else {}
    except EncoderUnavailable:  # no model files: words alone (semantic_active logs it)
        vectors = {}
    vectors = sound_vectors(vectors, settings.EMBEDDING_DIMENSION)
    return _Read(paper_ids, papers, cross_lists, vectors)


def _batch_judged(read: _Read, tagger: _Tagger) -> _Wanted:
    """The assignments a read batch calls for (:func:`_wanted_assignments`). Writes nothing."""
    wanted = _wanted_assignments(read.papers, read.cross_lists, tagger, read.vectors)
    return _Wanted(read.paper_ids, wanted, frozenset(read.vectors))


def _batch_wanted(paper_ids: list[int], tagger: _Tagger) -> _Wanted:
    """Read the papers ``paper_ids`` (sorted pks) and judge them, in the calling thread."""
    return _batch_judged(_batch_read(paper_ids), tagger)


def _tag_batch(paper_ids: list[int], tagger: _Tagger) -> int:
    """Judge and write one batch in the calling thread."""
    return _batch_write(_batch_wanted(paper_ids, tagger), tagger)


def _batch_write(judged: _Wanted, tagger: _Tagger) -> int:
    """Bring the stored assignments of ``judged.paper_ids`` to ``judged.wanted`` in one
    transaction: read them (one query), then create, update and delete what differs. Returns
    the number of assignments written."""
    paper_ids, wanted, batch = judged.paper_ids, judged.wanted, set(judged.paper_ids)
    with transaction.atomic():
        started = timezone.now()
        # The machine-made and has-evidence tests in SQL: no timestamps to parse, and no
        # evidence JSON (a re-run parsed every assignment's, a third of its time).
        existing = {
            (paper_id, topic_id): _Stored(pk, topic_id, source, state, score, machine, evidence)
            for pk, paper_id, topic_id, source, state, score, machine, evidence in (
                Assignment.objects.filter(**_batch_filter(paper_ids, "paper_id"))
                .annotate(
                    machine=ExpressionWrapper(_machine_made(), output_field=BooleanField()),
                    has_evidence=ExpressionWrapper(~Q(evidence={}), output_field=BooleanField()),
                )
                .values_list(
                    "pk",
                    "paper_id",
                    "topic_id",
                    "source",
                    "state",
                    "score",
                    "machine",
                    "has_evidence",
                )
            )
            if paper_id in batch
        }
        to_create = sorted(key for key in wanted if key not in existing)
        to_update: list[tuple[_Stored, _Target]] = []
        to_delete: list[_Stored] = []
        for key, stored in existing.items():
            if not stored.machine:
                continue
            target = wanted.get(key)
            if target is not None:
                if _needs_update(stored, target):
                    to_update.append((stored, target))
            elif _judged(stored, tagger, key[0] in judged.with_vector):
                to_delete.append(stored)

        plan = _TagPlan(
            create=[(*key, *wanted[key]) for key in to_create],
            update=[(stored.pk, *target) for stored, target in to_update],
            delete=[stored.pk for stored in to_delete],
        )
        write = _plan_write_sql if connection.vendor == "postgresql" else _plan_write_orm
        written = write(plan, paper_ids, tagger, started)
        topic_caches_invalidate_on_commit(
            {topic_id for _, topic_id in to_create}
            | {stored.topic_id for stored, _ in to_update}
            | {stored.topic_id for stored in to_delete}
        )
    return written


def _written_in_thread(judged: _Wanted, tagger: _Tagger) -> int:
    """:func:`_batch_write` on the writer thread's own connection."""
    return _batch_write(judged, tagger)


def _read_in_thread(paper_ids: list[int]) -> _Read:
    """:func:`_batch_read` on the reader thread's own connection."""
    return _batch_read(paper_ids)


def _close_thread_connection() -> None:
    connection.close()


def _tag_pipelined(batches: Iterable[list[int]], tagger: _Tagger) -> int:
    """Tag ``batches`` in three overlapping stages, each on its own thread and database
    connection: a reader thread reads the next batch (papers, cross-lists, vectors: mostly
    waiting on PostgreSQL), this thread judges the current one (Python and numpy), and a writer
    thread writes the batch before (an INSERT of a thousand rows and their history, waiting on
    PostgreSQL). At most one batch is in reading and one in writing at a time, written in
    order; an error in any stage stops the run and is raised here (batches already written
    stay, whole). The run keeps the switch interval at :data:`TAG_SWITCH_INTERVAL`, so the
    reader and the writer get the GIL back soon after each round trip."""
    written = 0
    batches = iter(batches)
    with (
        switch_interval(TAG_SWITCH_INTERVAL),
        ThreadPoolExecutor(max_workers=1, thread_name_prefix="tag-read") as reader,
        ThreadPoolExecutor(max_workers=1, thread_name_prefix="tag-write") as writer,
    ):
        reading: Future | None = None
        pending: Future | None = None
        try:
            paper_ids = next(batches, None)
            if paper_ids is not None:
                reading = reader.submit(_read_in_thread, paper_ids)
            while reading is not None:
                read = reading.result()
                paper_ids = next(batches, None)
                reading = None if paper_ids is None else reader.submit(_read_in_thread, paper_ids)
                judged = _batch_judged(read, tagger)
                if pending is not None:
                    written += pending.result()
                pending = writer.submit(_written_in_thread, judged, tagger)
            if pending is not None:
                written += pending.result()
                pending = None
        finally:
            for future in (reading, pending):
                if future is not None:
                    future.cancel()
            reader.submit(_close_thread_connection).result()
            writer.submit(_close_thread_connection).result()
    return written


def _judged(stored: _Stored, tagger: _Tagger, has_vector: bool) -> bool:
    """Whether this run can judge a machine-made assignment it no longer wants (and so removes
    it): a rule's always; a classifier's with an active classifier; a semantic one when the
    paper has a vector of the current model and the semantic model is on."""
    if stored.source == Assignment.Source.CLASSIFIER:
        return tagger.classifier is not None
    if stored.source == Assignment.Source.SEMANTIC:
        return has_vector and tagger.semantic() is not None
    return True


@dataclass(frozen=True)
class _TagPlan:
    """What one batch writes: ``create`` rows ``(paper pk, topic pk, source, state, score,
    evidence)``, ``update`` rows ``(assignment pk, source, state, score, evidence)``,
    ``delete`` assignment pks."""

    create: list[tuple[int, int, str, str, float, dict]]
    update: list[tuple[int, str, str, float, dict]]
    delete: list[int]


_PLAN_TABLE = "topics_tagging_plan"


@functools.cache
def _plan_sql() -> dict[str, str]:
    """The PostgreSQL statements of :func:`_plan_write_sql`, built from the models' tables."""
    quote = connection.ops.quote_name
    table = quote(Assignment._meta.db_table)
    historical = Assignment.history.model
    tracked = [field.column for field in historical.tracked_fields]
    tracked_sql = ", ".join(quote(column) for column in tracked)
    history_columns = ", ".join(
        [*map(quote, tracked), "history_date", "history_change_reason", "history_type"]
    )
    guard = (
        "a.decided_by_id IS NULL AND a.decided_at IS NULL AND a.source IN "
        f"({', '.join(repr(str(source)) for source in MACHINE_SOURCES)})"
    )

    def recorded(statement: str, history_type: str, alias: str = "") -> str:
        # The written rows go straight into the history table: one statement, exact rows.
        returning = ", ".join(f"{alias}{quote(column)}" for column in tracked)
        return (
            f"WITH written AS ({statement} RETURNING {returning}) "
            f"INSERT INTO {quote(historical._meta.db_table)} ({history_columns}) "
            f"SELECT {tracked_sql}, %(now)s, %(reason)s, '{history_type}' FROM written"
        )

    papers = quote(Paper._meta.db_table)
    # The paper's submitted date and liveness (papers.querysets.LIVE) from the paper row,
    # joined here rather than looked up by the insert trigger once per row (migration 0013:
    # the trigger runs only where ``submitted`` is not given). A paper deleted since the
    # batch's read has no row to join and gets no assignment.
    create = (
        f"INSERT INTO {table} (created_at, updated_at, paper_id, topic_id, source, state, "
        "score, evidence, submitted, paper_live) "
        "SELECT %(now)s, %(now)s, p.paper_id, p.topic_id, p.source, p.state, p.score, "
        "p.evidence, paper.submitted, NOT paper.withdrawn AND paper.deleted_at IS NULL "
        f"FROM {_PLAN_TABLE} AS p JOIN {papers} AS paper ON paper.id = p.paper_id "
        "WHERE p.action = 'c' ORDER BY p.paper_id, p.topic_id "
        # A curator's assignment added since the batch's read wins.
        "ON CONFLICT (paper_id, topic_id) DO NOTHING"
    )
    update = (
        f"UPDATE {table} AS a SET source = p.source, state = p.state, score = p.score, "
        f"evidence = p.evidence, updated_at = %(now)s FROM {_PLAN_TABLE} AS p "
        f"WHERE p.action = 'u' AND a.id = p.id AND {guard}"
    )
    delete = (
        f"DELETE FROM {table} AS a USING {_PLAN_TABLE} AS p WHERE p.action = 'd' "
        f"AND a.id = p.id AND {guard}"
    )
    return {
        "prepare": (
            f"CREATE TEMPORARY TABLE IF NOT EXISTS {_PLAN_TABLE} (action char(1) NOT NULL, "
            "id bigint, paper_id bigint, topic_id bigint, source varchar(16), "
            "state varchar(16), score double precision, evidence jsonb) "
            "ON COMMIT DELETE ROWS; "
            f"DELETE FROM {_PLAN_TABLE}"
        ),
        "copy": (
            f"COPY {_PLAN_TABLE} (action, id, paper_id, topic_id, source, state, score, evidence) "
            "FROM STDIN"
        ),
        "create": create,
        "update": update,
        "delete": delete,
        "create_recorded": recorded(create, "+"),
        "update_recorded": recorded(update, "~", "a."),
        "delete_recorded": recorded(delete, "-", "a."),
    }


def _plan_write_sql(plan: _TagPlan, paper_ids: list[int], tagger: _Tagger, now) -> int:
    """Write a batch's plan on PostgreSQL: COPY it into a temporary table, then one INSERT,
    UPDATE and DELETE from there, each with the machine-made guard and, with history on,
    writing the history rows of exactly the rows it wrote in the same statement. Returns the
    rows created (as planned), updated and deleted."""
    if not (plan.create or plan.update or plan.delete):
        return 0
    statements = _plan_sql()
    params = {"now": now, "reason": tagger.change_reason}
    suffix = "_recorded" if tagger.history else ""
    # Evidence as JSON, once per dict: a rule's matches share theirs (three in four rows of
    # a first run). The plan holds every dict for the call, so no id is reused meanwhile.
    dumped: dict[int, str] = {}

    def as_json(evidence: dict) -> str:
        text = dumped.get(id(evidence))
        if text is None:
            text = dumped[id(evidence)] = json.dumps(evidence)
        return text

    with connection.cursor() as cursor:
        cursor.execute(statements["prepare"])
        with cursor.cursor.copy(statements["copy"]) as copy:
            for paper_id, topic_id, source, state, score, evidence in plan.create:
                copy.write_row(
                    ("c", None, paper_id, topic_id, source, state, score, as_json(evidence))
                )
            for pk, source, state, score, evidence in plan.update:
                copy.write_row(("u", pk, None, None, source, state, score, as_json(evidence)))
            for pk in plan.delete:
                copy.write_row(("d", pk, None, None, None, None, None, None))
        written = len(plan.create)
        if plan.create:
            cursor.execute(statements["create" + suffix], params)
        for action, rows in (("update", plan.update), ("delete", plan.delete)):
            if rows:
                cursor.execute(statements[action + suffix], params)
                written += cursor.rowcount
    return written


def _plan_write_orm(plan: _TagPlan, paper_ids: list[int], tagger: _Tagger, now) -> int:
    """Write a batch's plan through the ORM (databases other than PostgreSQL, such as the
    embedded SQLite default): the same guards and history rows as :func:`_plan_write_sql`,
    in a few more statements."""
    full_rows = {}
    if tagger.history and (plan.update or plan.delete):
        full_rows = {
            row["id"]: row
            for row in Assignment.objects.filter(
                pk__in=[pk for pk, *_ in plan.update] + plan.delete
            ).values(*_ASSIGNMENT_FIELDS)
        }
    written = 0
    if plan.create:
        Assignment.objects.bulk_create(
            [
                Assignment(
                    paper_id=paper_id,
                    topic_id=topic_id,
                    source=source,
                    state=state,
                    score=score,
                    evidence=evidence,
                )
                for paper_id, topic_id, source, state, score, evidence in plan.create
            ],
            # A curator's assignment added since the batch's read wins.
            ignore_conflicts=True,
        )
        written += len(plan.create)
        if tagger.history:
            # With ignore_conflicts the database returns no keys: read back what was made.
            keys = {(paper_id, topic_id) for paper_id, topic_id, *_ in plan.create}
            _history_write(
                [
                    row
                    for row in Assignment.objects.filter(_machine_made())
                    .filter(paper_id__in=paper_ids, created_at__gte=now)
                    .values(*_ASSIGNMENT_FIELDS)
                    if (row["paper_id"], row["topic_id"]) in keys
                ],
                "+",
                tagger,
                now,
            )
    if plan.update:

        def per_row(index: int, output_field):
            return Case(
                *[
                    When(pk=row[0], then=Value(row[index], output_field=output_field))
                    for row in plan.update
                ],
                output_field=output_field,
            )

        # The machine-made guard again: a curator decision made since the read must stay.
        written += (
            Assignment.objects.filter(_machine_made())
            .filter(pk__in=[pk for pk, *_ in plan.update])
            .update(
                source=per_row(1, CharField()),
                state=per_row(2, CharField()),
                score=per_row(3, FloatField()),
                evidence=per_row(4, JSONField()),
                updated_at=now,
            )
        )
        if tagger.history:
            changed = [
                {
                    **full_rows[pk],
                    "source": source,
                    "state": state,
                    "score": score,
                    "updated_at": now,
                }
                for pk, source, state, score, _ in plan.update
                if pk in full_rows
            ]
            _history_write(changed, "~", tagger, now)
    if plan.delete:
        if tagger.history:
            _history_write(
                [full_rows[pk] for pk in plan.delete if pk in full_rows], "-", tagger, now
            )
        doomed = Assignment.objects.filter(_machine_made()).filter(pk__in=plan.delete)
        # A DELETE without per-row signals: QuerySet.delete() would fetch the rows and have
        # django-simple-history insert one history row per deleted assignment; the history
        # rows were written above in one INSERT. Assignments have no dependent rows.
        written += doomed._raw_delete(doomed.db)
    return written


def _history_write(rows: Iterable[dict], history_type: str, tagger: _Tagger, when) -> None:
    """One bulk INSERT of history rows (``"+"``, ``"~"`` or ``"-"``) for assignment ``rows``
    (dicts of every concrete field by attname), as django-simple-history would write them one
    by one on save or delete."""
    historical = Assignment.history.model
    tracked = [field.attname for field in historical.tracked_fields]
    historical.objects.bulk_create(
        [
            historical(
                history_date=when,
                history_type=history_type,
                history_change_reason=tagger.change_reason,
                history_user=None,
                **{name: row[name] for name in tracked},
            )
            for row in rows
        ]
    )


@dataclass(frozen=True)
class TagQueueResult:
    """What :func:`papers_tag_enqueue` queued: ``chunks`` tasks covering ``papers`` paper ids."""

    chunks: int
    papers: int


def papers_tag_enqueue(
    *, paper_ids: Iterable[int], chunk_size: int = TAG_CHUNK_SIZE
) -> TagQueueResult:
    """Queue ``topics.tasks.tag_papers`` for ``paper_ids`` in chunks of ``chunk_size`` ids.

    Each task is sent when the surrounding transaction commits (at once outside one). With the
    embedded default the tasks run eagerly in-process; with a broker they go to the ``tag``
    queue. ``paper_ids`` may be a lazy iterator (it is consumed once).
    """
    chunks = papers = 0
    for chunk in chunked(paper_ids, chunk_size):
        transaction.on_commit(partial(tag_papers.delay, chunk))
        chunks += 1
        papers += len(chunk)
    return TagQueueResult(chunks=chunks, papers=papers)
