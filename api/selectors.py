"""Reads behind the API: papers with everything a response shows, a paper by its API id, a
topic's weekly trend. No side effects; fixed query counts whatever the page size.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import Count, Max, Prefetch, QuerySet
from django.utils import timezone

from papers.identifiers import InvalidArxivId, parse_arxiv_id
from papers.models import Affiliation, Authorship, Paper, PaperAffiliation
from topics.models import Assignment, Topic

__all__ = [
    "LOCAL_PREFIX",
    "PaperNotFound",
    "TrendWeek",
    "api_paper_id",
    "paper_by_api_id",
    "papers_for_api",
    "papers_in_order",
    "papers_last_modified",
    "topic_trend",
]

LOCAL_PREFIX = "local:"
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


def papers_for_api() -> QuerySet[Paper]:
    """Papers with their primary category, cross-lists, all authorships (``api_authorships``,
    in order: author, and affiliations by name as ``api_affiliations``), paper affiliations
    (in order) and accepted assignments to active topics (``topic_assignments``, by topic
    name): six queries for any number of papers."""
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
        .prefetch_related(
            "cross_lists",
            Prefetch(
                "authorships",
                queryset=Authorship.objects.select_related("author")
                .only("paper", "position", "author__name")
                # A list, not the related manager: building a manager per authorship costs
                # more than the whole query on a page of papers with many authors.
                .prefetch_related(
                    Prefetch(
                        "affiliations",
                        queryset=Affiliation.objects.order_by("name"),
                        to_attr="api_affiliations",
                    )
                )
                .order_by("position"),
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


def papers_in_order(ranked: list[tuple[int, float]]) -> list[Paper]:
    """The papers of ``ranked`` (``(paper id, rank)`` pairs, as ``api.filters.full_text_ranked``
    gives them) from :func:`papers_for_api`, in that order, each with ``rank`` set; ids no
    longer stored are left out. Six queries, none for an empty list."""
    if not ranked:
        return []
    papers = papers_for_api().in_bulk([paper_id for paper_id, _ in ranked])
    result = []
    for paper_id, rank in ranked:
        paper = papers.get(paper_id)
        if paper is not None:
            paper.rank = rank
            result.append(paper)
    return result


class PaperNotFound(Exception):
    """No stored paper has this API id; ``str(error)`` says why (bad id, unknown version)."""


def paper_by_api_id(api_id: str, queryset: QuerySet[Paper] | None = None) -> Paper:
    """The paper for ``api_id``: any spelling ``parse_arxiv_id`` accepts (``2401.01234``,
    ``2401.01234v2``, ``hep-th/9901001v1``, ``arXiv:…``) or ``local:<pk>``.

    A version resolves to the paper if the paper has that version. Raises
    :class:`PaperNotFound` otherwise.
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
    if version is not None and version > paper.latest_version:
        raise PaperNotFound(
            f"{canonical} has versions v1 to v{paper.latest_version}; there is no v{version}."
        )
    return paper


def papers_last_modified(papers) -> dt.datetime | None:
    """The newest ``updated_at`` among ``papers`` (from :func:`papers_for_api`), their
    accepted assignments and those assignments' topics; None for no papers."""
    stamps = []
    for paper in papers:
        stamps.append(paper.updated_at)
        for assignment in getattr(paper, "topic_assignments", ()):
            stamps.extend((assignment.updated_at, assignment.topic.updated_at))
    return max(stamps, default=None)


@dataclass(frozen=True)
class TrendWeek:
    """One week of a topic's trend: ``week_start`` (a Monday), ``count`` (the topic's distinct
    papers submitted that week, descendants included), ``total`` (all papers submitted that
    week) and ``share`` (``count / total``, 0.0 when ``total`` is 0)."""

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
    Three queries (two with ``as_of``)."""
    if as_of is None:
        as_of = Paper.objects.aggregate(newest=Max("submitted"))["newest"] or timezone.localdate()
    last_monday = as_of - dt.timedelta(days=as_of.weekday())
    first_monday = last_monday - dt.timedelta(weeks=weeks - 1)
    in_range = Paper.objects.filter(submitted__gte=first_monday, submitted__lte=as_of)
    topic_paper_ids = Assignment.objects.accepted().in_subtree(topic).order_by().values("paper_id")

    def per_week(queryset) -> dict[dt.date, int]:
        counts: dict[dt.date, int] = {}
        rows = queryset.order_by().values("submitted").annotate(n=Count("id"))
        for submitted, n in rows.values_list("submitted", "n"):
            monday = submitted - dt.timedelta(days=submitted.weekday())
            counts[monday] = counts.get(monday, 0) + n
        return counts

    topic_counts = per_week(in_range.filter(id__in=topic_paper_ids))
    totals = per_week(in_range)
    result = []
    for i in range(weeks):
        monday = first_monday + dt.timedelta(weeks=i)
        count, total = topic_counts.get(monday, 0), totals.get(monday, 0)
        result.append(TrendWeek(monday, count, total, count / total if total else 0.0))
    return as_of, result
