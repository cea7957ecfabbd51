"""Reads behind the API: papers with everything a response shows, a paper by its API id, a
topic's weekly trend. No side effects; fixed query counts whatever the page size.

Paper responses are built from *rows*: plain dicts (:data:`ROW_KEYS`) rather than model
instances. On PostgreSQL a list page is one query (:func:`paper_rows`: the paper columns with
its authors, affiliations, cross-lists and topic chips aggregated as JSON by correlated
subqueries); elsewhere (the embedded SQLite default) the rows come from the prefetching
:func:`papers_for_api` (six queries) through :func:`paper_row`.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import re
from dataclasses import dataclass

from django.db import connection
from django.db.models import (
    BooleanField,
    Count,
    DateTimeField,
    ExpressionWrapper,
    Field,
    IntegerField,
    Max,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
)
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce
from django.utils import timezone

from papers.identifiers import InvalidArxivId, parse_arxiv_id
from papers.models import Affiliation, Authorship, Category, Paper, PaperAffiliation
from papers.querysets import LIVE
from topics.models import Assignment, Topic

__all__ = [
    "AUTHORS_SHOWN",
    "LOCAL_PREFIX",
    "PaperNotFound",
    "ROW_KEYS",
    "TrendWeek",
    "api_paper_id",
    "authorships_of",
    "paper_by_api_id",
    "paper_row",
    "paper_rows",
    "papers_for_api",
    "papers_in_order",
    "rows_last_modified",
    "rows_of",
    "topic_trend",
]

LOCAL_PREFIX = "local:"
# The authors a paper response lists at most (collaborations of thousands are common in HEP
# and astro-ph); the rest are paged by ``papers/<id>/authors/`` (authorships_of).
AUTHORS_SHOWN = 100
# Paper columns no API response or export shows (deferred by papers_for_api).
UNSHOWN_PAPER_FIELDS = (
    "title_raw",
    "abstract_raw",
    "comments",
    "report_no",
    "license",
    "submitter",
    "datestamp",
    "source",
    "created_at",
)


def api_paper_id(paper: Paper) -> str:
    """A paper's id in the API: its canonical arXiv identifier, or ``local:<pk>`` for papers
    imported from outside arXiv (the address of their page, ``/papers/local/<pk>/``)."""
    return paper.arxiv_id or f"{LOCAL_PREFIX}{paper.pk}"


def _author_total() -> Coalesce:
    """The number of authorships stored for the outer paper (an index-only count)."""
    count = (
        Authorship.objects.filter(paper=OuterRef("pk"))
        .order_by()
        .values("paper")
        .annotate(n=Count("id"))
        .values("n")
    )
    return Coalesce(Subquery(count, output_field=IntegerField()), 0)


def papers_for_api() -> QuerySet[Paper]:
    """Papers with their primary category, cross-lists, their first :data:`AUTHORS_SHOWN`
    authorships (``api_authorships``, in order: author, and affiliations by name as
    ``api_affiliations``) and ``author_total`` (authorships stored), paper affiliations (in
    order) and accepted assignments to active topics (``topic_assignments``, by topic name):
    six queries for any number of papers."""
    # Only the columns responses, exports and Last-Modified read: a page builds hundreds of
    # model instances, and unused columns (timestamps above all) cost more to decode than the
    # queries take to run.
    chips = (
        Assignment.objects.accepted()
        .filter(topic__active=True)
        .select_related("topic")
        .only("paper", "updated_at", "topic__slug", "topic__name", "topic__updated_at")
        .order_by("topic__name", "topic_id")
    )
    return (
        Paper.objects.select_related("primary_category")
        .defer(*UNSHOWN_PAPER_FIELDS)
        .annotate(author_total=_author_total())
        .prefetch_related(
            "cross_lists",
            Prefetch(
                "authorships",
                queryset=Authorship.objects.select_related("author")
                # The name parts BibTeX's "Last, First" is made of (api.exports).
                .only(
                    "paper",
                    "position",
                    "author__name",
                    "author__keyname",
                    "author__forenames",
                    "author__suffix",
                )
                # A list, not the related manager: building a manager per authorship costs
                # more than the whole query on a page of papers with many authors.
                .prefetch_related(
                    Prefetch(
                        "affiliations",
                        queryset=Affiliation.objects.order_by("name"),
                        to_attr="api_affiliations",
                    )
                )
                .order_by("position")[:AUTHORS_SHOWN],
                to_attr="api_authorships",
            ),
            Prefetch(
                "paper_affiliations",
                queryset=PaperAffiliation.objects.select_related("affiliation").order_by(
                    "position"
                ),
                to_attr="api_affiliations",
            ),
            Prefetch("assignments", queryset=chips, to_attr="topic_assignments"),
        )
    )


# The keys of a paper row (see paper_row). ``id`` is the primary key, ``category_code`` the
# primary category's code, ``authors`` ``[{"name", "affiliations": [names by name]}]`` in
# order (the first AUTHORS_SHOWN), ``author_total`` the authorships stored, ``affiliations``
# and ``categories`` lists of names / codes, ``topics`` ``[{"slug", "name"}]``,
# ``last_modified`` the newest ``updated_at`` of the paper, its accepted assignments to active
# topics and those topics; ``deleted`` whether arXiv reported the record deleted, ``live``
# whether the paper counts (``papers.querysets.LIVE``: neither withdrawn nor deleted; only
# live papers get a PDF link).
ROW_KEYS = (
    "id",
    "arxiv_id",
    "latest_version",
    "title",
    "abstract",
    "category_code",
    "submitted",
    "updated",
    "withdrawn",
    "deleted",
    "live",
    "doi",
    "dois",
    "journal_ref",
    "authors",
    "author_total",
    "affiliations",
    "categories",
    "topics",
    "last_modified",
)
_ROW_COLUMNS = (
    "id",
    "arxiv_id",
    "latest_version",
    "title",
    "abstract",
    "submitted",
    "updated",
    "withdrawn",
    "doi",
    "dois",
    "journal_ref",
)


def paper_row(paper: Paper) -> dict:
    """The row (:data:`ROW_KEYS`) of ``paper``, a paper from :func:`papers_for_api`."""
    stamps = [paper.updated_at]
    for assignment in paper.topic_assignments:
        stamps.extend((assignment.updated_at, assignment.topic.updated_at))
    return {
        "id": paper.pk,
        "arxiv_id": paper.arxiv_id,
        "latest_version": paper.latest_version,
        "title": paper.title,
        "abstract": paper.abstract,
        "category_code": paper.primary_category.code,
        "submitted": paper.submitted,
        "updated": paper.updated,
        "withdrawn": paper.withdrawn,
        "deleted": paper.deleted_at is not None,
        "live": paper.is_live,
        "doi": paper.doi,
        "dois": paper.dois,
        "journal_ref": paper.journal_ref,
        "authors": [
            {
                "name": authorship.author.name,
                "affiliations": [a.name for a in authorship.api_affiliations],
            }
            for authorship in paper.api_authorships
        ],
        "author_total": paper.author_total,
        "affiliations": [pa.affiliation.name for pa in paper.api_affiliations],
        "categories": sorted(c.code for c in paper.cross_lists.all()),
        "topics": [{"slug": a.topic.slug, "name": a.topic.name} for a in paper.topic_assignments],
        "last_modified": max(stamps),
    }


def _related_sql() -> dict[str, tuple[str, list]]:
    """The correlated subqueries of :func:`paper_rows` over the outer ``papers_paper`` row:
    ``{key: (sql, params)}``, each ordered as :func:`papers_for_api` orders its prefetches.

    They name the outer table by its own name, as Django does in a query it builds on
    ``Paper`` (filters add subqueries with aliases of their own): a rows queryset is run as
    it is, never nested as a subquery of another (where the outer table is relabelled)."""
    paper = f'"{Paper._meta.db_table}"."id"'
    authorship = Authorship._meta.db_table
    author = Authorship._meta.get_field("author").related_model._meta.db_table
    authorship_affiliation = Authorship.affiliations.through._meta.db_table
    affiliation = Affiliation._meta.db_table
    paper_affiliation = PaperAffiliation._meta.db_table
    cross_list = Paper.cross_lists.through._meta.db_table
    category = Paper._meta.get_field("primary_category").related_model._meta.db_table
    assignment = Assignment._meta.db_table
    topic = Topic._meta.db_table
    accepted = [Assignment.State.ACCEPTED.value]
    empty = "'[]'::json"
    chips_from = (
        f"FROM {assignment} a JOIN {topic} t ON t.id = a.topic_id "
        f"WHERE a.paper_id = {paper} AND a.state = %s AND t.active"
    )
    return {
        # The first AUTHORS_SHOWN only (an index range scan on (paper, position)).
        "authors": (
            "COALESCE((SELECT json_agg(json_build_object('name', s.name, 'affiliations', "
            "COALESCE((SELECT json_agg(af.name ORDER BY af.name) "
            f"FROM {authorship_affiliation} aa JOIN {affiliation} af "
            f"ON af.id = aa.affiliation_id WHERE aa.authorship_id = s.id), {empty})) "
            "ORDER BY s.position) "
            "FROM (SELECT s.id, s.position, au.name "
            f"FROM {authorship} s JOIN {author} au ON au.id = s.author_id "
            f"WHERE s.paper_id = {paper} ORDER BY s.position LIMIT %s) s), {empty})",
            [AUTHORS_SHOWN],
        ),
        "author_total": (
            f"(SELECT COUNT(*) FROM {authorship} s WHERE s.paper_id = {paper})",
            [],
        ),
        "affiliations": (
            "COALESCE((SELECT json_agg(af.name ORDER BY pa.position) "
            f"FROM {paper_affiliation} pa JOIN {affiliation} af ON af.id = pa.affiliation_id "
            f"WHERE pa.paper_id = {paper}), {empty})",
            [],
        ),
        # Code points, as Python's sorted() orders them.
        "categories": (
            'COALESCE((SELECT json_agg(c.code ORDER BY c.code COLLATE "C") '
            f"FROM {cross_list} x JOIN {category} c ON c.id = x.category_id "
            f"WHERE x.paper_id = {paper}), {empty})",
            [],
        ),
        "topics": (
            "COALESCE((SELECT json_agg(json_build_object('slug', t.slug, 'name', t.name) "
            f"ORDER BY t.name, t.id) {chips_from}), {empty})",
            accepted,
        ),
        # GREATEST skips NULL: a paper without chips has its own updated_at.
        "last_modified": (
            f'GREATEST("{Paper._meta.db_table}"."updated_at", '
            f"(SELECT MAX(GREATEST(a.updated_at, t.updated_at)) {chips_from}))",
            accepted,
        ),
    }


def paper_rows() -> QuerySet:
    """Every paper as a row (:data:`ROW_KEYS`), a queryset to filter, order and slice like
    ``Paper.objects`` (annotations added later are in the rows too).

    On PostgreSQL a values queryset: one query whatever the slice, the related lists loaded
    as JSON (psycopg decodes ``json``). Elsewhere :func:`papers_for_api` (model instances,
    six queries): pass what it gives through :func:`rows_of`.
    """
    if connection.vendor != "postgresql":
        return papers_for_api()
    return _postgresql_rows().all()


_RELATED_KEYS = ("authors", "affiliations", "categories", "topics")


@functools.cache
def _postgresql_rows() -> QuerySet:
    # Built once: cloning it costs a fraction of building the annotations again. The four
    # lists come as one JSON array (``related``, unpacked by rows_of): one document to decode
    # per paper instead of four.
    parts = _related_sql()
    related = RawSQL(
        "json_build_array(" + ", ".join(parts[key][0] for key in _RELATED_KEYS) + ")",
        [param for key in _RELATED_KEYS for param in parts[key][1]],
        output_field=Field(),
    )
    last_modified = RawSQL(*parts["last_modified"], output_field=DateTimeField())
    author_total = RawSQL(*parts["author_total"], output_field=IntegerField())
    return Paper.objects.values(
        *_ROW_COLUMNS,
        # The same conditions as paper_row's, from the one definition of LIVE.
        deleted=ExpressionWrapper(Q(deleted_at__isnull=False), output_field=BooleanField()),
        live=ExpressionWrapper(LIVE, output_field=BooleanField()),
        # A subquery, not a join: a join would stay in every count and facet of the rows
        # (``.values("id")`` keeps it), costing each counted paper its row and a hash probe.
        category_code=Subquery(
            Category.objects.filter(pk=OuterRef("primary_category_id")).values("code")[:1]
        ),
        related=related,
        author_total=author_total,
        last_modified=last_modified,
    )


def rows_of(papers) -> list[dict]:
    """``papers`` (from :func:`paper_rows`: dicts, or papers from :func:`papers_for_api`)
    as a list of rows (:data:`ROW_KEYS`, and any annotation the queryset added)."""
    rows = []
    for paper in papers:
        if not isinstance(paper, dict):
            paper = paper_row(paper)
        elif "related" in paper:
            (
                paper["authors"],
                paper["affiliations"],
                paper["categories"],
                paper["topics"],
            ) = paper.pop("related")
        rows.append(paper)
    return rows


def rows_last_modified(rows) -> dt.datetime | None:
    """The newest ``last_modified`` of ``rows`` (when anything their papers show last
    changed, as far as timestamps tell: a removal does not move it); None for no rows."""
    return max((row["last_modified"] for row in rows), default=None)


def papers_in_order(ranked: list[tuple[int, float]]) -> list[dict]:
    """The rows (:data:`ROW_KEYS` and ``rank``) of the papers of ``ranked`` (``(paper id,
    rank)`` pairs, as ``topics.search.papers_search`` gives them), in that order; ids no
    longer stored are left out. One query on PostgreSQL (six elsewhere), none for an empty
    list."""
    if not ranked:
        return []
    ids = [paper_id for paper_id, _ in ranked]
    found = paper_rows().filter(id__in=ids).order_by()
    rows = {row["id"]: row for row in rows_of(found)}
    result = []
    for paper_id, rank in ranked:
        row = rows.get(paper_id)
        if row is not None:
            result.append({**row, "rank": rank})
    return result


def authorships_of(paper: Paper) -> QuerySet[Authorship]:
    """All of ``paper``'s authorships in order (``position``), each with its author and its
    affiliations by name (``api_affiliations``): to page, two queries per page."""
    return (
        Authorship.objects.filter(paper=paper)
        .select_related("author")
        .only("paper", "position", "author__name")
        .prefetch_related(
            Prefetch(
                "affiliations",
                queryset=Affiliation.objects.order_by("name"),
                to_attr="api_affiliations",
            )
        )
        .order_by("position")
    )


class PaperNotFound(Exception):
    """No stored paper has this API id; ``str(error)`` says why (bad id, unknown version)."""


def paper_by_api_id(api_id: str, queryset: QuerySet[Paper] | None = None) -> Paper:
    """The paper for ``api_id``: any spelling ``parse_arxiv_id`` accepts (``2401.01234``,
    ``2401.01234v2``, ``hep-th/9901001v1``, ``arXiv:…``) or ``local:<pk>``.

    A version resolves to the paper if the paper has that version. Raises
    :class:`PaperNotFound` otherwise. From ``queryset`` (:func:`papers_for_api` by default);
    from :func:`paper_rows` the paper is its row (one query on PostgreSQL, not six: pass it
    through :func:`rows_of`).
    """
    queryset = papers_for_api() if queryset is None else queryset
    if api_id.startswith(LOCAL_PREFIX):
        pk = api_id[len(LOCAL_PREFIX) :]
        if not (pk.isascii() and pk.isdigit()) or len(pk) > 18:
            raise PaperNotFound(f"{api_id!r} is not local:<number>.")
        paper = queryset.filter(pk=int(pk), arxiv_id__isnull=True).first()
        if paper is None:
            raise PaperNotFound(f"No paper without an arXiv identifier has id {api_id!r}.")
        return paper
    try:
        canonical, version = parse_arxiv_id(api_id)
    except InvalidArxivId as error:
        raise PaperNotFound(f"{error}.") from None
    paper = queryset.filter(arxiv_id=canonical).first()
    if paper is None:
        raise PaperNotFound(f"No paper with arXiv identifier {canonical!r} is stored.")
    # An unknown latest version (None) cannot rule a pinned version out.
    latest = paper["latest_version"] if isinstance(paper, dict) else paper.latest_version
    if version is not None and latest is not None and version > latest:
        raise PaperNotFound(f"{canonical} has versions v1 to v{latest}; there is no v{version}.")
    return paper


@dataclass(frozen=True)
class TrendWeek:
    """One week of a topic's trend: ``week_start`` (a Monday), ``count`` (the topic's distinct
    papers submitted that week, descendants included), ``total`` (all papers submitted that
    week; on both sides only papers that count: neither withdrawn nor deleted) and ``share``
    (``count / total``, 0.0 when ``total`` is 0)."""

    week_start: dt.date
    count: int
    total: int
    share: float


def topic_trend(
    *, topic: Topic, weeks: int, as_of: dt.date | None = None
) -> tuple[dt.date, list[TrendWeek]]:
    """``(as_of, weeks)``: ``weeks`` weekly counts and shares for ``topic``, oldest first,
    weeks starting Monday, the last being the week that holds ``as_of`` (default: the newest
    submitted date among all papers, today with none), counted up to ``as_of`` included.
    The topic's side is counted from its subtree's accepted assignments, which carry their
    paper's submitted date and whether it counts (as momentum reads them: a range scan per
    subtree topic, no paper read; reading the papers of a 17,000-paper topic to keep a
    year's took 195 ms at 1M papers). Three queries (two with ``as_of``)."""
    if as_of is None:
        as_of = Paper.objects.aggregate(newest=Max("submitted"))["newest"] or timezone.localdate()
    first_monday = _trend_first_monday(as_of, weeks)
    per_day = (
        Assignment.objects.accepted_live()
        .in_subtree(topic)
        .filter(submitted__gte=first_monday, submitted__lte=as_of)
        .order_by()
        .values("submitted")
        .annotate(n=Count("paper_id", distinct=True))
        .values_list("submitted", "n")
    )
    return as_of, _trend_weeks(per_day, weeks=weeks, as_of=as_of)


