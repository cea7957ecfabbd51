"""Writes for topics and assignments: the taxonomy, tagging by rules, curator decisions, the
reference-page import and the demo taxonomy. Views, admin, commands and tasks all call these.

Two guarantees hold for every function here:

- ``Topic.path`` (materialised path of primary keys, ``"3/17/"``) stays right for a topic and
  all its descendants; only :func:`topic_create` and :func:`topic_move` write it.
- A **curator decision** (an assignment with ``decided_by`` set) is final: nothing here but
  :func:`assignment_decide` and :func:`assignment_add` (a person acting) ever changes or
  deletes one.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial

from django.db import transaction
from django.db.models import CharField, Prefetch, Value
from django.db.models.functions import Concat, Substr
from django.utils import timezone
from django.utils.text import slugify

from papers.models import Affiliation, Author, Authorship, Category, Paper, PaperAffiliation
from papers.taxonomy import UnknownCategory, canonical_category

from .models import Assignment, Topic
from .rules import Rule, RuleSyntaxError, compile_rule, fold
from .tasks import tag_papers

__all__ = [
    "DEMO_REFERENCE_RULES",
    "REFERENCE_IMPORT_PREFIX",
    "TAG_BATCH_SIZE",
    "TAG_CHUNK_SIZE",
    "DemoTaxonomyResult",
    "ImportResult",
    "ReferencePageError",
    "TagQueueResult",
    "assignment_add",
    "assignment_decide",
    "demo_taxonomy_load",
    "papers_tag",
    "papers_tag_enqueue",
    "reference_import_key",
    "reference_page_import",
    "topic_create",
    "topic_move",
]

logger = logging.getLogger(__name__)

TAG_BATCH_SIZE = 1000
TAG_CHUNK_SIZE = 1000
REFERENCE_IMPORT_PREFIX = "reference:"
REFERENCE_SOURCE = "reference"
# Title and abstract are matched as one text; this separator is neither whitespace nor a word
# character, so a phrase cannot run from the end of the title into the abstract.
_TITLE_ABSTRACT_SEPARATOR = "\n\x00\n"


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
            old_length = len(current.path)
            Topic.objects.filter(path__startswith=current.path).update(
                path=Concat(
                    Value(new_path), Substr("path", old_length + 1), output_field=CharField()
                )
            )
    topic.refresh_from_db(fields=["parent", "path", "updated_at"])
    return topic


# --- assignments: curators -----------------------------------------------------------------


def _topic_caches_invalidate(topic_ids: Iterable[int]) -> None:
    """Drop what is cached for these topics (momentum figures, topic pages).

    Nothing is cached yet, so there is nothing to drop: this is the one place every
    assignment-writing service reaches after its transaction commits, for the cache layer to
    fill in.
    """


def _after_commit_invalidate(topic_ids: Iterable[int]) -> None:
    topic_ids = set(topic_ids)
    if topic_ids:
        transaction.on_commit(partial(_topic_caches_invalidate, topic_ids))


def assignment_decide(*, assignment: Assignment, state: str, user) -> Assignment:
    """Record a curator decision: set ``state`` (``"accepted"``/``"rejected"``) and mark the
    assignment decided by ``user`` now. From then on re-tagging leaves it alone.

    The source (rule, classifier, import ...) is kept, so it stays visible where the assignment
    came from. Returns the assignment. Raises ``ValueError`` for an unknown state.
    """
    if state not in Assignment.State.values:
        raise ValueError(
            f"Unknown assignment state {state!r}; use one of {Assignment.State.values}."
        )
    with transaction.atomic():
        assignment.state = state
        assignment.decided_by = user
        assignment.decided_at = timezone.now()
        assignment.save(update_fields=["state", "decided_by", "decided_at", "updated_at"])
        _after_commit_invalidate([assignment.topic_id])
    return assignment


def assignment_add(*, paper: Paper, topic: Topic, user) -> Assignment:
    """Place ``paper`` in ``topic`` as a curator: source curator, accepted, decided by ``user``.

    An existing assignment for the pair (machine-made or decided) becomes this curator
    assignment. Returns it.
    """
    with transaction.atomic():
        assignment, _ = Assignment.objects.update_or_create(
            paper=paper,
            topic=topic,
            defaults={
                "source": Assignment.Source.CURATOR,
                "state": Assignment.State.ACCEPTED,
                "score": None,
                "decided_by": user,
                "decided_at": timezone.now(),
            },
        )
        _after_commit_invalidate([topic.pk])
    return assignment


# --- assignments: tagging by rules ---------------------------------------------------------


@dataclass(frozen=True)
class _TopicRule:
    """A topic's rule compiled for one tagging run: the query and the category pks it needs."""

    topic_id: int
    rule: Rule
    category_ids: frozenset[int]


