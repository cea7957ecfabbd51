"""Reads for an author's page that need nothing but papers: the author's papers (those that
count: neither withdrawn nor deleted), co-authors and affiliations with counts, and papers per
submitted day; and the newest papers of a set of authors or affiliations (the API's
``author=`` and ``affiliation=`` lists). No side effects; each function runs one query
whatever the number of papers. (The topics of an author's papers are read in
``topics.authors``: papers knows no topics.)
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db import connection, connections, router
from django.db.models import Case, Count, IntegerField, Q, QuerySet, Value, When

from topicsite.compiled import CompiledQuery

from .models import Author, Authorship, Paper, PaperAffiliation
from .querysets import live_through

__all__ = [
    "COUNTED_PAPERS",
    "AuthorCount",
    "affiliations_newest_paper_ids",
    "author_counted_paper_ids",
    "author_affiliations",
    "author_coauthors",
    "author_credits",
    "author_newest_live_paper_ids",
    "author_paper_count",
    "author_paper_count_capped",
    "author_live_authorships",
    "author_paper_ids",
    "author_papers",
    "author_papers_per_day",
    "authors_matching",
    "authors_newest_paper_ids",
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
    """How many papers :func:`author_papers` holds. One query, on the author's authorships
    (:func:`author_live_authorships`: their index and the papers that do not count, no
    paper row; counting the papers themselves read each one, 18 ms uncached for an
    850-paper author at a million papers)."""
    return author_live_authorships(author=author).values("paper_id").distinct().count()


def author_live_authorships(*, author: Author) -> QuerySet[Authorship]:
    """``author``'s authorships on papers that count (neither withdrawn nor deleted), as a
    queryset to filter further: read through ``authorship_author_newest_idx`` (author,
    submitted, paper; authorships carry their paper's ``submitted``), so an author's range of
    rows, not the papers table newest first, less the papers that do not count
    (``papers.querysets.live_through``), not each paper's row. No query until evaluated."""
    return Authorship.objects.filter(live_through("paper_id"), author=author)


def _newest_papers(author_id: int, before: tuple[dt.date, int] | None = None) -> QuerySet:
    """The papers that count of the author ``author_id`` as rows ``{"submitted",
    "paper_id", "credits"}``, one per paper (an author credited twice on a paper, as a merge
    can leave it, counts once), newest first (submitted, then paper id, descending), after
    the keyset position ``before`` when given: read from their authorships newest first, so
    that a slice stops reading there. No query until evaluated."""
    rows = author_live_authorships(author=author_id)
    if before is not None:
        rows = rows.filter(
            Q(submitted__lt=before[0]) | Q(submitted=before[0], paper_id__lt=before[1])
        )
    return (
        rows.values("submitted", "paper_id")
        .annotate(credits=Count("id"))
        .order_by("-submitted", "-paper_id")
    )


# _newest_papers' paper ids, compiled once (an author's API page and author page run them on
# every request; building and compiling them cost more than PostgreSQL's reading).
_NEWEST_IDS = CompiledQuery(
    lambda author: _newest_papers(author).values_list("paper_id", flat=True), author=int
)
_NEWEST_IDS_BEFORE = CompiledQuery(
    lambda author, day, paper: _newest_papers(author, (day, paper)).values_list(
        "paper_id", flat=True
    ),
    author=int,
    day=dt.date,
    paper=int,
)


def _newest_paper_ids(
    author: Author,
    *,
    limit: int,
    offset: int = 0,
    before: tuple[dt.date, int] | None = None,
    count: bool = False,
) -> list[int] | int:
    """``limit`` of :func:`_newest_papers`' paper ids from position ``offset``, or with
    ``count`` how many there are of them (at most ``limit``). One query; on PostgreSQL from
    SQL compiled once (:class:`topicsite.compiled.CompiledQuery`)."""
    if connection.vendor != "postgresql":
        rows = _newest_papers(author.pk, before).values_list("paper_id", flat=True)
        sliced = rows[offset : offset + limit]
        return sliced.count() if count else list(sliced)
    using = router.db_for_read(Authorship)
    if before is None:
        sql, params = _NEWEST_IDS.sql(using, author=author.pk)
    else:
        sql, params = _NEWEST_IDS_BEFORE.sql(
            using, author=author.pk, day=before[0], paper=before[1]
        )
    sql = f"{sql} LIMIT %s OFFSET %s"
    if count:
        sql = f"SELECT COUNT(*) FROM ({sql}) newest"  # noqa: S608 - compiled by Django
    with connections[using].cursor() as cursor:
        cursor.execute(sql, [*params, limit, offset])
        if count:
            return cursor.fetchone()[0]
        return [row[0] for row in cursor.fetchall()]


def author_newest_live_paper_ids(
    *, author: Author, limit: int, before: tuple[dt.date, int] | None = None
) -> list[int]:
    """pks of the ``limit`` newest papers of :func:`author_papers` (submitted descending,
    then id descending), after the keyset position ``before`` ``(submitted, paper id)`` in
    that order when given (an API cursor's next page). One query that walks the author's
    authorships newest first (:func:`author_live_authorships`) and stops after ``limit``
    papers, whatever the author's number of papers."""
    return _newest_paper_ids(author, limit=limit, before=before)


def author_paper_count_capped(*, author: Author, cap: int) -> int:
    """:func:`author_paper_count`, counting no further than ``cap`` (``min(count, cap)``): one
    query that walks the author's authorships newest first and stops after ``cap`` papers
    (the full count of a 4,500-paper author read every paper row, 20-30 ms at 1M papers)."""
    return _newest_paper_ids(author, limit=cap, count=True)


def author_credits(*, author: Author) -> int:
    """How many authorships ``author`` has (withdrawn and deleted papers included): one
    count read from ``authorship_author_newest_idx`` alone, an upper bound of
    :func:`author_paper_count` that costs no paper row."""
    return Authorship.objects.filter(author=author).count()


def author_paper_ids(*, author: Author, limit: int, offset: int = 0) -> list[int]:
    """pks of ``limit`` of :func:`author_papers` from position ``offset`` (0-based), in its
    order. One query, reading the author's authorships newest first
    (:func:`author_live_authorships`) and stopping after ``offset + limit`` papers:
    ``author_papers``' ``id IN (...)`` had PostgreSQL walk the whole papers table newest
    first for an author whose papers are spread over the years (204 ms for a 4,538-paper
    author at 1M papers, 0.3 ms this way)."""
    return _newest_paper_ids(author, limit=limit, offset=offset)


# Co-authors, affiliations and topics of an author are counted over this many of their newest
# papers: every paper of an author of 4,500 took 50-100 ms each at 1M papers, and a
# collaboration's members (thousands of papers of thousands of authors) would take seconds.
COUNTED_PAPERS = 1000


def author_counted_paper_ids(*, author: Author) -> QuerySet:
    """The ``paper_id`` of the :data:`COUNTED_PAPERS` newest papers of :func:`author_papers`
    (all of them for most authors), as a subquery to filter by (``paper_id__in=``): read
    newest first from the author's authorships, stopping there."""
    return _newest_papers(author.pk).values("paper_id")[:COUNTED_PAPERS]


def author_coauthors(*, author: Author, limit: int) -> list[AuthorCount]:
    """The ``limit`` authors who share most papers with ``author`` (of their
    :data:`COUNTED_PAPERS` newest, :func:`author_counted_paper_ids`), most first, then by
    name; ``papers`` counts the shared papers. One query."""
    rows = (
        Authorship.objects.filter(paper_id__in=author_counted_paper_ids(author=author))
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
    """The ``limit`` affiliations given for ``author`` on their papers (their
    :data:`COUNTED_PAPERS` newest, :func:`author_counted_paper_ids`), on most papers first,
    then by name. One query. Papers that give affiliations per paper only (not per author) add
    nothing here."""
    rows = (
        AuthorshipAffiliation.objects.filter(
            authorship__author=author,
            authorship__paper_id__in=author_counted_paper_ids(author=author),
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
        author_live_authorships(author=author)
        .filter(submitted__gte=since, submitted__lte=until)
        .order_by()
        .values("submitted")
        .annotate(n=Count("paper_id", distinct=True))
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


# The newest papers of each author (or affiliation) of a set, merged: one range scan per
# author on authorship_author_newest_idx (author, submitted desc, paper desc), or per
# affiliation on paper_affil_affil_newest_idx, read from the index alone and cut at the rows
# the page can need. DISTINCT per name: a curator's merge can leave one author on a paper
# twice, and a repeated row must not take a place of the page. A paper of two names of the
# set counts once (GROUP BY).
_NEWEST_ROWS = (
    "SELECT DISTINCT submitted, paper_id FROM {links} WHERE {column} = {named}{before}"
    " ORDER BY submitted DESC, paper_id DESC LIMIT %s"
)
# Rows strictly after a keyset position (submitted, paper id) in the newest-first order, the
# date first so that it bounds the index range scan (as api.pagination's cursors do).
_NEWEST_BEFORE = " AND submitted <= %s AND (submitted < %s OR paper_id < %s)"


def _links_newest_paper_ids(
    links, column: str, ids: list[int], limit: int, before: tuple[dt.date, int] | None
) -> list[int]:
    """:func:`authors_newest_paper_ids` over the link model ``links`` (rows of ``column``,
    ``paper_id`` and the paper's ``submitted``) for the names ``ids``."""
    if limit < 0:
        raise ValueError(f"limit must not be negative (got {limit})")
    if not limit or not ids:
        return []
    table = connection.ops.quote_name(links._meta.db_table)
    before_sql = "" if before is None else _NEWEST_BEFORE
    before_params = [] if before is None else [before[0], before[0], before[1]]

    def rows(named: str) -> str:
        return _NEWEST_ROWS.format(links=table, column=column, named=named, before=before_sql)

    if connection.vendor == "postgresql":
        # The names as an array, each joined to its newest rows (LATERAL).
        merged = (
            "SELECT newest.submitted, newest.paper_id FROM unnest(%s::bigint[]) named (id),"
            f" LATERAL ({rows('named.id')}) newest"
        )
        params = [list(ids), *before_params, limit]
    else:
        merged = " UNION ALL ".join(
            f"SELECT submitted, paper_id FROM ({rows('%s')}) b{n}" for n in range(len(ids))
        )
        params = [param for one in ids for param in (one, *before_params, limit)]
    sql = (
        # No column list on the derived table: SQLite has none; every branch names its columns.
        f"SELECT paper_id FROM ({merged}) newest"
        " GROUP BY submitted, paper_id ORDER BY submitted DESC, paper_id DESC LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, limit])
        return [row[0] for row in cursor.fetchall()]


def authors_newest_paper_ids(
    *, author_ids: list[int], limit: int, before: tuple[dt.date, int] | None = None
) -> list[int]:
    """Ids of the ``limit`` newest distinct papers (submitted descending, then id descending)
    on which any author of ``author_ids`` is credited, withdrawn and deleted papers included
    (as the API's paper list shows them); ``before``, a keyset position ``(submitted, paper
    id)``, starts after it in that order (an API cursor's next page). One query whose cost
    grows with ``len(author_ids) * limit``, not with the authors' numbers of papers: keep
    ``author_ids`` short (on SQLite at most a few hundred: one ``UNION ALL`` branch each).
    Raises ``ValueError`` for a negative ``limit``."""
    return _links_newest_paper_ids(Authorship, "author_id", author_ids, limit, before)


def affiliations_newest_paper_ids(
    *, affiliation_ids: list[int], limit: int, before: tuple[dt.date, int] | None = None
) -> list[int]:
    """:func:`authors_newest_paper_ids` for the papers listing any affiliation of
    ``affiliation_ids`` (their paper affiliations, papers 0019): the same order, keyset and
    cost, ``ValueError`` for a negative ``limit``."""
    return _links_newest_paper_ids(
        PaperAffiliation, "affiliation_id", affiliation_ids, limit, before
    )