def papers_trend(
    *, papers: QuerySet[Paper], weeks: int, as_of: dt.date | None = None
) -> tuple[dt.date, list[TrendWeek]]:
    """:func:`topic_trend` for ``papers`` (``Paper`` rows filtered as ``api.filters.PaperFilter``
    filters them: by conditions and subqueries, never a join that repeats a paper): counted in
    SQL per submitted day (at most ``7 * weeks`` rows), folded into weeks here. The weeks'
    dates are a condition on the same rows as ``papers``' own, so PostgreSQL can AND a full
    text match with the date range in one bitmap (as ``id IN (matches)`` it read every match
    of the word, 1.15 s for ``model`` at 1M papers, against 0.22 s). Two queries (one with
    ``as_of``)."""
    if as_of is None:
        as_of = Paper.objects.aggregate(newest=Max("submitted"))["newest"] or timezone.localdate()
    per_day = (
        _trend_papers(as_of, weeks, papers)
        .order_by()
        .values("submitted")
        .annotate(n=Count("id"))
        .values_list("submitted", "n")
    )
    return as_of, _trend_weeks(per_day, weeks=weeks, as_of=as_of)


def _trend_first_monday(as_of: dt.date, weeks: int) -> dt.date:
    last_monday = as_of - dt.timedelta(days=as_of.weekday())
    return last_monday - dt.timedelta(weeks=weeks - 1)