def _topic_rules() -> list[_TopicRule]:
    """Every active topic that has a rule, compiled once. A stored query that no longer parses
    (edited outside the services) is logged and its topic skipped, so one bad rule does not
    stop tagging for every other topic."""
    topics = Topic.objects.active().prefetch_related(
        Prefetch("rule_categories", queryset=Category.objects.only("pk"))
    )
    compiled = []
    for topic in topics:
        category_ids = frozenset(category.pk for category in topic.rule_categories.all())
        if not topic.rule_query.strip() and not category_ids:
            continue
        try:
            rule = compile_rule(topic.rule_query)
        except RuleSyntaxError as error:
            logger.error("Topic %s (%s): rule not applied: %s", topic.pk, topic.slug, error)
            continue
        compiled.append(_TopicRule(topic.pk, rule, category_ids))
    return compiled


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
    """Apply every active topic's rule to the papers ``paper_ids`` (pks; unknown ones ignored).

    A paper matches a topic when the rule query matches its title and abstract and, if the
    topic lists rule categories, its primary category or a cross-list is one of them. Topics
    without a rule (blank query, no categories) are skipped. Matches are written as
    assignments with source ``rule``, state ``accepted`` and score 1.0; a machine-made
    (``decided_by`` null) ``rule`` or ``classifier`` assignment to a matched topic is turned
    into that. A machine-made ``rule`` assignment that no active rule supports any more is
    removed. Curator decisions and ``import`` assignments are never changed or deleted.

    Work goes in batches of :data:`TAG_BATCH_SIZE` papers, one transaction each: three reads
    (papers, cross-lists, existing assignments) and at most three writes per batch. Running it
    twice leaves the same database (the second run writes nothing).

    Returns the number of assignments created, changed or removed (a creation that loses a
    race to a concurrent curator addition is still counted; the curator's row wins).
    """
    topic_rules = _topic_rules()
    written = 0
    for batch in _chunks(sorted(set(paper_ids)), TAG_BATCH_SIZE):
        written += _tag_batch(batch, topic_rules)
    return written


def _tag_batch(paper_ids: list[int], topic_rules: list[_TopicRule]) -> int:
    with transaction.atomic():
        cross_lists: dict[int, set[int]] = defaultdict(set)
        for paper_id, category_id in Paper.cross_lists.through.objects.filter(
            paper_id__in=paper_ids
        ).values_list("paper_id", "category_id"):
            cross_lists[paper_id].add(category_id)

        wanted: set[tuple[int, int]] = set()
        papers = Paper.objects.filter(pk__in=paper_ids).values_list(
            "pk", "title", "abstract", "primary_category_id"
        )
        for paper_id, title, abstract, primary_category_id in papers:
            category_ids = {primary_category_id, *cross_lists[paper_id]}
            folded = None  # folded on first need: category-only rules never need the text
            for topic_rule in topic_rules:
                if topic_rule.category_ids and topic_rule.category_ids.isdisjoint(category_ids):
                    continue
                if not topic_rule.rule.is_empty:
                    if folded is None:
                        folded = fold(f"{title}{_TITLE_ABSTRACT_SEPARATOR}{abstract}")
                    if not topic_rule.rule.matches_folded(folded):
                        continue
                wanted.add((paper_id, topic_rule.topic_id))

        existing = {
            (row["paper_id"], row["topic_id"]): row
            for row in Assignment.objects.filter(paper_id__in=paper_ids).values(
                "pk", "paper_id", "topic_id", "source", "state", "score", "decided_by_id"
            )
        }
        machine = (Assignment.Source.RULE, Assignment.Source.CLASSIFIER)
        settled = (Assignment.Source.RULE, Assignment.State.ACCEPTED, 1.0)
        to_create = [key for key in wanted if key not in existing]
        to_update = [
            row
            for key, row in existing.items()
            if key in wanted
            and row["decided_by_id"] is None
            and row["source"] in machine
            and (row["source"], row["state"], row["score"]) != settled
        ]
        to_delete = [
            row
            for key, row in existing.items()
            if key not in wanted
            and row["decided_by_id"] is None
            and row["source"] == Assignment.Source.RULE
        ]

        # ignore_conflicts: an assignment a curator added since the read above wins.
        Assignment.objects.bulk_create(
            [
                Assignment(
                    paper_id=paper_id,
                    topic_id=topic_id,
                    source=Assignment.Source.RULE,
                    state=Assignment.State.ACCEPTED,
                    score=1.0,
                )
                for paper_id, topic_id in sorted(to_create)
            ],
            ignore_conflicts=True,
            batch_size=TAG_BATCH_SIZE,
        )
        # The same guards again in the WHERE clause: a curator decision made since the read
        # above must not be overwritten or deleted.
        updated = Assignment.objects.filter(
            pk__in=[row["pk"] for row in to_update], decided_by__isnull=True, source__in=machine
        ).update(
            source=Assignment.Source.RULE,
            state=Assignment.State.ACCEPTED,
            score=1.0,
            updated_at=timezone.now(),
        )
        _, deleted = Assignment.objects.filter(
            pk__in=[row["pk"] for row in to_delete],
            decided_by__isnull=True,
            source=Assignment.Source.RULE,
        ).delete()

        _after_commit_invalidate(
            {topic_id for _, topic_id in to_create}
            | {row["topic_id"] for row in to_update}
            | {row["topic_id"] for row in to_delete}
        )
    return len(to_create) + updated + deleted.get(Assignment._meta.label, 0)


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


