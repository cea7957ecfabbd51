"""Curators' writes on authors: merge name variants of one person into one author, split an
author's authorships off to another, and the lookup ingestion uses so that a merged-away name
keeps crediting the survivor.

Name variants (initials, accents, "Jr.") are a hard problem: nothing here guesses. Only a
curator merges (the admin's "Merge selected authors into one") or splits. Both run in one
transaction, lock the authors they change, and leave a history row (django-simple-history,
with the curator and a reason naming what moved) on every author they change.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction

from topicsite.signals import content_changed_on_commit

from .models import Author, Authorship
from .signals import authors_merged

__all__ = [
    "AuthorMergeResult",
    "author_ids_current",
    "author_split",
    "authors_merge",
]


@dataclass(frozen=True)
class AuthorMergeResult:
    """What :func:`authors_merge` did: the ``survivor``, the ``merged`` authors (now its name
    variants) and the number of ``authorships_moved`` to the survivor."""

    survivor: Author
    merged: list[Author]
    authorships_moved: int


def _history(author: Author, *, user, reason: str) -> None:
    """Save ``author`` so that its history row names ``user`` and ``reason``."""
    author._history_user = user
    author._change_reason = reason[:100]
    author.save()


@transaction.atomic
def authors_merge(
    *, authors: Iterable[Author | int], survivor: Author | int, user
) -> AuthorMergeResult:
    """Merge ``authors`` (instances or pks; ``survivor`` among them is ignored) into
    ``survivor``: every authorship of theirs moves to the survivor (position and paper
    unchanged, so two of them on one paper stay two authorships of the survivor at their own
    positions, and the unique (paper, position) constraint holds); each merged author stays,
    with its name, as a variant (``merged_into`` = survivor), so its page address redirects
    and ingestion credits the survivor when it meets the name again; variants of the merged
    authors become the survivor's. ``papers.signals.authors_merged`` is sent inside the
    transaction (follows move). Every changed author gets a history row naming ``user``.

    Returns an :class:`AuthorMergeResult`. Raises ``ValidationError`` (nothing written) when
    no author other than the survivor is given, when the survivor or one of the authors is
    itself a merged-away variant, or when a pk names no author.
    """
    survivor_pk = survivor if isinstance(survivor, int) else survivor.pk
    source_pks = sorted({a if isinstance(a, int) else a.pk for a in authors} - {survivor_pk})
    if not source_pks:
        raise ValidationError("Choose at least one author other than the one that stays.")
    locked = Author.objects.select_for_update().in_bulk([survivor_pk, *source_pks])
    missing = [pk for pk in [survivor_pk, *source_pks] if pk not in locked]
    if missing:
        raise ValidationError(f"No author has the id {', '.join(map(str, missing))}.")
    survivor = locked[survivor_pk]
    sources = [locked[pk] for pk in source_pks]
    merged_already = [a for a in [survivor, *sources] if a.merged_into_id is not None]
    if merged_already:
        names = ", ".join(f"{a.name!r} (#{a.pk})" for a in merged_already)
        raise ValidationError(
            f"Already merged into another author: {names}. Merge the author they belong to."
        )

    moved = Authorship.objects.filter(author_id__in=source_pks).update(author_id=survivor.pk)
    for variant in Author.objects.select_for_update().filter(merged_into_id__in=source_pks):
        variant.merged_into = survivor
        _history(variant, user=user, reason=f"variant of #{survivor.pk} {survivor.name!r} (merge)")
    for source in sources:
        source.merged_into = survivor
        _history(source, user=user, reason=f"merged into #{survivor.pk} {survivor.name!r}")
    names = ", ".join(f"#{a.pk} {a.name!r}" for a in sources)
    _history(survivor, user=user, reason=f"absorbed {names}: {moved} authorships")
    authors_merged.send(sender=Author, source_ids=source_pks, target_id=survivor.pk)
    content_changed_on_commit()
    return AuthorMergeResult(survivor=survivor, merged=sources, authorships_moved=moved)


@transaction.atomic
def author_split(*, author: Author, authorship_ids: Iterable[int], name: str, user) -> Author:
    """Move the authorships ``authorship_ids`` (pks) of ``author`` to another author named
    ``name``, and return that author: a new one, or, when ``name`` is one of ``author``'s
    merged-away variants, that variant made an author of its own again (undoing a wrong
    merge). Positions and papers are unchanged. Both authors get a history row naming
    ``user``; follows of ``author`` stay with it.

    Raises ``ValidationError`` (nothing written) for an empty or over-long name, no
    authorships chosen, an authorship that is not ``author``'s, a merged-away ``author``, or
    a name that another author already has (merge them instead, or choose another name).
    """
    name = " ".join((name or "").split())
    if not name:
        raise ValidationError({"name": "Give the new author a name."})
    max_length = Author._meta.get_field("name").max_length
    if len(name) > max_length:
        raise ValidationError({"name": f"A name has at most {max_length} characters."})
    ids = sorted(set(authorship_ids))
    if not ids:
        raise ValidationError({"authorships": "Choose at least one authorship to move."})
    author = Author.objects.select_for_update().get(pk=author.pk)
    if author.merged_into_id is not None:
        raise ValidationError(
            f"{author.name!r} is merged into another author; split that author instead."
        )
    owned = set(Authorship.objects.filter(pk__in=ids, author=author).values_list("pk", flat=True))
    foreign = [pk for pk in ids if pk not in owned]
    if foreign:
        raise ValidationError(
            {"authorships": f"Not authorships of {author.name!r}: {', '.join(map(str, foreign))}."}
        )
    other = Author.objects.select_for_update().filter(name=name).first()
    if other is not None and other.pk == author.pk:
        raise ValidationError({"name": "Give the new author a name other than this author's."})
    if other is not None and other.merged_into_id != author.pk:
        raise ValidationError(
            {
                "name": (
                    f"Another author is named {name!r} (#{other.pk}): merge with it instead, "
                    "or choose another name."
                )
            }
        )
    if other is None:
        other = Author(name=name)
        _history(other, user=user, reason=f"split from #{author.pk} {author.name!r}")
    else:
        other.merged_into = None
        _history(other, user=user, reason=f"split from #{author.pk} {author.name!r} again")
    moved = Authorship.objects.filter(pk__in=ids).update(author_id=other.pk)
    _history(author, user=user, reason=f"{moved} authorships split off to #{other.pk}")
    content_changed_on_commit()
    return other


def author_ids_current(ids: Mapping[str, int]) -> dict[str, int]:
    """``ids`` (author name -> author pk, as ingestion looks them up) with every merged-away
    variant's pk replaced by its survivor's, so that a paper naming a variant credits the
    person a curator merged it into. One query (none for no ids)."""
    if not ids:
        return {}
    survivors = dict(
        Author.objects.filter(pk__in=set(ids.values()), merged_into__isnull=False).values_list(
            "pk", "merged_into_id"
        )
    )
    return {name: survivors.get(pk, pk) for name, pk in ids.items()}
