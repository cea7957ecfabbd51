"""Writes for topics and assignments: the taxonomy, tagging by rules and the classifier,
training the classifier, curator decisions, the reference-page import, taxonomy imports
(OpenAlex, arXiv) and the demo taxonomy. Views, admin, commands and tasks all call these.

Two guarantees hold for every function here:

- ``Topic.path`` (materialised path of primary keys, ``"3/17/"``) stays right for a topic and
  all its descendants; only :func:`topic_create` and :func:`topic_move` write it.
- A **curator decision** (an assignment with ``decided_by`` set) is final: nothing here but
  :func:`assignment_decide` and :func:`assignment_add` (a person acting) ever changes or
  deletes one. Tagging, training and imports change only machine-made assignments.
"""

from __future__ import annotations

import csv
import datetime as dt
import functools
import hashlib
import logging
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import (
    BooleanField,
    Case,
    CharField,
    ExpressionWrapper,
    FloatField,
    Q,
    Value,
    When,
)
from django.db.models.functions import Concat, Substr
from django.utils import timezone
from django.utils.text import slugify

from papers.models import Affiliation, Author, Authorship, Category, Paper, PaperAffiliation
from papers.taxonomy import UnknownCategory, canonical_category, get_category

from .caches import topic_caches_invalidate_on_commit
from .classifier import (
    SCORE_TOLERANCE,
    ClassifierSettings,
    TopicClassifier,
    TopicExamples,
    classifier_active,
    classifier_settings,
    paper_text,
)
from .models import Assignment, ClassifierModel, Topic, TopicRedirect
from .rules import Rule, RuleSyntaxError, compile_rule, fold
from .tasks import tag_papers

__all__ = [
    "DEMO_REFERENCE_RULES",
    "REFERENCE_IMPORT_PREFIX",
    "TAG_BATCH_SIZE",
    "TAG_CHUNK_SIZE",
    "MACHINE_SOURCES",
    "OPENALEX_COLUMNS",
    "DemoTaxonomyResult",
    "ImportResult",
    "OpenAlexTopic",
    "ReferencePageError",
    "TagQueueResult",
    "TaxonomyFileError",
    "TaxonomyImportResult",
    "arxiv_topics_import",
    "assignment_add",
    "assignment_decide",
    "classifier_apply",
    "classifier_train",
    "demo_taxonomy_load",
    "openalex_topics_import",
    "openalex_topics_parse",
    "papers_tag",
    "papers_tag_enqueue",
    "reference_import_key",
    "reference_page_import",
    "rule_query_from_name",
    "topic_create",
    "topic_move",
]

logger = logging.getLogger(__name__)

TAG_BATCH_SIZE = 1000
TAG_CHUNK_SIZE = 1000
REFERENCE_IMPORT_PREFIX = "reference:"
REFERENCE_SOURCE = "reference"
# Papers per query when training reads labels and texts.
TRAINING_READ_CHUNK = 5000


# --- topics --------------------------------------------------------------------------------


def _unique_slug(name: str) -> str:
    """``slugify(name)``, with ``-2``, ``-3`` ... appended while another topic has it."""
    base = slugify(name)[:190] or "topic"
    slug, number = base, 1
    while Topic.objects.filter(slug=slug).exists():
        number += 1
        slug = f"{base}-{number}"
    return slug


def topic_create(
    *,
    name: str,
    slug: str | None = None,
    parent: Topic | None = None,
    short_name: str = "",
    description: str = "",
    rule_query: str = "",
    rule_categories: Iterable[Category] = (),
    active: bool = True,
) -> Topic:
    """Create a topic under ``parent`` (``None``: a root) with its materialised ``path`` set.

    ``slug`` defaults to ``slugify(name)``, made unique with a numeric suffix; an explicit slug
    is used as given. ``rule_categories`` are ``Category`` rows (or their pks).
    Raises ``ValueError`` for a blank name, :class:`~topics.rules.RuleSyntaxError` (a
    ``ValueError`` carrying the 0-based position) for a malformed ``rule_query``, and Django's
    ``ValidationError`` for an invalid or already used slug.
    """
    name = name.strip()
    if not name:
        raise ValueError("A topic needs a name.")
    compile_rule(rule_query)  # raises RuleSyntaxError with the position
    with transaction.atomic():
        topic = Topic(
            name=name,
            slug=slug if slug is not None else _unique_slug(name),
            parent=parent,
            short_name=short_name,
            description=description,
            rule_query=rule_query,
            active=active,
        )
        topic.full_clean(exclude=["path"])
        topic.save()
        # The parent's stored path, not the instance's: the caller's copy may be stale.
        parent_path = (
            Topic.objects.values_list("path", flat=True).get(pk=parent.pk) if parent else ""
        )
        topic.path = f"{parent_path}{topic.pk}/"
        topic.save(update_fields=["path"])
        if rule_categories:
            topic.rule_categories.set(rule_categories)
    return topic


def topic_move(*, topic: Topic, parent: Topic | None) -> Topic:
    """Put ``topic`` under ``parent`` (``None``: make it a root), rewriting the ``path`` of the
    topic and of every descendant in one UPDATE. Moving to the current parent changes nothing.

    Returns ``topic`` refreshed. Raises ``ValueError`` naming both topics when ``parent`` is
    ``topic`` itself or one of its descendants (that would make a cycle), and when the stored
    path of ``topic`` is empty (written outside these services).
    """
    with transaction.atomic():
        current = Topic.objects.select_for_update().get(pk=topic.pk)
        if not current.path:
            raise ValueError(
                f"Topic {current.name!r} has no path; it was not created by topic_create."
            )
        parent_path = ""
        if parent is not None:
            target = Topic.objects.select_for_update().get(pk=parent.pk)
            if target.pk == current.pk or target.path.startswith(current.path):
                relation = "the topic itself" if target.pk == current.pk else "its descendant"
                raise ValueError(
                    f"Cannot move {current.name!r} under {target.name!r}: {target.name!r} is "
                    f"{relation}, which would make a cycle."
                )
            parent_path = target.path
        new_path = f"{parent_path}{current.pk}/"
        parent_id = parent.pk if parent is not None else None
        if current.parent_id != parent_id:
            Topic.objects.filter(pk=current.pk).update(
                parent_id=parent_id, updated_at=timezone.now()
            )
        if new_path != current.path:
            # The old and the new ancestors' subtrees change: recount them.
            topic_caches_invalidate_on_commit(
                int(pk) for pk in f"{current.path}{parent_path}".split("/") if pk
            )
            old_length = len(current.path)
            Topic.objects.filter(path__startswith=current.path).update(
                path=Concat(
                    Value(new_path), Substr("path", old_length + 1), output_field=CharField()
                )
            )
    topic.refresh_from_db(fields=["parent", "path", "updated_at"])
    return topic


# --- assignments: curators -----------------------------------------------------------------


def _assignment_store(
    *, paper_id: int, topic_id: int, pk: int | None, values: dict, create_values: dict
) -> Assignment:
    """Inside a transaction: lock the assignment ``pk`` (or, when it is gone, the one for
    ``(paper_id, topic_id)``), set ``values`` and save; when there is none, insert one with
    ``create_values`` and ``values``. An insert that loses a race to a concurrent insert of
    the pair (tagging, another curator) locks and updates that row instead. Returns the stored
    row. Simple-history records the change as usual."""
    locked = Assignment.objects.select_for_update()
    row = locked.filter(pk=pk).first() if pk is not None else None
    if row is None:
        row = locked.filter(paper_id=paper_id, topic_id=topic_id).first()
    if row is None:
        try:
            with transaction.atomic():
                return Assignment.objects.create(
                    paper_id=paper_id, topic_id=topic_id, **{**create_values, **values}
                )
        except IntegrityError:
            row = locked.filter(paper_id=paper_id, topic_id=topic_id).first()
            if row is None:
                raise
    for name, value in values.items():
        setattr(row, name, value)
    row.save(update_fields=[*values, "updated_at"])
    return row