def reference_import_key(title: str) -> str:
    """``Paper.import_key`` of a reference-page paper: ``"reference:"`` and the first 24 hex
    digits of the SHA-256 of the title (whitespace collapsed, case folded), so the same paper
    gets the same key on every import."""
    normal = " ".join(title.split()).casefold()
    return REFERENCE_IMPORT_PREFIX + hashlib.sha256(normal.encode("utf-8")).hexdigest()[:24]


def _require(mapping: object, key: str, kind: type | tuple[type, ...], where: str):
    if not isinstance(mapping, dict):
        raise ReferencePageError(f"{where}: expected an object")
    if key not in mapping:
        raise ReferencePageError(f"{where}: missing field {key!r}")
    value = mapping[key]
    # bool is an int in Python; a count of True is still a mistake in the file.
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        expected = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise ReferencePageError(f"{where}.{key}: expected {expected}, got {value!r}")
    return value


def _require_names(mapping: dict, key: str, where: str) -> list[str]:
    values = _require(mapping, key, list, where)
    for position, value in enumerate(values):
        if not isinstance(value, str) or not value.strip():
            raise ReferencePageError(f"{where}.{key}[{position}]: expected a name, got {value!r}")
    return [value.strip() for value in values]


def _require_count(mapping: dict, key: str, where: str) -> int:
    value = _require(mapping, key, int, where)
    if value < 0:
        raise ReferencePageError(f"{where}.{key}: expected a count, got {value!r}")
    return value