def _trend_papers(
    as_of: dt.date, weeks: int, papers: QuerySet[Paper] | None = None
) -> QuerySet[Paper]:
    """Papers of ``papers`` (default: all) that count (on both sides of the share, as in
    ``topics.momentum``) submitted in the trend's weeks up to ``as_of``."""
    first_monday = _trend_first_monday(as_of, weeks)
    papers = Paper.objects.all() if papers is None else papers
    return papers.live().filter(submitted__gte=first_monday, submitted__lte=as_of)


def _trend_weeks(per_day, *, weeks: int, as_of: dt.date) -> list[TrendWeek]:
    """The weeks of a trend from ``per_day`` (``(submitted, count)`` rows of its papers),
    with every paper that counts in those weeks as the total (one query)."""

    def fold(rows) -> dict[dt.date, int]:
        counts: dict[dt.date, int] = {}
        for submitted, n in rows:
            monday = submitted - dt.timedelta(days=submitted.weekday())
            counts[monday] = counts.get(monday, 0) + n
        return counts

    counts = fold(per_day)
    # count(*) of the submitted dates only: an index-only scan of paper_live_submitted_idx.
    totals = fold(
        _trend_papers(as_of, weeks)
        .order_by()
        .values("submitted")
        .annotate(n=Count("*"))
        .values_list("submitted", "n")
    )
    first_monday = _trend_first_monday(as_of, weeks)
    result = []
    for i in range(weeks):
        monday = first_monday + dt.timedelta(weeks=i)
        count, total = counts.get(monday, 0), totals.get(monday, 0)
        result.append(TrendWeek(monday, count, total, count / total if total else 0.0))
    return result