def assignment_decide(*, assignment: Assignment, state: str, user) -> Assignment:
    """Record a curator decision: set ``state`` (``"accepted"``/``"rejected"``) and mark the
    assignment decided by ``user`` now. From then on re-tagging leaves it alone.

    The source (rule, classifier, import ...) and score are kept, so it stays visible where
    the assignment came from. The stored row is locked first; when re-tagging removed it
    since ``assignment`` was read, the decision is recorded anyway: the (paper, topic)
    assignment is created again with the decision and the source and score of ``assignment``.
    Returns the stored assignment (``assignment`` itself is brought up to date too, its pk
    included). Raises ``ValueError`` for an unknown state.
    """
    if state not in Assignment.State.values:
        raise ValueError(
            f"Unknown assignment state {state!r}; use one of {Assignment.State.values}."
        )
    with transaction.atomic():
        stored = _assignment_store(
            paper_id=assignment.paper_id,
            topic_id=assignment.topic_id,
            pk=assignment.pk,
            values={"state": state, "decided_by": user, "decided_at": timezone.now()},
            create_values={"source": assignment.source, "score": assignment.score},
        )
        topic_caches_invalidate_on_commit([stored.topic_id])
    for name in ("pk", "source", "score", "state", "decided_by", "decided_at", "updated_at"):
        setattr(assignment, name, getattr(stored, name))
    return stored


def assignment_add(*, paper: Paper, topic: Topic, user) -> Assignment:
    """Place ``paper`` in ``topic`` as a curator: source curator, accepted, decided by ``user``.

    An existing assignment for the pair (machine-made or decided) becomes this curator
    assignment; it is locked first, and an insert that races with tagging's insert of the pair
    turns that row into the curator's, so the curator's row always stands. Returns it.
    """
    with transaction.atomic():
        assignment = _assignment_store(
            paper_id=paper.pk,
            topic_id=topic.pk,
            pk=None,
            values={
                "source": Assignment.Source.CURATOR,
                "state": Assignment.State.ACCEPTED,
                "score": None,
                "decided_by": user,
                "decided_at": timezone.now(),
            },
            create_values={},
        )
        topic_caches_invalidate_on_commit([topic.pk])
    return assignment


# --- assignments: tagging by rules and the classifier --------------------------------------

MACHINE_SOURCES = (Assignment.Source.RULE, Assignment.Source.CLASSIFIER)
_RULE_MATCH = (Assignment.Source.RULE, Assignment.State.ACCEPTED, 1.0)
_ASSIGNMENT_FIELDS = [field.attname for field in Assignment._meta.concrete_fields]


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


@dataclass(frozen=True)
class _Tagger:
    """What one :func:`papers_tag` call applies to every batch: the compiled rules, the active
    topics, the active classifier (``None``: rules only), the review margin and whether
    machine writes are recorded in the assignment history."""

    rules: tuple[_TopicRule, ...]
    topic_ids: frozenset[int]
    classifier: TopicClassifier | None
    review_margin: float
    history: bool
    rule_index: _RuleIndex | None = None

    @property
    def change_reason(self) -> str:
        if self.classifier is None:
            return "tagging: rules"
        return f"tagging: rules and classifier v{self.classifier.version}"


# A query made only of terms joined by OR: quoted phrases and plain words (what
# rule_query_from_name builds, and most curated rules).
_OR_OF_TERMS = re.compile(r'\s*(?:"[^"]*"|[^\s()"]+)(?:\s+OR\s+(?:"[^"]*"|[^\s()"]+))*\s*')
_QUERY_TERM = re.compile(r'"([^"]*)"|([^\s()"]+)')
_WORD_RUN = re.compile(r"\w+")
# With this many keyword rules or more, tagging looks rules up by the words of a paper instead
# of trying every rule on every paper.
RULE_INDEX_MIN_RULES = 64


@functools.lru_cache(maxsize=65536)
def _rule_terms(query: str) -> tuple[frozenset[str], ...] | None:
    """For each term of a rule query, the runs of word characters (folded) of its words, all
    of which a text the term matches contains as whole ``\\w+`` runs; ``None`` when the query is
    not only terms joined by OR, or a term is a prefix (``agent*``) or a negation, or has no
    word character. Cached: rules are few and change rarely.

    A phrase or word term matches only where its words stand between whitespace or non-word
    characters (``topics.rules``), so every run of word characters inside them (``self`` and
    ``improving`` of ``self-improving``) is a whole run of the text: a paper whose runs hold
    all the runs of no term cannot match, and the rule need not be tried.
    """
    if not _OR_OF_TERMS.fullmatch(query):
        return None
    terms = []
    for phrase, word in _QUERY_TERM.findall(query):
        if word == "OR":
            continue
        if word in ("AND", "NOT") or word.startswith("-") or word.endswith("*"):
            return None
        runs = frozenset(_WORD_RUN.findall(fold(phrase or word)))
        if not runs:
            return None
        terms.append(runs)
    return tuple(terms) or None


@functools.lru_cache(maxsize=65536)
def _compiled_rule(query: str) -> Rule:
    """:func:`topics.rules.compile_rule`, once per process and query (a rule's dozen regular
    expressions cost more to compile than to match a batch)."""
    return compile_rule(query)


@dataclass(frozen=True)
class _RuleIndex:
    """The tagger's rules by word: for each rule term, under its longest word run (likely the
    rarest), the rule's position in the tagger's list and all the term's runs; and the
    positions to try on every paper (category-only rules, queries that cannot be indexed)."""

    by_word: dict[str, tuple[tuple[int, frozenset[str]], ...]]
    words: frozenset[str]
    always: tuple[int, ...]

    @classmethod
    def build(cls, rules: Sequence[_TopicRule]) -> _RuleIndex:
        by_word: dict[str, list[tuple[int, frozenset[str]]]] = defaultdict(list)
        always = []
        for position, topic_rule in enumerate(rules):
            terms = None if topic_rule.rule.is_empty else _rule_terms(topic_rule.rule.query)
            if terms is None:
                always.append(position)
            for runs in terms or ():
                by_word[max(runs, key=lambda run: (len(run), run))].append((position, runs))
        return cls(
            by_word={word: tuple(found) for word, found in by_word.items()},
            words=frozenset(by_word),
            always=tuple(always),
        )

    def candidates(self, folded: str) -> set[int]:
        """Positions of the rules that may match the folded text."""
        positions = set(self.always)
        runs = set(_WORD_RUN.findall(folded))
        for word in runs & self.words:
            for position, term_runs in self.by_word[word]:
                if term_runs <= runs:
                    positions.add(position)
        return positions


@functools.lru_cache(maxsize=4)
def _rule_index(rules: tuple[_TopicRule, ...]) -> _RuleIndex:
    """:meth:`_RuleIndex.build`, once per process and set of rules."""
    return _RuleIndex.build(rules)


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
        compiled.append(_TopicRule(topic_id, rule, frozenset(category_ids[topic_id])))
    return tuple(compiled), frozenset(topic_ids)


def _tagger() -> _Tagger:
    rules, topic_ids = _topic_rules()
    classifier = classifier_active()
    keyword_rules = sum(not topic_rule.rule.is_empty for topic_rule in rules)
    return _Tagger(
        rule_index=_rule_index(rules) if keyword_rules >= RULE_INDEX_MIN_RULES else None,
        rules=rules,
        topic_ids=topic_ids,
        classifier=classifier,
        review_margin=classifier_settings().review_margin,
        history=getattr(settings, "TOPICS_TAGGING_HISTORY", True)
        and getattr(settings, "SIMPLE_HISTORY_ENABLED", True),
    )


