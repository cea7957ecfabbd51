"""Topic writes: create, move, rename and merge topics, validate a topic's address (slug) and
record a topic's history. Views, admin, commands, importers and tasks all call these.

``Topic.path`` (materialised path of primary keys, ``"3/17/"``) stays right for a topic and all
its descendants; only :func:`topic_create` and :func:`topic_move` write it. :func:`topic_move`
writes with UPDATE, so callers record the move with :func:`topic_history_record`. Rename and
merge are one transaction each and leave a history row (who, when, why) for each topic and
assignment they change; a merge keeps curator decisions (see :mod:`topics.assignments`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import CharField, Value
from django.db.models.deletion import Collector
from django.db.models.functions import Concat, Substr
from django.utils import timezone
from django.utils.text import slugify

from papers.models import Category

from .caches import topic_caches_invalidate_on_commit
from .history import HISTORY_REASON_LENGTH, history_bulk_record
from .models import Assignment, Topic, TopicRedirect
from .signals import topics_merged
from .tagging.rules import compile_rule

__all__ = [
    "MergeResult",
    "topic_create",
    "topic_history_record",
    "topic_merge",
    "topic_move",
    "topic_rename",
    "topic_slug_validate",
]

logger = logging.getLogger(__name__)

# Assignments read and written per statement by bulk operations.
_CHUNK = 1000
# Which of two machine-made assignments for the same paper a merge keeps: the higher state.
_STATE_RANK = {
    Assignment.State.ACCEPTED: 2,
    Assignment.State.PENDING: 1,
    Assignment.State.REJECTED: 0,
}


# --- create and move -----------------------------------------------------------------------


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
    keywords: str = "",
    rule_query: str = "",
    rule_categories: Iterable[Category] = (),
    active: bool = True,
) -> Topic:
    """Create a topic under ``parent`` (``None``: a root) with its materialised ``path`` set.

    ``slug`` defaults to ``slugify(name)``, made unique with a numeric suffix; an explicit slug
    is used as given. ``rule_categories`` are ``Category`` rows (or their pks). ``keywords``:
    comma-separated terms, with the name and description what the topic's meaning is
    embedded from (``topics.tagging.semantic``).
    Raises ``ValueError`` for a blank name, :class:`~topics.tagging.rules.RuleSyntaxError` (a
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
            keywords=keywords,
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


# --- history -------------------------------------------------------------------------------


def _topic_save(topic: Topic, *, fields: Iterable[str], user, reason: str) -> None:
    """Save ``fields`` of ``topic`` (and ``updated_at``) with ``user`` and ``reason`` on the
    history row django-simple-history writes."""
    topic._history_user = user
    topic._change_reason = reason[:HISTORY_REASON_LENGTH]
    topic.save(update_fields=[*fields, "updated_at"])


def topic_history_record(*, topic: Topic, user, reason: str = "") -> Topic:
    """Add a history row for ``topic`` as it is stored now, by ``user`` (a user or ``None``),
    with ``reason`` (at most 100 characters are kept).

    For changes written with UPDATE, which django-simple-history cannot see:
    :func:`topic_move` rewrites the parent and paths that way. Returns the
    topic, refreshed.
    """
    with transaction.atomic():
        topic.refresh_from_db()
        _topic_save(topic, fields=[], user=user, reason=reason)
    return topic


# --- rename --------------------------------------------------------------------------------


def topic_slug_validate(*, slug: str, topic: Topic | None = None) -> str:
    """Check that ``slug`` can be the address of ``topic`` (``None``: a new topic).

    A slug must be a valid slug of at most 200 characters, not used by another topic, and not
    the old address of another topic (its :class:`~topics.models.TopicRedirect`), which would
    stop that address from redirecting. Returns the slug; raises ``ValidationError`` on
    ``slug`` with a message naming the slug and what holds it.
    """
    slug_field = Topic._meta.get_field("slug")
    try:
        slug_field.clean(slug, topic)
    except ValidationError as error:
        raise ValidationError({"slug": error.messages}) from None
    others = Topic.objects.all() if topic is None else Topic.objects.exclude(pk=topic.pk)
    holder = others.filter(slug=slug).first()
    if holder is not None:
        raise ValidationError(
            {"slug": f"The slug {slug!r} is already the address of {holder.display_name!r}."}
        )
    redirect = TopicRedirect.objects.filter(old_slug=slug).select_related("topic").first()
    if redirect is not None and (topic is None or redirect.topic_id != topic.pk):
        raise ValidationError(
            {
                "slug": f"The slug {slug!r} is an old address of {redirect.topic.display_name!r} "
                "and redirects there; choose another."
            }
        )
    return slug


def _free_slug(name: str, topic: Topic) -> str:
    """``slugify(name)``, with ``-2``, ``-3`` ... while another topic or redirect holds it."""
    base = slugify(name)[:190] or "topic"
    slug, number = base, 1
    while True:
        try:
            return topic_slug_validate(slug=slug, topic=topic)
        except ValidationError:
            number += 1
            slug = f"{base}-{number}"


def topic_rename(
    *,
    topic: Topic,
    name: str,
    user,
    slug: str | None = None,
    short_name: str | None = None,
) -> Topic:
    """Give ``topic`` a new ``name`` (and ``short_name``; ``None`` keeps it) and address.

    ``slug`` ``None`` derives one from the name (kept when it already fits, else made unique
    with ``-2``, ``-3`` ...). When the slug changes, the old one is kept as a
    :class:`~topics.models.TopicRedirect`, so ``/topics/<old>/`` answers 301 to the new page;
    a redirect this topic had under the new slug is dropped (the slug is live again).
    ``user`` is recorded on the history row. Returns the topic.

    Raises ``ValidationError`` naming the field: a blank name, a name or short name too long,
    a slug that is malformed, another topic's, or another topic's old address.
    """
    name = name.strip()
    if not name:
        raise ValidationError({"name": "A topic needs a name."})
    short_name = topic.short_name if short_name is None else short_name.strip()
    for field_name, value in (("name", name), ("short_name", short_name)):
        try:
            Topic._meta.get_field(field_name).clean(value, topic)
        except ValidationError as error:
            raise ValidationError({field_name: error.messages}) from None
    with transaction.atomic():
        current = Topic.objects.select_for_update().get(pk=topic.pk)
        if slug is None:
            slug = current.slug if slugify(name) == current.slug else _free_slug(name, current)
        topic_slug_validate(slug=slug, topic=current)
        old_slug = current.slug
        if (name, short_name, slug) == (current.name, current.short_name, old_slug):
            return current
        if slug != old_slug:
            TopicRedirect.objects.filter(old_slug=slug, topic=current).delete()
            TopicRedirect.objects.update_or_create(old_slug=old_slug, defaults={"topic": current})
        current.name, current.short_name, current.slug = name, short_name, slug
        reason = f"renamed from {old_slug!r}" if slug != old_slug else "renamed"
        _topic_save(current, fields=["name", "short_name", "slug"], user=user, reason=reason)
        topic_caches_invalidate_on_commit([current.pk])
    topic.refresh_from_db()
    return topic


# --- merge ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class MergeResult:
    """What :func:`topic_merge` did.

    ``assignments_moved``: the source's assignments now in the target; ``assignments_dropped``:
    the weaker of two assignments of one paper (one in each topic), removed; ``children_moved``:
    the source's child topics now under the target; ``rule``: what became of the rules —
    ``"kept"`` (the target's rule stands), ``"taken"`` (the target had none and took the
    source's), ``"combined"`` (same categories: the queries joined with OR) or ``"differs"``
    (different categories: the target's rule stands and may not match every moved paper).
    """

    source: Topic
    target: Topic
    assignments_moved: int
    assignments_dropped: int
    children_moved: int
    rule: str


def _source_wins(source_row: Assignment, target_row: Assignment) -> bool:
    """Which assignment of one paper a merge keeps: a curator decision over a machine-made
    one; of two decisions, accepted over rejected (the merged topic covers both), then the
    newer; of two machine-made ones, the higher state, an import (re-tagging keeps it) over a
    rule or classifier, then the higher score. A tie keeps the target's."""

    def key(row: Assignment):
        # A decision whose curator account was deleted keeps its time (see topics.assignments).
        if row.decided_by_id is not None or row.decided_at is not None:
            decided_at = row.decided_at.timestamp() if row.decided_at else 0.0
            return (1, _STATE_RANK[row.state], decided_at, 0.0)
        imported = row.source == Assignment.Source.IMPORT
        return (0, _STATE_RANK[row.state], float(imported), row.score or 0.0)

    return key(source_row) > key(target_row)


def _rules_merge(*, source: Topic, target: Topic, user) -> str:
    """Make the target's rule cover the source's papers where one rule can: see MergeResult."""
    source_categories = set(source.rule_categories.values_list("pk", flat=True))
    target_categories = set(target.rule_categories.values_list("pk", flat=True))
    source_query, target_query = source.rule_query.strip(), target.rule_query.strip()
    if not source_query and not source_categories:
        return "kept"
    reason = f"rule from merged {source.slug!r}"
    if not target_query and not target_categories:
        target.rule_query = source.rule_query
        _topic_save(target, fields=["rule_query"], user=user, reason=reason)
        target.rule_categories.set(source_categories)
        return "taken"
    if source_categories != target_categories:
        return "differs"
    # A blank query matches every paper in the categories, so the union is blank too.
    combined = f"({target_query}) OR ({source_query})" if source_query and target_query else ""
    compile_rule(combined)  # two rules that parse, each in parentheses, parse
    if combined == target.rule_query:
        return "kept"
    target.rule_query = combined
    _topic_save(target, fields=["rule_query"], user=user, reason=reason)
    return "combined"


def _send_topics_merged(source_id: int, target_id: int) -> None:
    for receiver, response in topics_merged.send_robust(
        sender=Topic, source_id=source_id, target_id=target_id
    ):
        if isinstance(response, Exception):
            logger.error(
                "topics_merged receiver %r failed for %s -> %s: %r",
                receiver,
                source_id,
                target_id,
                response,
                exc_info=response,
            )


def topic_merge(*, source: Topic, target: Topic, user) -> MergeResult:
    """Merge ``source`` into ``target``: ``target`` absorbs the source's assignments, child
    topics, old addresses and (where one rule can say it) its rule; ``source`` stays, inactive,
    as the record of what was merged, and its URL answers 301 to the target's.

    Where both topics have an assignment for the same paper, one is kept (see
    :func:`_source_wins`: a curator decision always survives a machine-made one) and the other
    deleted. Every moved or deleted assignment gets a history row naming ``user``. After the
    transaction commits, ``topics.signals.topics_merged`` is sent with ``source_id`` and
    ``target_id`` (``follows`` moves follows then); a receiver's error is logged, not raised.

    Raises ``ValueError`` naming both topics when they are the same, when the target is inside
    the source's subtree (its children would have to move under themselves), or when either
    is inactive. Nothing is written then.
    """
    if source.pk == target.pk:
        raise ValueError(f"Cannot merge {source.name!r} into itself.")
    with transaction.atomic():
        locked = Topic.objects.select_for_update().in_bulk([source.pk, target.pk], field_name="pk")
        source, target = locked[source.pk], locked[target.pk]
        for topic in (source, target):
            if not topic.active:
                raise ValueError(
                    f"Cannot merge {source.name!r} into {target.name!r}: {topic.name!r} is "
                    "inactive (already merged away or switched off)."
                )
        if target.path.startswith(source.path):
            raise ValueError(
                f"Cannot merge {source.name!r} into {target.name!r}: {target.name!r} is inside "
                f"{source.name!r}. Move it out first, or merge the other way."
            )
        reason = f"merged {source.slug!r} into {target.slug!r}"

        # Papers in both topics: keep one assignment each.
        target_rows = {
            row.paper_id: row
            for row in Assignment.objects.select_for_update().filter(
                topic=target,
                paper_id__in=Assignment.objects.filter(topic=source).values("paper_id"),
            )
        }
        dropped = []
        for row in Assignment.objects.select_for_update().filter(
            topic=source,
            paper_id__in=Assignment.objects.filter(topic=target).values("paper_id"),
        ):
            other = target_rows.get(row.paper_id)
            if other is not None:
                dropped.append(other if _source_wins(row, other) else row)
        for row in dropped:
            row._history_user, row._change_reason = user, reason
        # A collector over these very instances: django-simple-history's deletion rows then
        # carry the user and reason set on them (a queryset delete would load fresh copies).
        collector = Collector(using=Assignment.objects.db)
        collector.collect(dropped)
        collector.delete()

        # Every other assignment of the source moves, a chunk at a time (moved rows leave the
        # filter, so the loop ends).
        moved = 0
        while chunk := list(
            Assignment.objects.select_for_update().filter(topic=source).order_by("pk")[:_CHUNK]
        ):
            now = timezone.now()
            Assignment.objects.filter(pk__in=[row.pk for row in chunk]).update(
                topic=target, updated_at=now
            )
            for row in chunk:
                row.topic_id, row.updated_at = target.pk, now
            history_bulk_record(chunk, history_type="~", user=user, reason=reason)
            moved += len(chunk)

        children = list(source.children.order_by("pk"))
        for child in children:
            topic_move(topic=child, parent=target)
            topic_history_record(topic=child, user=user, reason=reason)

        TopicRedirect.objects.filter(topic=source).update(topic=target)
        TopicRedirect.objects.update_or_create(old_slug=source.slug, defaults={"topic": target})
        rule = _rules_merge(source=source, target=target, user=user)
        source.active = False
        _topic_save(source, fields=["active"], user=user, reason=reason)

        topic_caches_invalidate_on_commit([source.pk, target.pk])
        transaction.on_commit(partial(_send_topics_merged, source.pk, target.pk))
    return MergeResult(
        source=source,
        target=target,
        assignments_moved=moved,
        assignments_dropped=len(dropped),
        children_moved=len(children),
        rule=rule,
    )