class InvalidDoi(ValueError):
    """Not a DOI (``10.<registrant>/<suffix>``); ``str(error)`` says why."""


_DOI_FORM = re.compile(r"10\.\d{4,9}/\S+")
# Bare, ``doi:``, or a doi.org URL; a server may fold the URL's "//" into "/" in a path.
_DOI_LEAD = re.compile(r"^(?:doi:\s*|(?:https?:/{1,2})?(?:dx\.)?doi\.org/)", re.I)
_ARXIV_DOI_PREFIX = "10.48550/arxiv."


def normalize_doi(text: str) -> str:
    """``text`` without its ``doi:`` or ``https://doi.org/`` lead. Raises :class:`InvalidDoi`
    unless what is left is ``10.<4 to 9 digits>/<suffix without blanks>``."""
    doi = _DOI_LEAD.sub("", text.strip())
    if not _DOI_FORM.fullmatch(doi):
        raise InvalidDoi(f"{text!r} is not a DOI (10.<registrant>/<suffix>).")
    return doi


# The ids of papers carrying a DOI (a JSON list of one), compared lower-cased on both sides by
# PostgreSQL, so they agree whatever its locale does with letters beyond ASCII; the expression
# papers migration 0012 indexes.
DOI_LOOKUP_SQL = "SELECT id FROM papers_paper WHERE lower(dois::text)::jsonb @> lower(%s)::jsonb"


