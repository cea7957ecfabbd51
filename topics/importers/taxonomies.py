"""Taxonomy imports: OpenAlex's topic tree (domain > field > subfield > topic) from its CSV, and
arXiv's (group > archive > category) from the stored categories, as topics. Topics are found
again by name under their parent, or where a curator renamed or merged them, so a second run
creates nothing and curators' changes stand."""

from __future__ import annotations

import csv
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from django.db import transaction
from django.utils.text import slugify

from papers.models import Category
from papers.taxonomy import UnknownCategory, get_category

from ..models import Topic, TopicRedirect
from ..services import topic_create
from .names import rule_query_from_name

__all__ = [
    "OPENALEX_COLUMNS",
    "OpenAlexTopic",
    "TaxonomyFileError",
    "TaxonomyImportResult",
    "arxiv_topics_import",
    "arxiv_tree_sync",
    "openalex_topics_import",
    "openalex_topics_parse",
]


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

    An import's topic got the slug ``slugify(name)`` or that with a ``-N`` suffix (as
    :func:`topics.services.topic_create` makes them). A topic still under ``parent`` with such a
    slug whose history shows it once had ``name`` is taken first (a rename that kept the slug; a
    topic that merely happens to hold the slug is not it); then a redirect from such a slug to a
    topic now under ``parent``; then the redirect from exactly ``slugify(name)`` wherever its topic
    now lives (a merge target may sit elsewhere).
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


def arxiv_tree_sync(
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
    stored category. Shares its tree with :func:`topics.importers.demo.demo_taxonomy_load`, in
    either order: topics are found again by name under their parent, or where a curator renamed or
    merged them (then left as curators keep them, but for the archive topics' category rules, which
    follow the categories no child topic carries). In one transaction; queues no tagging.

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
        arxiv_tree_sync(result, archives=wanted, categories=categories)
    return result
