"""The reference-page import: the reference topic page's data (``topics/data/*.json``) as
topics, papers (keyed by title, they have no arXiv identifier) and ``import`` assignments,
idempotent and one import at a time."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.text import slugify

from papers.author_services import author_ids_current
from papers.models import Affiliation, Author, Authorship, Category, Paper, PaperAffiliation
from papers.taxonomy import UnknownCategory, canonical_category

from ..caches import topic_caches_invalidate_on_commit
from ..models import Assignment, Topic, TopicRedirect
from ..services import topic_create, topic_move

__all__ = [
    "REFERENCE_IMPORT_PREFIX",
    "ImportResult",
    "ReferencePageError",
    "reference_import_key",
    "reference_page_import",
]

REFERENCE_IMPORT_PREFIX = "reference:"
REFERENCE_SOURCE = "reference"


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
      ``author_count``/``affiliation_count`` = shown + more; papers are created from the last
      listed to the first, so a topic's newest-first order (submitted, then id, descending)
      lists same-day papers as the page did;
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

        author_ids = author_ids_current(
            _names_ensure(Author, (n for p in page.papers for n in p.authors_shown))
        )
        affiliation_ids = _names_ensure(
            Affiliation, (n for p in page.papers for n in p.affiliations_shown)
        )
        keys = {reference_import_key(p.title): p for p in page.papers}
        stored = {p.import_key: p for p in Paper.objects.filter(import_key__in=keys)}
        wanted_assignments: set[tuple[int, int]] = set()
        # Pages list papers newest first, and same-day papers by id descending: created
        # from the bottom of the page up, same-day papers keep the page's order.
        for key, item in reversed(keys.items()):
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