def paper_by_doi(text: str, queryset: QuerySet[Paper] | None = None) -> Paper:
    """The paper whose DOI is ``text`` (any case; bare, ``doi:…`` or a doi.org URL): the
    arXiv DOI ``10.48550/arXiv.<arXiv id>`` resolves as that arXiv id does; any other DOI is
    looked up among the papers' journal DOIs (``Paper.dois``), the lowest id first when
    several papers carry it. Raises :class:`InvalidDoi` (malformed) or
    :class:`PaperNotFound`. ``queryset`` as for :func:`paper_by_api_id`."""
    doi = normalize_doi(text)
    if doi.lower().startswith(_ARXIV_DOI_PREFIX):
        return paper_by_api_id(doi, queryset)
    queryset = papers_for_api() if queryset is None else queryset
    # DOIs are case-insensitive (DOI Handbook 2.4): compared lower-cased. On PostgreSQL the
    # expression is the one papers migration 0012 indexes (GIN, jsonb_path_ops).
    if connection.vendor == "postgresql":
        ids = RawSQL(DOI_LOOKUP_SQL, [json.dumps([doi], ensure_ascii=False)])
    else:
        wanted = doi.lower()
        ids = [
            pk
            for pk, dois in Paper.objects.exclude(dois=[]).values_list("id", "dois")
            if any(str(d).lower() == wanted for d in dois or [])
        ]
    paper = queryset.filter(id__in=ids).order_by("id").first()
    if paper is None:
        raise PaperNotFound(f"No paper with DOI {doi!r} is stored.")
    return paper