def _chunks(items: Iterable[int], size: int) -> Iterator[list[int]]:
    chunk: list[int] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def papers_tag(*, paper_ids: Sequence[int]) -> int:
    """Apply every active topic's rule and the active classifier to the papers ``paper_ids``
    (pks; unknown ones ignored), so that their machine-made assignments are what the rules and
    the classifier say now.

    - **Rules**: a paper matches a topic when the rule query matches its title and abstract
      and, if the topic lists rule categories, its primary category or a cross-list is one of
      them (topics without a rule are skipped). A match is an assignment with source ``rule``,
      state ``accepted``, score 1.0.
    - **Classifier** (when a version is active, see ``topics.classifier``): for a topic with a
      model and no rule match, a score at or above the topic's threshold is a ``classifier``
      assignment, ``accepted``; a score within ``TOPICS_CLASSIFIER_REVIEW_MARGIN`` below it is
      ``pending`` (the review queue, not shown on pages). Scores are in [0, 1], 4 decimals.
    - A machine-made (no decider, no decision time) ``rule`` or ``classifier`` assignment that
      neither supports any more is removed; without an active classifier, ``classifier``
      assignments are left as they are (nothing can judge them).
    - Curator decisions and ``import`` assignments are never changed or deleted, and no
      machine assignment is created where one of them exists.

    Work goes in batches of :data:`TAG_BATCH_SIZE` papers, one transaction each, in a fixed
    number of queries whatever the batch holds: three reads (papers, cross-lists, existing
    assignments), then on PostgreSQL the batch's plan is copied (COPY) into a temporary table
    and applied by at most one INSERT, one UPDATE and one DELETE, each writing the history rows
    of exactly the rows it wrote in the same statement; other databases take the ORM with a
    few more statements. ``TOPICS_TAGGING_HISTORY`` (default on) records machine writes in the
    assignment history, one row per assignment written, in bulk per batch, with the change
    reason "tagging: rules and classifier vN" ("tagging: rules" without a classifier).
    Running it twice leaves the same database (the second run writes nothing). A classifier
    score that moved by less than 0.01 is not rewritten.

    Returns the number of assignments created, changed or removed (a creation that loses a
    race to a concurrent curator addition is still counted; the curator's row wins).
    Raises ``topics.classifier.ClassifierLoadError`` when the active classifier cannot be
    loaded (nothing is written then).
    """
    tagger = _tagger()
    written = 0
    for batch in _chunks(sorted(set(paper_ids)), TAG_BATCH_SIZE):
        written += _tag_batch(batch, tagger)
    return written


def _wanted_assignments(
    papers: list[tuple[int, str, str, int]], cross_lists: dict[int, set[int]], tagger: _Tagger
) -> dict[tuple[int, int], tuple[str, str, float]]:
    """``(paper pk, topic pk) -> (source, state, score)`` the rules and classifier give."""
    wanted: dict[tuple[int, int], tuple[str, str, float]] = {}
    classifier = tagger.classifier
    texts = []
    for paper_id, title, abstract, primary_category_id in papers:
        category_ids = {primary_category_id, *cross_lists[paper_id]}
        # Folded on first need: category-only rules never need the text, the classifier does.
        folded = paper_text(title, abstract) if classifier is not None else None
        if classifier is not None:
            texts.append(folded)
        rules = tagger.rules
        if tagger.rule_index is not None:
            folded = folded or paper_text(title, abstract)
            rules = [rules[position] for position in tagger.rule_index.candidates(folded)]
        for topic_rule in rules:
            if topic_rule.category_ids and topic_rule.category_ids.isdisjoint(category_ids):
                continue
            if not topic_rule.rule.is_empty:
                if folded is None:
                    folded = paper_text(title, abstract)
                if not topic_rule.rule.matches_folded(folded):
                    continue
            wanted[(paper_id, topic_rule.topic_id)] = _RULE_MATCH
    if classifier is not None:
        for candidate in classifier.candidates(texts, margin=tagger.review_margin):
            key = (papers[candidate.row][0], candidate.topic_id)
            if key in wanted or candidate.topic_id not in tagger.topic_ids:
                continue
            state = Assignment.State.ACCEPTED if candidate.accepted else Assignment.State.PENDING
            wanted[key] = (Assignment.Source.CLASSIFIER, state, candidate.score)
    return wanted


@dataclass(frozen=True)
class _Stored:
    """An assignment as tagging reads it: ``machine`` is true for a machine-made ``rule`` or
    ``classifier`` assignment (the only kind tagging may change)."""

    pk: int
    topic_id: int
    source: str
    state: str
    score: float | None
    machine: bool


def _needs_update(stored: _Stored, target: tuple[str, str, float]) -> bool:
    source, state, score = target
    if (stored.source, stored.state) != (source, state) or stored.score is None:
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


def _tag_batch(paper_ids: list[int], tagger: _Tagger) -> int:
    with transaction.atomic():
        started = timezone.now()
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
        wanted = _wanted_assignments(papers, cross_lists, tagger)

        # The machine-made test in SQL: no timestamps to parse for every row.
        existing = {
            (paper_id, topic_id): _Stored(pk, topic_id, source, state, score, machine)
            for pk, paper_id, topic_id, source, state, score, machine in Assignment.objects.filter(
                **_batch_filter(paper_ids, "paper_id")
            )
            .annotate(machine=ExpressionWrapper(_machine_made(), output_field=BooleanField()))
            .values_list("pk", "paper_id", "topic_id", "source", "state", "score", "machine")
            if paper_id in batch
        }
        to_create = sorted(key for key in wanted if key not in existing)
        to_update: list[tuple[_Stored, tuple[str, str, float]]] = []
        to_delete: list[_Stored] = []
        for key, stored in existing.items():
            if not stored.machine:
                continue
            target = wanted.get(key)
            if target is not None:
                if _needs_update(stored, target):
                    to_update.append((stored, target))
            elif stored.source == Assignment.Source.RULE or tagger.classifier is not None:
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


