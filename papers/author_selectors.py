"""Reads for an author's page that need nothing but papers: the author's papers (those that
count: neither withdrawn nor deleted), co-authors and affiliations with counts, and papers per
submitted day. No side effects; each function runs one query whatever the number of papers.
(The topics of an author's papers are read in ``topics.authors``: papers knows no topics.)
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import Case, Count, IntegerField, QuerySet, Value, When

from .models import Author, Authorship, Paper

__all__ = [
    "AuthorCount",
    "author_affiliations",
    "author_coauthors",
    "author_paper_count",
    "author_paper_ids",
    "author_papers",
    "author_papers_per_day",
    "authors_matching",
    "authors_paper_counts",
]

AuthorshipAffiliation = Authorship.affiliations.through


@dataclass(frozen=True)
class AuthorCount:
    """A name with how many of an author's papers it is on: a co-author (``pk`` and ``url``
    of their page set) or an affiliation (``pk`` None, ``url`` empty)."""

    name: str
    papers: int
    pk: int | None = None
    url: str = ""


def author_papers(*, author: Author) -> QuerySet[Paper]:
    """The distinct papers ``author`` is credited on that count (neither withdrawn nor
    deleted), newest first (submitted descending, then id descending). Chainable; one query
    when evaluated."""
    credited = Authorship.objects.filter(author=author).values("paper_id")
    return Paper.objects.live().filter(pk__in=credited).newest_first()


def author_paper_count(*, author: Author) -> int:
    """How many papers :func:`author_papers` holds. One query."""
    return author_papers(author=author).count()


def author_paper_ids(*, author: Author, limit: int, offset: int = 0) -> list[int]:
    """pks of ``limit`` of :func:`author_papers` from position ``offset`` (0-based). One
    query."""
    return list(author_papers(author=author).values_list("pk", flat=True)[offset : offset + limit])


def author_coauthors(*, author: Author, limit: int) -> list[AuthorCount]:
    """The ``limit`` authors who share most papers (of :func:`author_papers`) with
    ``author``, most first, then by name; ``papers`` counts the shared papers. One query."""
    rows = (
        Authorship.objects.filter(paper_id__in=author_papers(author=author).values("pk"))
        .exclude(author=author)
        .values("author_id", "author__name")
        .annotate(papers=Count("paper_id", distinct=True))
        .order_by("-papers", "author__name", "author_id")[:limit]
    )
    coauthors = []
    for row in rows:
        shown = Author(pk=row["author_id"], name=row["author__name"])
        coauthors.append(
            AuthorCount(
                name=shown.name, papers=row["papers"], pk=shown.pk, url=shown.get_absolute_url()
            )
        )
    return coauthors


def author_affiliations(*, author: Author, limit: int) -> list[AuthorCount]:
    """The ``limit`` affiliations given for ``author`` on their papers (of
    :func:`author_papers`), on most papers first, then by name. One query. Papers that give
    affiliations per paper only (not per author) add nothing here."""
    rows = (
        AuthorshipAffiliation.objects.filter(
            authorship__author=author,
            authorship__paper_id__in=author_papers(author=author).values("pk"),
        )
        .values("affiliation__name")
        .annotate(papers=Count("authorship__paper_id", distinct=True))
        .order_by("-papers", "affiliation__name")[:limit]
    )
    return [AuthorCount(name=row["affiliation__name"], papers=row["papers"]) for row in rows]


def author_papers_per_day(
    *, author: Author, since: dt.date, until: dt.date
) -> list[tuple[dt.date, int]]:
    """``(submitted date, papers)`` for each day in ``[since, until]`` on which ``author``
    has papers that count (distinct papers). One query."""
    return list(
        author_papers(author=author)
        .filter(submitted__gte=since, submitted__lte=until)
        .order_by()
        .values("submitted")
        .annotate(n=Count("id"))
        .values_list("submitted", "n")
    )


def authors_matching(*, q: str) -> QuerySet[Author]:
    """Authors (not merged into another) whose name holds ``q``, case-insensitive (the
    trigram index of papers migration 0005 serves it), names starting with ``q`` first,
    then by name. Chainable; one query when evaluated."""
    q = q.strip()
    return (
        Author.objects.filter(merged_into__isnull=True, name__icontains=q)
        .annotate(
            starts=Case(
                When(name__istartswith=q, then=Value(0)),
                default=Value(1),
                output_field=IntegerField(),
            )
        )
        .order_by("starts", "name", "pk")
    )


def authors_paper_counts(*, author_ids: list[int]) -> dict[int, int]:
    """``{author id: papers that count}`` (neither withdrawn nor deleted, distinct) for
    ``author_ids``; an author without any is left out. One query."""
    if not author_ids:
        return {}
    rows = (
        Authorship.objects.filter(author_id__in=author_ids, paper__in=Paper.objects.live())
        .order_by()
        .values("author_id")
        .annotate(n=Count("paper_id", distinct=True))
        .values_list("author_id", "n")
    )
    return dict(rows)