def _reference_page_parse(data: object) -> _ReferencePage:
    """Check the whole document before anything is written; raise ReferencePageError."""
    topic = _require(data, "topic", dict, "document")
    topic_name = _require(topic, "name", str, "topic").strip()
    parent = _require(topic, "parent", dict, "topic")
    parent_name = _require(parent, "name", str, "topic.parent").strip()
    parent_short_name = _require(parent, "abbreviation", str, "topic.parent").strip()
    vocabulary = _require_names(data, "topic_vocabulary", "document")
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
        papers.append(
            _ReferencePaper(
                index=index,
                published=published,
                primary_category=_require(raw, "primary_category", str, where).strip(),
                title=title,
                abstract=_require(raw, "abstract", str, where).strip(),
                authors_shown=_require_names(raw, "authors_shown", where),
                authors_more=_require_count(raw, "authors_more", where),
                affiliations_shown=_require_names(raw, "affiliations_shown", where),
                affiliations_more=_require_count(raw, "affiliations_more", where),
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
      ``slugify(name)``) unless a topic with that slug exists, which is then left where it is;
    - each paper as one ``Paper`` keyed by :func:`reference_import_key` (it has no arXiv
      identifier): ``submitted`` = ``published``, primary category, title, abstract, the shown
      authors (``Authorship``) and affiliations (``PaperAffiliation``) in order,
      ``author_count``/``affiliation_count`` = shown + more;
    - each paper's topics as accepted ``import`` assignments (score ``None``); an ``import``
      assignment the data no longer lists is removed. Curator decisions are left alone.

    Importing the same data again writes nothing. Returns an :class:`ImportResult`.
    Raises :class:`ReferencePageError` naming the paper index and field for malformed data, or
    the category codes missing from the database (``load_categories`` not run); nothing is
    written then.
    """
    page = _reference_page_parse(data)
    result = ImportResult()
    with transaction.atomic():
        categories = _reference_categories(page)
        parent = _topic_ensure(
            result,
            name=page.parent_name,
            slug=slugify(page.parent_short_name or page.parent_name),
            parent=None,
            short_name=page.parent_short_name,
            enforce=True,
        )
        topics = {
            page.topic_name: _topic_ensure(
                result,
                name=page.topic_name,
                slug=slugify(page.topic_name),
                parent=parent,
                enforce=True,
            )
        }
        for name in page.vocabulary:
            if name not in topics:
                topics[name] = _topic_ensure(
                    result, name=name, slug=slugify(name), parent=None, enforce=False
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
            "pk", "paper_id", "topic_id", "source", "state", "score", "decided_by_id"
        )
    }
    imported = (Assignment.Source.IMPORT, Assignment.State.ACCEPTED, None)
    to_create = [key for key in wanted if key not in existing]
    to_update = [
        a
        for key, a in existing.items()
        if key in wanted and a.decided_by_id is None and (a.source, a.state, a.score) != imported
    ]
    to_delete = [
        a
        for key, a in existing.items()
        if key not in wanted and a.decided_by_id is None and a.source == Assignment.Source.IMPORT
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
        pk__in=[a.pk for a in to_update], decided_by__isnull=True
    ).update(
        source=Assignment.Source.IMPORT,
        state=Assignment.State.ACCEPTED,
        score=None,
        updated_at=timezone.now(),
    )
    result.assignments_removed = (
        Assignment.objects.filter(pk__in=[a.pk for a in to_delete], decided_by__isnull=True)
        .delete()[1]
        .get(Assignment._meta.label, 0)
    )
    _after_commit_invalidate(
        {topic_id for _, topic_id in to_create} | {a.topic_id for a in to_update + to_delete}
    )


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
    categories of that archive and no query. Where an archive has its group's name (``cs``,
    "Computer Science"), the group topic carries the rule itself instead of a same-named child.
    Topics are found again by name under their parent, so a second run creates nothing; slugs
    come from names and never take a slug another topic has. Also sets
    :data:`DEMO_REFERENCE_RULES` on reference topics that have no rule.

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
        archives_by_topic: dict[tuple[str, str], set[str]] = defaultdict(set)
        for archive, archive_name, group_name in (
            Category.objects.filter(pk__in=category_ids)
            .values_list("archive", "archive_name", "group_name")
            .distinct()
        ):
            archives_by_topic[(group_name, archive_name)].add(archive)
        result.archives = sum(len(archives) for archives in archives_by_topic.values())

        groups: dict[str, Topic] = {}
        for (group_name, archive_name), archives in sorted(archives_by_topic.items()):
            if group_name not in groups:
                group = Topic.objects.filter(parent__isnull=True, name=group_name).first()
                if group is None:
                    group = topic_create(
                        name=group_name, description=f"Papers in arXiv's {group_name} group."
                    )
                    result.groups_created += 1
                groups[group_name] = group
            group = groups[group_name]
            if archive_name == group_name:
                topic = group
            else:
                topic = Topic.objects.filter(parent=group, name=archive_name).first()
                if topic is None:
                    topic = topic_create(
                        name=archive_name,
                        parent=group,
                        description=(
                            f"Papers in arXiv's {archive_name} archive "
                            f"({', '.join(sorted(archives))})."
                        ),
                    )
                    result.archives_created += 1
            wanted = set(Category.objects.filter(archive__in=archives).values_list("pk", flat=True))
            if set(topic.rule_categories.values_list("pk", flat=True)) != wanted:
                topic.rule_categories.set(wanted)
                result.rules_set += 1

        for name, query in DEMO_REFERENCE_RULES.items():
            topic = Topic.objects.filter(slug=slugify(name)).first()
            if topic and not topic.rule_query.strip() and not topic.rule_categories.exists():
                topic.rule_query = query
                topic.save(update_fields=["rule_query", "updated_at"])
                result.rules_set += 1
    return result