@dataclass(frozen=True)
class _TagPlan:
    """What one batch writes: ``create`` rows ``(paper pk, topic pk, source, state, score)``,
    ``update`` rows ``(assignment pk, source, state, score)``, ``delete`` assignment pks."""

    create: list[tuple[int, int, str, str, float]]
    update: list[tuple[int, str, str, float]]
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

    create = (
        f"INSERT INTO {table} (created_at, updated_at, paper_id, topic_id, source, state, score) "
        f"SELECT %(now)s, %(now)s, paper_id, topic_id, source, state, score FROM {_PLAN_TABLE} "
        "WHERE action = 'c' ORDER BY paper_id, topic_id "
        # A curator's assignment added since the batch's read wins.
        "ON CONFLICT (paper_id, topic_id) DO NOTHING"
    )
    update = (
        f"UPDATE {table} AS a SET source = p.source, state = p.state, score = p.score, "
        f"updated_at = %(now)s FROM {_PLAN_TABLE} AS p WHERE p.action = 'u' AND a.id = p.id "
        f"AND {guard}"
    )
    delete = (
        f"DELETE FROM {table} AS a USING {_PLAN_TABLE} AS p WHERE p.action = 'd' "
        f"AND a.id = p.id AND {guard}"
    )
    return {
        "prepare": (
            f"CREATE TEMPORARY TABLE IF NOT EXISTS {_PLAN_TABLE} (action char(1) NOT NULL, "
            "id bigint, paper_id bigint, topic_id bigint, source varchar(16), "
            "state varchar(16), score double precision) ON COMMIT DELETE ROWS; "
            f"DELETE FROM {_PLAN_TABLE}"
        ),
        "copy": (
            f"COPY {_PLAN_TABLE} (action, id, paper_id, topic_id, source, state, score) FROM STDIN"
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
    with connection.cursor() as cursor:
        cursor.execute(statements["prepare"])
        with cursor.cursor.copy(statements["copy"]) as copy:
            for paper_id, topic_id, source, state, score in plan.create:
                copy.write_row(("c", None, paper_id, topic_id, source, state, score))
            for pk, source, state, score in plan.update:
                copy.write_row(("u", pk, None, None, source, state, score))
            for pk in plan.delete:
                copy.write_row(("d", pk, None, None, None, None, None))
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
                    paper_id=paper_id, topic_id=topic_id, source=source, state=state, score=score
                )
                for paper_id, topic_id, source, state, score in plan.create
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
                *[When(pk=row[0], then=Value(row[index])) for row in plan.update],
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
                for pk, source, state, score in plan.update
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
    for chunk in _chunks(paper_ids, chunk_size):
        transaction.on_commit(partial(tag_papers.delay, chunk))
        chunks += 1
        papers += len(chunk)
    return TagQueueResult(chunks=chunks, papers=papers)


# --- the classifier: training and applying -------------------------------------------------


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


def _training_set(config: ClassifierSettings) -> _TrainingSet:
    """Read the labels: the newest ``config.max_papers`` papers with a training label, their
    texts, their labels; build each topic's examples.

    A topic's positives are its accepted labels, its explicit negatives its curator
    rejections; every other labelled paper is an implicit negative, except papers accepted in
    an ancestor or descendant of the topic (a paper about a subtopic is not a negative of the
    parent). The classifier's own assignments play no part: leaving the papers it placed out
    of a topic's negatives let every retrain widen the topic on the same labels. Curator
    decisions weigh ``config.curator_weight``, everything else 1. Topics with fewer than
    ``config.min_positives`` positives get only their explicit labels (they get no model).
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
    for chunk in _chunks(paper_ids, TRAINING_READ_CHUNK):
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
        excluded = set().union(*(positives[other] for other in related))
        implicit = np.ones(len(paper_ids), dtype=bool)
        implicit[list(excluded | explicit.keys())] = False
        examples[topic_id] = _examples(explicit, implicit_negatives=np.flatnonzero(implicit))
    return _TrainingSet(
        texts=texts,
        examples=examples,
        label_count=sum(len(rows) for rows in labels.values()),
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
    """Queue re-tagging (rules and the active classifier, :func:`papers_tag`) of ``paper_ids``
    (pks), or of every stored paper when ``None``, in chunks on the ``tag`` queue; sent when
    the surrounding transaction commits. Returns the :class:`TagQueueResult`."""
    if paper_ids is None:
        paper_ids = (
            Paper.objects.order_by("pk").values_list("pk", flat=True).iterator(TAG_CHUNK_SIZE)
        )
    return papers_tag_enqueue(paper_ids=paper_ids)


# --- the reference page --------------------------------------------------------------------


class ReferencePageError(ValueError):
    """The reference-page data cannot be imported. The message names the place (``papers[3]
    .published``) and the problem, or the category that must be loaded first."""


@dataclass
class ImportResult:
    """Counts of what :func:`reference_page_import` did (all zero but ``*_unchanged`` on a
    repeat run of the same data)."""

    topics_created: int = 0
    topics_updated: int = 0
    topics_unchanged: int = 0
    papers_created: int = 0
    papers_updated: int = 0
    papers_unchanged: int = 0
    assignments_created: int = 0
    assignments_updated: int = 0
    assignments_removed: int = 0


@dataclass(frozen=True)
class _ReferencePaper:
    index: int
    published: dt.date
    primary_category: str
    title: str
    abstract: str
    authors_shown: list[str]
    authors_more: int
    affiliations_shown: list[str]
    affiliations_more: int
    topics: list[str]


@dataclass(frozen=True)
class _ReferencePage:
    topic_name: str
    parent_name: str
    parent_short_name: str
    vocabulary: list[str]
    papers: list[_ReferencePaper] = field(default_factory=list)


def _reference_slug(name: str) -> str:
    """``slugify(name)``; for a name with no Latin letter or digit (``中文主题``, ``!!!``), whose
    slug would be empty, ``topic-`` and the first 8 hex digits of the SHA-256 of the name, the
    same on every import (``Topic.slug`` holds ASCII only)."""
    return slugify(name) or "topic-" + hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]


def reference_import_key(title: str) -> str:
    """``Paper.import_key`` of a reference-page paper: ``"reference:"`` and the first 24 hex
    digits of the SHA-256 of the title (whitespace collapsed, case folded), so the same paper
    gets the same key on every import."""
    normal = " ".join(title.split()).casefold()
    return REFERENCE_IMPORT_PREFIX + hashlib.sha256(normal.encode("utf-8")).hexdigest()[:24]


# The largest count a PositiveIntegerField holds on every supported database.
_MAX_COUNT = 2_147_483_647


def _max_length(model, field_name: str) -> int:
    return model._meta.get_field(field_name).max_length


def _check_text(value: str, where: str, max_length: int | None = None) -> str:
    """``value``, or ReferencePageError for a NUL character (PostgreSQL text cannot hold one)
    or more than ``max_length`` characters (the column's size) once stripped."""
    if "\x00" in value:
        raise ReferencePageError(f"{where}: contains a NUL character")
    if max_length is not None and len(value.strip()) > max_length:
        raise ReferencePageError(f"{where}: longer than {max_length} characters")
    return value


def _require(
    mapping: object,
    key: str,
    kind: type | tuple[type, ...],
    where: str,
    *,
    max_length: int | None = None,
):
    if not isinstance(mapping, dict):
        raise ReferencePageError(f"{where}: expected an object")
    if key not in mapping:
        raise ReferencePageError(f"{where}: missing field {key!r}")
    value = mapping[key]
    # bool is an int in Python; a count of True is still a mistake in the file.
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        expected = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise ReferencePageError(f"{where}.{key}: expected {expected}, got {value!r}")
    if isinstance(value, str):
        _check_text(value, f"{where}.{key}", max_length)
    return value


def _require_names(
    mapping: dict, key: str, where: str, *, max_length: int | None = None
) -> list[str]:
    values = _require(mapping, key, list, where)
    for position, value in enumerate(values):
        if not isinstance(value, str) or not value.strip():
            raise ReferencePageError(f"{where}.{key}[{position}]: expected a name, got {value!r}")
        _check_text(value, f"{where}.{key}[{position}]", max_length)
    return [value.strip() for value in values]


def _require_count(mapping: dict, key: str, where: str, *, shown: int = 0) -> int:
    """A count of names not shown; with the ``shown`` ones it must fit a count column."""
    value = _require(mapping, key, int, where)
    if value < 0:
        raise ReferencePageError(f"{where}.{key}: expected a count, got {value!r}")
    if shown + value > _MAX_COUNT:
        raise ReferencePageError(
            f"{where}.{key}: {value} is too large (shown and more together at most {_MAX_COUNT})"
        )
    return value


def _reference_page_parse(data: object) -> _ReferencePage:
    """Check the whole document before anything is written: types, NUL characters, lengths
    against the columns that store them, counts against the count columns; raise
    ReferencePageError naming the place. A paper's repeated affiliation is kept once, at its
    first position."""
    topic_length = _max_length(Topic, "name")
    topic = _require(data, "topic", dict, "document")
    topic_name = _require(topic, "name", str, "topic", max_length=topic_length).strip()
    parent = _require(topic, "parent", dict, "topic")
    parent_name = _require(parent, "name", str, "topic.parent", max_length=topic_length).strip()
    parent_short_name = _require(
        parent, "abbreviation", str, "topic.parent", max_length=_max_length(Topic, "short_name")
    ).strip()
    vocabulary = _require_names(data, "topic_vocabulary", "document", max_length=topic_length)
    if topic_name not in vocabulary:
        raise ReferencePageError(f"topic.name: {topic_name!r} is not in topic_vocabulary")
    known_topics = set(vocabulary)

    papers = []
    titles: dict[str, int] = {}
    for index, raw in enumerate(_require(data, "papers", list, "document")):
        where = f"papers[{index}]"
        published_text = _require(raw, "published", str, where)
        try:
            published = dt.date.fromisoformat(published_text)
        except ValueError:
            raise ReferencePageError(
                f"{where}.published: {published_text!r} is not a date (YYYY-MM-DD)"
            ) from None
        title = " ".join(_require(raw, "title", str, where).split())
        if not title:
            raise ReferencePageError(f"{where}.title: empty")
        key = reference_import_key(title)
        if key in titles:
            raise ReferencePageError(f"{where}.title: same title as papers[{titles[key]}]")
        titles[key] = index
        topics = _require_names(raw, "topics", where)
        for position, name in enumerate(topics):
            if name not in known_topics:
                raise ReferencePageError(
                    f"{where}.topics[{position}]: {name!r} is not in topic_vocabulary"
                )
        authors = _require_names(
            raw, "authors_shown", where, max_length=_max_length(Author, "name")
        )
        # PaperAffiliation holds an affiliation once per paper: the first position wins.
        affiliations = list(
            dict.fromkeys(
                _require_names(
                    raw, "affiliations_shown", where, max_length=_max_length(Affiliation, "name")
                )
            )
        )
        papers.append(
            _ReferencePaper(
                index=index,
                published=published,
                primary_category=_require(raw, "primary_category", str, where).strip(),
                title=title,
                abstract=_require(raw, "abstract", str, where).strip(),
                authors_shown=authors,
                authors_more=_require_count(raw, "authors_more", where, shown=len(authors)),
                affiliations_shown=affiliations,
                affiliations_more=_require_count(
                    raw, "affiliations_more", where, shown=len(affiliations)
                ),
                topics=list(dict.fromkeys(topics)),
            )
        )
    return _ReferencePage(topic_name, parent_name, parent_short_name, vocabulary, papers)


def _reference_categories(page: _ReferencePage) -> dict[str, Category]:
    """Map each paper's category code to its stored ``Category`` (aliases resolved)."""
    canonical = {}
    for paper in page.papers:
        try:
            canonical[paper.primary_category] = canonical_category(paper.primary_category)
        except UnknownCategory:
            raise ReferencePageError(
                f"papers[{paper.index}].primary_category: {paper.primary_category!r} is not an "
                "arXiv category"
            ) from None
    stored = {c.code: c for c in Category.objects.filter(code__in=set(canonical.values()))}
    missing = sorted(set(canonical.values()) - stored.keys())
    if missing:
        noun, verb = ("category", "is") if len(missing) == 1 else ("categories", "are")
        raise ReferencePageError(
            f"{noun} {', '.join(missing)} {verb} not in the database; run `manage.py "
            "load_categories` first"
        )
    return {code: stored[canonical_code] for code, canonical_code in canonical.items()}


def _topic_ensure(
    result: ImportResult,
    *,
    name: str,
    slug: str,
    parent: Topic | None,
    short_name: str = "",
    enforce: bool,
) -> Topic:
    """The topic with ``slug``, created if missing. With ``enforce``, an existing topic gets
    ``name``/``short_name``/``parent`` from the data; without it, it is left as curators keep it."""
    topic = Topic.objects.filter(slug=slug).first()
    if topic is None or not topic.active:
        # A curator renamed this topic, or merged it into another (the merged-away topic stays,
        # inactive, under its old slug): their choice stands.
        redirect = TopicRedirect.objects.select_related("topic").filter(old_slug=slug).first()
        if redirect is not None:
            result.topics_unchanged += 1
            return redirect.topic
    if topic is None:
        result.topics_created += 1
        return topic_create(name=name, slug=slug, parent=parent, short_name=short_name)
    changed = False
    if enforce and (topic.name, topic.short_name) != (name, short_name):
        topic.name, topic.short_name = name, short_name
        topic.save(update_fields=["name", "short_name", "updated_at"])
        changed = True
    parent_id = parent.pk if parent else None
    if enforce and topic.parent_id != parent_id:
        topic = topic_move(topic=topic, parent=parent)
        changed = True
    if changed:
        result.topics_updated += 1
    else:
        result.topics_unchanged += 1
    return topic


def _names_ensure(model, names: Iterable[str]) -> dict[str, int]:
    """pks of ``Author``/``Affiliation`` rows by name, creating the missing ones in bulk."""
    names = set(names)
    model.objects.bulk_create([model(name=name) for name in names], ignore_conflicts=True)
    return dict(model.objects.filter(name__in=names).values_list("name", "pk"))


def _ordered_links_sync(model, field_name: str, paper_id: int, wanted_ids: list[int]) -> bool:
    """Make the paper's ``Authorship``/``PaperAffiliation`` rows the given ids at positions
    0, 1, ...; rewrite them only when they differ. Returns whether anything changed."""
    rows = model.objects.filter(paper_id=paper_id).order_by("position")
    current = list(rows.values_list(f"{field_name}_id", "position"))
    wanted = [(pk, position) for position, pk in enumerate(wanted_ids)]
    if current == wanted:
        return False
    rows.delete()
    model.objects.bulk_create(
        [
            model(paper_id=paper_id, position=position, **{f"{field_name}_id": pk})
            for pk, position in wanted
        ]
    )
    return True


def reference_page_import(*, data: dict) -> ImportResult:
    """Import the reference topic page (``topics/data/llm-agent-training.json`` as parsed JSON).

    Creates or updates, in one transaction:

    - the parent topic (``short_name`` from ``topic.parent.abbreviation``, slug from it) and
      the page topic under it; every other ``topic_vocabulary`` name as a root topic (slug
      ``slugify(name)``, or ``topic-<8 hex digits of its SHA-256>`` for a name with no Latin
      letter or digit) unless a topic with that slug exists, which is then left where it is;
    - each paper as one ``Paper`` keyed by :func:`reference_import_key` (it has no arXiv
      identifier): ``submitted`` = ``published``, primary category, title, abstract, the shown
      authors (``Authorship``) and affiliations (``PaperAffiliation``) in order,
      ``author_count``/``affiliation_count`` = shown + more;
    - each paper's topics as accepted ``import`` assignments (score ``None``); an ``import``
      assignment the data no longer lists is removed. Curator decisions are left alone.

    Importing the same data again writes nothing; concurrent imports run one after the other
    (a PostgreSQL advisory lock), so the later ones find everything imported. Returns an
    :class:`ImportResult`.
    Raises :class:`ReferencePageError` naming the paper index and field for malformed data, or
    the category codes missing from the database (``load_categories`` not run); nothing is
    written then.
    """
    page = _reference_page_parse(data)
    result = ImportResult()
    with transaction.atomic():
        _reference_import_lock()
        categories = _reference_categories(page)
        parent = _topic_ensure(
            result,
            name=page.parent_name,
            slug=_reference_slug(page.parent_short_name or page.parent_name),
            parent=None,
            short_name=page.parent_short_name,
            enforce=True,
        )
        topics = {
            page.topic_name: _topic_ensure(
                result,
                name=page.topic_name,
                slug=_reference_slug(page.topic_name),
                parent=parent,
                enforce=True,
            )
        }
        for name in page.vocabulary:
            if name not in topics:
                topics[name] = _topic_ensure(
                    result, name=name, slug=_reference_slug(name), parent=None, enforce=False
                )

        author_ids = _names_ensure(Author, (n for p in page.papers for n in p.authors_shown))
        affiliation_ids = _names_ensure(
            Affiliation, (n for p in page.papers for n in p.affiliations_shown)
        )
        keys = {reference_import_key(p.title): p for p in page.papers}
        stored = {p.import_key: p for p in Paper.objects.filter(import_key__in=keys)}
        wanted_assignments: set[tuple[int, int]] = set()
        for key, item in keys.items():
            paper, changed = _reference_paper_upsert(
                stored.get(key), key=key, item=item, category=categories[item.primary_category]
            )
            changed |= _ordered_links_sync(
                Authorship, "author", paper.pk, [author_ids[n] for n in item.authors_shown]
            )
            changed |= _ordered_links_sync(
                PaperAffiliation,
                "affiliation",
                paper.pk,
                [affiliation_ids[n] for n in item.affiliations_shown],
            )
            if key not in stored:
                result.papers_created += 1
            elif changed:
                result.papers_updated += 1
            else:
                result.papers_unchanged += 1
            wanted_assignments |= {(paper.pk, topics[name].pk) for name in item.topics}

        paper_ids = {paper_id for paper_id, _ in wanted_assignments} | {
            p.pk for p in stored.values()
        }
        _reference_assignments_sync(result, paper_ids, wanted_assignments)
    return result


# pg_advisory_xact_lock key of the reference-page import: "topicref" in ASCII, a bigint.
REFERENCE_IMPORT_LOCK = 0x746F7069_63726566


def _reference_import_lock() -> None:
    """One import at a time: on PostgreSQL, a transaction-scoped advisory lock taken before the
    first read, so a concurrent import waits for this one to commit and then finds everything
    imported (without it, both create the same topics and one dies on the unique slug).
    SQLite serialises writers already."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [REFERENCE_IMPORT_LOCK])


def _reference_paper_upsert(
    paper: Paper | None, *, key: str, item: _ReferencePaper, category: Category
) -> tuple[Paper, bool]:
    fields = {
        "title": item.title,
        "title_raw": item.title,
        "abstract": item.abstract,
        "abstract_raw": item.abstract,
        "primary_category_id": category.pk,
        "submitted": item.published,
        "author_count": len(item.authors_shown) + item.authors_more,
        "affiliation_count": len(item.affiliations_shown) + item.affiliations_more,
        "source": REFERENCE_SOURCE,
    }
    if paper is None:
        return Paper.objects.create(import_key=key, **fields), True
    changed = [name for name, value in fields.items() if getattr(paper, name) != value]
    if not changed:
        return paper, False
    for name in changed:
        setattr(paper, name, fields[name])
    paper.save(update_fields=[*changed, "updated_at"])
    return paper, True


def _reference_assignments_sync(
    result: ImportResult, paper_ids: set[int], wanted: set[tuple[int, int]]
) -> None:
    existing = {
        (a.paper_id, a.topic_id): a
        for a in Assignment.objects.filter(paper_id__in=paper_ids).only(
            "pk", "paper_id", "topic_id", "source", "state", "score", "decided_by_id", "decided_at"
        )
    }
    # A curator decision (a decider, or a decision time whose curator account is gone) is
    # never changed or removed, here nor in the guarded writes below.
    undecided = Q(decided_by__isnull=True, decided_at__isnull=True)
    imported = (Assignment.Source.IMPORT, Assignment.State.ACCEPTED, None)
    to_create = [key for key in wanted if key not in existing]
    to_update = [
        a
        for key, a in existing.items()
        if key in wanted
        and a.decided_by_id is None
        and a.decided_at is None
        and (a.source, a.state, a.score) != imported
    ]
    to_delete = [
        a
        for key, a in existing.items()
        if key not in wanted
        and a.decided_by_id is None
        and a.decided_at is None
        and a.source == Assignment.Source.IMPORT
    ]
    Assignment.objects.bulk_create(
        [
            Assignment(
                paper_id=paper_id,
                topic_id=topic_id,
                source=Assignment.Source.IMPORT,
                state=Assignment.State.ACCEPTED,
                score=None,
            )
            for paper_id, topic_id in sorted(to_create)
        ]
    )
    result.assignments_created = len(to_create)
    result.assignments_updated = Assignment.objects.filter(
        undecided, pk__in=[a.pk for a in to_update]
    ).update(
        source=Assignment.Source.IMPORT,
        state=Assignment.State.ACCEPTED,
        score=None,
        updated_at=timezone.now(),
    )
    # QuerySet.delete() reads the rows, then deletes them by pk alone (simple-history's
    # receivers need the rows): lock them with the guard first, so a decision cannot come in
    # between; a decision committed meanwhile makes the locking read skip its row.
    doomed = list(
        Assignment.objects.select_for_update()
        .filter(undecided, pk__in=[a.pk for a in to_delete], source=Assignment.Source.IMPORT)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    result.assignments_removed = (
        Assignment.objects.filter(pk__in=doomed).delete()[1].get(Assignment._meta.label, 0)
    )
    topic_caches_invalidate_on_commit(
        {topic_id for _, topic_id in to_create} | {a.topic_id for a in to_update + to_delete}
    )


# --- taxonomies: rules from names, OpenAlex topics, arXiv categories -----------------------

# Where a name or a description's sentence splits into candidate terms: punctuation and the
# words that join terms ("X and Y", "X for Y", "including X").
_TERM_SEPARATORS = re.compile(
    r"[,;:()\[\]/]|\s[-–]\s|(?<![\w-])(?:and|or|in|of|for|on|with|within|using|through|via|from|to|"
    r"by|including|includes|such as|focusing|focuses|focus|covering|covers|explores|"
    r"exploring|examining|examines|addressing|addresses|encompasses|encompassing|revolves|"
    r"around|across|among|between|related|based|particularly|especially|like|as well as|"
    r"about|that|which|whose|involved|associated|affecting|influencing|regarding|"
    r"concerning|towards?|into|at|under|over|during|against|versus|vs|"
    r"the study|the role|the use|the impact|the application|the development|this cluster|"
    r"papers)(?![\w-])",
    re.IGNORECASE,
)
# Words that say nothing about a subject on their own; a term made only of them is dropped,
# and they are trimmed from the start of a term.
_GENERIC_WORDS = frozenset(
    """a an the its their this these those various different diverse recent current key new
    novel advanced advances advancements developments development emerging modern innovative
    effective efficient potential specific several multiple other also both such topics topic
    studies study research researches analysis applications application use uses role impact
    impacts effects effect implications issues challenges aspects perspectives trends wide
    range field fields areas area approaches approach strategies strategy techniques technique
    methods method methodologies technologies technology systems theory theories models
    model management practices practice factors their it including papers cluster""".split()
)
# Trimmed from the end of a term of three words or more ("silicon photonics technology").
_TRAILING_WORDS = frozenset(
    """techniques technique methods method methodologies technologies technology applications
    application approaches strategies research studies advances developments issues
    challenges aspects perspectives trends""".split()
)
_ACRONYM = re.compile(r"[A-Z][A-Za-z0-9]*[A-Z][A-Za-z0-9]*s?")
_DESCRIPTION_PREAMBLE = re.compile(
    r"^\s*this cluster of papers\s+\w+(?:\s+(?:on|around|upon|into))?\s+"
    r"(?:a wide range of topics\s+(?:related to|in|within|on)\s+)?",
    re.IGNORECASE,
)
MAX_RULE_TERMS = 10


def _plural_variant(phrase: str) -> str | None:
    """The phrase with its last word in the other number ("GUI agents" <-> "GUI agent"), or
    ``None`` where that is not safe to guess (acronyms, "-ics", "-ss", "-us", "-is", "-ing",
    "-ed")."""
    head, _, last = phrase.rpartition(" ")
    if not last.isalpha() or len(last) <= 3 or last.isupper():
        return None
    lower = last.lower()
    if lower.endswith(("ics", "ss", "us", "is", "ing", "ed")):
        return None
    if lower.endswith("ies"):
        other = last[:-3] + "y"
    elif lower.endswith("s"):
        other = last[:-1]
    elif lower.endswith("y") and lower[-2] not in "aeiou":
        other = last[:-1] + "ies"
    elif lower.endswith(("x", "ch", "sh")):
        other = last + "es"
    else:
        other = last + "s"
    return f"{head} {other}" if head else other


def _terms(text: str) -> Iterator[str]:
    """Candidate terms of ``text``: runs of 2 to 4 words between separators, generic words
    trimmed, or a lone acronym (``ALD``, ``VCSELs``)."""
    for part in _TERM_SEPARATORS.split(text):
        words = [word.strip(".'\"!?*-") for word in part.split()]
        words = [word for word in words if any(char.isalnum() for char in word)]
        while words and words[0].lower() in _GENERIC_WORDS:
            words.pop(0)
        while len(words) > 2 and words[-1].lower() in _TRAILING_WORDS:
            words.pop()
        if len(words) == 1 and len(words[0]) >= 3 and _ACRONYM.fullmatch(words[0]):
            yield words[0]
        elif 2 <= len(words) <= 4 and not all(word.lower() in _GENERIC_WORDS for word in words):
            yield " ".join(words)


def rule_query_from_name(name: str, *, description: str = "") -> str:
    """A starting rule query for a topic, built from its name and description, for curators to
    refine: quoted phrases joined by OR.

    The phrases are the name itself, the terms of two to four words the name joins ("Tool Use"
    in "RL for Tool Use"), and, from the first sentence of ``description``, the terms it lists
    ("...including backpropagation learning, self-organizing maps, ...") and acronyms given
    in parentheses; generic words ("techniques", "advances in") are trimmed; each phrase also
    comes with its last word in the other number ("GUI agent" for "GUI Agents") and, when
    hyphenated, without hyphens. At most :data:`MAX_RULE_TERMS` terms before variants.
    Returns ``""`` for a blank name. The result always parses (``topics.rules``).
    """
    words = [word for word in name.replace('"', " ").split() if any(c.isalnum() for c in word)]
    terms = [" ".join(words)] if words else []
    terms.extend(_terms(name.replace('"', " ")))
    if description.strip():
        first_sentence = re.split(r"(?<=[a-z0-9)])\.\s", description.strip(), maxsplit=1)[0]
        first_sentence = _DESCRIPTION_PREAMBLE.sub("", first_sentence.replace('"', " "))
        terms.extend(_terms(first_sentence))
    phrases: dict[str, str] = {}
    for term in terms:
        if len({fold(key) for key in phrases}) >= MAX_RULE_TERMS and fold(term) not in phrases:
            break
        for variant in (term, _plural_variant(term)):
            if variant is None:
                continue
            for form in (variant, variant.replace("-", " ")) if "-" in variant else (variant,):
                phrases.setdefault(fold(form), form)
    return " OR ".join(f'"{phrase}"' for phrase in phrases.values())


@dataclass
class TaxonomyImportResult:
    """Counts of what an import did: topics created (per level name, e.g. ``{"domain": 4,
    "topic": 82}``), topics found again (left as curators keep them), rules set."""

    created: dict[str, int] = field(default_factory=dict)
    unchanged: int = 0
    rules_set: int = 0

    @property
    def topics_created(self) -> int:
        return sum(self.created.values())


def _curated_successor(slug: str) -> Topic | None:
    """The active topic a curator's rename or merge sent ``slug`` to, or ``None``."""
    redirect = (
        TopicRedirect.objects.filter(old_slug=slug, topic__active=True)
        .select_related("topic")
        .first()
    )
    return redirect.topic if redirect is not None else None


def _curated_topic(*, name: str, parent: Topic | None) -> Topic | None:
    """The topic an import made from ``name`` under ``parent`` if a curator has since renamed
    it (keeping or changing its slug) or merged it away, else ``None``.

    An import's topic got the slug ``slugify(name)`` or that with a ``-N`` suffix
    (:func:`_unique_slug`). A topic still under ``parent`` with such a slug whose history shows
    it once had ``name`` is taken first (a rename that kept the slug; a topic that merely
    happens to hold the slug is not it); then a redirect from such a slug to a topic now under
    ``parent``; then the redirect from exactly ``slugify(name)`` wherever its topic now lives
    (a merge target may sit elsewhere).
    """
    base = slugify(name)[:190] or "topic"
    pattern = rf"^{re.escape(base)}(-[0-9]+)?$"
    parent_id = parent.pk if parent else None
    kept = (
        Topic.objects.active()
        .filter(slug__regex=pattern, parent_id=parent_id)
        .filter(pk__in=Topic.history.filter(name=name).values("id"))
        .order_by("pk")
        .first()
    )
    if kept is not None:
        return kept
    redirects = list(
        TopicRedirect.objects.filter(old_slug__regex=pattern, topic__active=True)
        .select_related("topic")
        .order_by("pk")
    )
    for redirect in redirects:
        if redirect.topic.parent_id == parent_id:
            return redirect.topic
    for redirect in redirects:
        if redirect.old_slug == base:
            return redirect.topic
    return None


class _ChildFinder:
    """Finds a topic's child by name (one query per parent, cached), creating it if missing."""

    def __init__(self, result: TaxonomyImportResult):
        self.result = result
        self.children: dict[int | None, dict[str, Topic]] = {}
        self.seen: set[int] = set()

    def ensure(
        self,
        level: str,
        *,
        name: str,
        parent: Topic | None,
        description: str = "",
        short_name: str = "",
        rule_query: str = "",
        rule_categories: Iterable[Category] = (),
    ) -> Topic:
        key = parent.pk if parent else None
        if key not in self.children:
            siblings = Topic.objects.filter(parent=parent) if parent else Topic.objects.roots()
            # Oldest first, so a later duplicate name never shadows the original.
            self.children[key] = {}
            for topic in siblings.order_by("-pk"):
                self.children[key][topic.name] = topic
        topic = self.children[key].get(name)
        if topic is not None and not topic.active:
            # Merged away by a curator: the redirect names the topic it lives on as.
            topic = _curated_successor(topic.slug)
        if topic is None:
            topic = _curated_topic(name=name, parent=parent)
        if topic is not None:
            self.children[key][name] = topic
            if topic.pk not in self.seen:
                self.seen.add(topic.pk)
                self.result.unchanged += 1
            return topic
        topic = topic_create(
            name=name,
            parent=parent,
            description=description,
            short_name=short_name,
            rule_query=rule_query,
            rule_categories=rule_categories,
        )
        self.children[key][name] = topic
        self.seen.add(topic.pk)
        self.result.created[level] = self.result.created.get(level, 0) + 1
        if rule_query or rule_categories:
            self.result.rules_set += 1
        return topic


class TaxonomyFileError(ValueError):
    """A taxonomy file cannot be imported; the message names the file and line and what is
    wrong."""


@dataclass(frozen=True)
class OpenAlexTopic:
    """One row of OpenAlex's topics CSV: the topic (``topic_id`` such as ``"T10299"``, name,
    description) and the names of its subfield, field and domain."""

    topic_id: str
    name: str
    subfield: str
    field: str
    domain: str
    description: str = ""


OPENALEX_COLUMNS = (
    "topic_id",
    "topic_name",
    "subfield_id",
    "subfield_name",
    "field_id",
    "field_name",
    "domain_id",
    "domain_name",
    "works_count",
    "description",
)


def openalex_topics_parse(lines: Iterable[str], *, source: str) -> list[OpenAlexTopic]:
    """Parse OpenAlex's topics CSV (columns :data:`OPENALEX_COLUMNS`, the flattening of the
    domain > field > subfield > topic tree described in ``topics/data/openalex/SOURCES.md``).

    ``lines``: the file's text lines (an open text file). Returns the topics in file order.
    Raises :class:`TaxonomyFileError` naming ``source`` and the line for missing columns, an
    empty name or id, or a topic id given twice; nothing is returned then.
    """
    reader = csv.DictReader(lines)
    missing = [column for column in OPENALEX_COLUMNS if column not in (reader.fieldnames or [])]
    if missing:
        raise TaxonomyFileError(f"{source}: missing columns {', '.join(missing)}")
    topics: list[OpenAlexTopic] = []
    seen: dict[str, int] = {}
    for row in reader:
        line = reader.line_num
        for column in ("topic_id", "topic_name", "subfield_name", "field_name", "domain_name"):
            if not (row[column] or "").strip():
                raise TaxonomyFileError(f"{source}, line {line}: empty {column}")
        topic_id = row["topic_id"].strip()
        if topic_id in seen:
            raise TaxonomyFileError(
                f"{source}, line {line}: topic {topic_id} already given on line {seen[topic_id]}"
            )
        seen[topic_id] = line
        topics.append(
            OpenAlexTopic(
                topic_id=topic_id,
                name=" ".join(row["topic_name"].split()),
                subfield=" ".join(row["subfield_name"].split()),
                field=" ".join(row["field_name"].split()),
                domain=" ".join(row["domain_name"].split()),
                description=(row["description"] or "").strip(),
            )
        )
    return topics


def _only(topics: list[OpenAlexTopic], attribute: str, name: str | None) -> list[OpenAlexTopic]:
    if name is None:
        return topics
    wanted = name.strip().casefold()
    kept = [topic for topic in topics if getattr(topic, attribute).casefold() == wanted]
    if not kept:
        known = sorted({getattr(topic, attribute) for topic in topics})
        raise ValueError(f"No OpenAlex {attribute} named {name!r}; there are: {', '.join(known)}.")
    return kept


def openalex_topics_import(
    *, topics: Sequence[OpenAlexTopic], domain: str | None = None, field: str | None = None
) -> TaxonomyImportResult:
    """Import OpenAlex's topic tree: a root topic per domain, a topic per field under it, per
    subfield under that, and per OpenAlex topic under its subfield, in one transaction.

    ``domain``/``field`` (names, any case) limit the import to one branch. Each OpenAlex topic
    is created with its description and a rule from :func:`rule_query_from_name` (its name and
    description); domains, fields and subfields get no rule (a parent shows its descendants'
    papers). Topics are found again by name under their parent, or where a curator renamed or
    merged them (:func:`_curated_topic`), and then left as they are (curators' renames of the
    rule, description or name of a found topic are kept), so a second run creates nothing;
    slugs come from names and never take another topic's slug.

    Returns a :class:`TaxonomyImportResult` (levels ``domain``, ``field``, ``subfield``,
    ``topic``). Queues no tagging. Raises ``ValueError`` naming the known names when
    ``domain`` or ``field`` matches none.
    """
    selected = _only(_only(list(topics), "domain", domain), "field", field)
    result = TaxonomyImportResult()
    with transaction.atomic():
        finder = _ChildFinder(result)
        for item in selected:
            domain_topic = finder.ensure(
                "domain", name=item.domain, parent=None, description="OpenAlex domain."
            )
            field_topic = finder.ensure(
                "field", name=item.field, parent=domain_topic, description="OpenAlex field."
            )
            subfield_topic = finder.ensure(
                "subfield",
                name=item.subfield,
                parent=field_topic,
                description="OpenAlex subfield.",
            )
            finder.ensure(
                "topic",
                name=item.name,
                parent=subfield_topic,
                description=item.description,
                rule_query=rule_query_from_name(item.name, description=item.description),
            )
    return result


def _arxiv_tree_sync(
    result: TaxonomyImportResult, *, archives: set[str], categories: bool
) -> dict[str, int]:
    """Create or find, for the given archive codes, a root topic per arXiv group and a topic
    per archive under it (the group topic itself where the archive has the group's name), and
    with ``categories`` a topic per other category under its archive topic (short name the
    code, arXiv's description, the category as its rule).

    An archive topic's rule is every category of its archives that no category topic under it
    carries (so a paper sits in the category topic, not in both); it is set or changed on
    every run. Returns ``{archive code: archive topic pk}``.
    """
    finder = _ChildFinder(result)
    by_archive: dict[tuple[str, str], list[Category]] = defaultdict(list)
    for category in Category.objects.filter(archive__in=archives).order_by("code"):
        by_archive[(category.group_name, category.archive_name)].append(category)
    topics_of_archives: dict[str, int] = {}
    for (group_name, archive_name), members in sorted(by_archive.items()):
        group = finder.ensure(
            "group",
            name=group_name,
            parent=None,
            description=f"Papers in arXiv's {group_name} group.",
        )
        archive_codes = sorted({category.archive for category in members})
        if archive_name == group_name:
            topic = group
        else:
            topic = finder.ensure(
                "archive",
                name=archive_name,
                parent=group,
                description=(
                    f"Papers in arXiv's {archive_name} archive ({', '.join(archive_codes)})."
                ),
            )
        children = set(topic.children.values_list("name", flat=True))
        wanted = set()
        for category in members:
            if categories and category.code != category.archive and category.name not in children:
                finder.ensure(
                    "category",
                    name=category.name,
                    parent=topic,
                    short_name=category.code,
                    description=_category_description(category.code),
                    rule_categories=[category],
                )
                children.add(category.name)
            if category.name not in children or category.code == category.archive:
                wanted.add(category.pk)
        if set(topic.rule_categories.values_list("pk", flat=True)) != wanted:
            topic.rule_categories.set(wanted)
            result.rules_set += 1
        for code in archive_codes:
            topics_of_archives[code] = topic.pk
    return topics_of_archives


def _category_description(code: str) -> str:
    try:
        return get_category(code).description
    except UnknownCategory:
        return ""


def arxiv_topics_import(
    *, archives: Iterable[str] | None = None, categories: bool = True
) -> TaxonomyImportResult:
    """Import arXiv's taxonomy as topics: a root topic per group ("Physics"), a topic per
    archive under it ("High Energy Physics - Theory"; where the archive has the group's name,
    "Computer Science", the group topic stands for it), and with ``categories`` a topic per
    category under its archive ("Computation and Language", short name ``cs.CL``, arXiv's
    description) whose rule is that category. A category that is its archive (``hep-th``) or
    an archive's legacy archive-wide code (``astro-ph``) is the archive topic's rule.

    ``archives``: archive codes (``cs``, ``hep-th``) to limit the import to; ``None`` for every
    stored category. Shares its tree with :func:`demo_taxonomy_load`, in either order: topics
    are found again by name under their parent, or where a curator renamed or merged them
    (then left as curators keep them, but for the archive topics' category rules, which
    follow the categories no child topic carries).
    In one transaction; queues no tagging.

    Returns a :class:`TaxonomyImportResult` (levels ``group``, ``archive``, ``category``).
    Raises ``ValueError`` when no category is stored (run ``load_categories``) or naming an
    archive code that is not stored.
    """
    stored = set(Category.objects.values_list("archive", flat=True).distinct())
    if not stored:
        raise ValueError("No arXiv category is stored; run `manage.py load_categories` first.")
    wanted = stored if archives is None else set(archives)
    unknown = sorted(wanted - stored)
    if unknown:
        raise ValueError(
            f"Unknown arXiv archive {', '.join(map(repr, unknown))}; archives are: "
            f"{', '.join(sorted(stored))}."
        )
    result = TaxonomyImportResult()
    with transaction.atomic():
        _arxiv_tree_sync(result, archives=wanted, categories=categories)
    return result


# --- the demo taxonomy ---------------------------------------------------------------------

# Keyword rules for reference topics whose names pin their meaning down; set only where the
# topic exists and has no rule yet, so a curator's rule is never replaced.
DEMO_REFERENCE_RULES = {
    "Reinforcement Learning": '"reinforcement learning"',
    "Knowledge Distillation": '"knowledge distillation"',
    "Low-Rank Adaptation": '"low-rank adaptation" OR "low rank adaptation"',
    "Supervised Fine-Tuning": (
        '"supervised fine-tuning" OR "supervised finetuning" OR "supervised fine tuning"'
    ),
    "Reinforcement Learning with Verifiable Rewards": (
        '"verifiable reward" OR "verifiable rewards" OR RLVR'
    ),
    "GUI Agents": '"GUI agent" OR "GUI agents"',
    "Procedural Content Generation": '"procedural content generation"',
}


@dataclass
class DemoTaxonomyResult:
    """Counts of what :func:`demo_taxonomy_load` did: ``archives`` found among the stored
    papers, topics created per group and per archive, and topics whose rule was set or changed
    (archive categories, or a :data:`DEMO_REFERENCE_RULES` query)."""

    archives: int = 0
    groups_created: int = 0
    archives_created: int = 0
    rules_set: int = 0


def demo_taxonomy_load() -> DemoTaxonomyResult:
    """Build a topic per arXiv archive present among the stored papers, under a root topic per
    arXiv group, so that tagging places every stored paper on a topic page.

    Archives come from the stored papers' primary categories and cross-lists
    (``Category.archive``/``archive_name``/``group_name``). Each archive topic (named by the
    archive, "High Energy Physics - Theory") gets a rule whose categories are all the stored
    categories of that archive (but those a category topic under it carries, once
    :func:`arxiv_topics_import` made them: the two share one tree) and no query. Where an
    archive has its group's name (``cs``, "Computer Science"), the group topic carries the rule
    itself instead of a same-named child. Topics are found again by name under their parent, so
    a second run creates nothing; slugs come from names and never take a slug another topic
    has. Also sets :data:`DEMO_REFERENCE_RULES` on reference topics that have no rule.

    Returns a :class:`DemoTaxonomyResult`. Queues no tagging: run ``manage.py tag --all``.
    """
    result = DemoTaxonomyResult()
    with transaction.atomic():
        category_ids = set(
            Paper.objects.order_by().values_list("primary_category_id", flat=True).distinct()
        ) | set(
            Paper.cross_lists.through.objects.order_by()
            .values_list("category_id", flat=True)
            .distinct()
        )
        archives = set(
            Category.objects.filter(pk__in=category_ids).values_list("archive", flat=True)
        )
        tree = TaxonomyImportResult()
        _arxiv_tree_sync(tree, archives=archives, categories=False)
        result.archives = len(archives)
        result.groups_created = tree.created.get("group", 0)
        result.archives_created = tree.created.get("archive", 0)
        result.rules_set = tree.rules_set

        for name, query in DEMO_REFERENCE_RULES.items():
            topic = Topic.objects.filter(slug=slugify(name)).first()
            if topic and not topic.rule_query.strip() and not topic.rule_categories.exists():
                topic.rule_query = query
                topic.save(update_fields=["rule_query", "updated_at"])
                result.rules_set += 1
    return result
