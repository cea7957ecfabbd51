"""An author's page, as plain data: the author's papers as the one paper card
(``topics.cards``), paged; co-authors and affiliations with counts (``papers.author_selectors``);
the topics of the author's papers with counts; and a momentum line with a 12-week sparkline
(``topics.momentum``). It lives in ``topics`` because it shows topics; ``papers`` knows none.

:func:`author_page` runs a fixed number of queries whatever the number of the author's papers,
co-authors, affiliations or topics (see its docstring).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import Count, Max
from django.utils import timezone

from papers.author_selectors import (
    AuthorCount,
    author_affiliations,
    author_coauthors,
    author_counted_paper_ids,
    author_paper_count,
    author_paper_ids,
    author_papers_per_day,
)
from papers.models import Author, Paper

from .cards import TopicCardPage, paper_cards, url_maker
from .models import Assignment
from .momentum import (
    Momentum,
    momentum_change_text,
    momentum_days_from,
    momentum_from_days,
    sparkline_points,
)

__all__ = [
    "AUTHOR_PAPERS_PER_PAGE",
    "AUTHOR_SHOWN",
    "AuthorMomentum",
    "AuthorPage",
    "AuthorTopic",
    "PageNumberInvalid",
    "author_momentum",
    "author_page",
    "author_page_number",
    "author_topics",
]

AUTHOR_PAPERS_PER_PAGE = 30
# Co-authors, affiliations and topics an author's page lists, each (most papers first).
AUTHOR_SHOWN = 20
# ?page= values longer than this are refused (no author has 10^6 pages of papers).
_PAGE_DIGITS = 6


class PageNumberInvalid(ValueError):
    """``?page=`` is not a positive whole number (the message says so)."""


@dataclass(frozen=True)
class AuthorTopic:
    """A topic the author's papers are in: its ``name`` (display name), page ``url`` and the
    number of the author's ``papers`` accepted in it."""

    name: str
    url: str
    papers: int


@dataclass(frozen=True)
class AuthorMomentum:
    """The author's momentum: ``momentum`` (a :class:`topics.momentum.Momentum` of the
    author's papers; ``share`` unused) and what ``templates/topics/_sparkline.html`` needs."""

    momentum: Momentum

    @property
    def sentence(self) -> str:
        """``"3 papers in the last four weeks, up 50% on the four weeks before."``"""
        return momentum_change_text(self.momentum) + "."

    @property
    def weekly_counts(self) -> list[int]:
        return [week.count for week in self.momentum.weeks]

    @property
    def sparkline_label(self) -> str:
        """``"12-week papers: 0, 1, …"``, oldest week first."""
        counts = ", ".join(str(n) for n in self.weekly_counts)
        return f"{len(self.momentum.weeks)}-week papers: {counts}"

    @property
    def sparkline_points(self) -> str:
        return sparkline_points(self.weekly_counts)


@dataclass
class AuthorPage:
    """Everything an author's page shows: the ``author``, one ``page`` of paper cards
    (:class:`topics.cards.TopicCardPage`, newest first), ``coauthors`` and ``affiliations``
    (:class:`papers.author_selectors.AuthorCount`), ``topics`` (:class:`AuthorTopic`), each
    at most ``AUTHOR_SHOWN``, most papers first, and ``momentum``."""

    author: Author
    page: TopicCardPage
    coauthors: list[AuthorCount]
    affiliations: list[AuthorCount]
    topics: list[AuthorTopic]
    momentum: AuthorMomentum


def author_page_number(raw: str | None, *, paper_count: int, per_page: int) -> int:
    """The page to show for ``?page=raw``: 1 when absent; the last page for a number past it.
    Raises :class:`PageNumberInvalid` for anything but a positive whole number of at most
    six digits."""
    if raw is None:
        return 1
    if not (raw.isascii() and raw.isdigit()) or len(raw) > _PAGE_DIGITS or int(raw) < 1:
        raise PageNumberInvalid(
            f"page must be a positive whole number of at most {_PAGE_DIGITS} digits, "
            f"not {raw[:20]!r}."
        )
    return min(int(raw), max(-(-paper_count // per_page), 1))


def author_topics(*, author: Author, limit: int = AUTHOR_SHOWN) -> list[AuthorTopic]:
    """The active topics with accepted assignments of ``author``'s papers (those that count;
    their ``COUNTED_PAPERS`` newest, ``papers.author_selectors.author_counted_paper_ids``),
    most of the author's papers first, then by name; at most ``limit``. One query."""
    rows = (
        # Assignments know whether their paper counts (paper_live); the author's newest paper
        # ids come from their authorships, read newest first.
        Assignment.objects.accepted_live()
        .filter(
            topic__active=True,
            paper_id__in=author_counted_paper_ids(author=author),
        )
        .values("topic_id", "topic__name", "topic__short_name", "topic__slug")
        .annotate(papers=Count("paper_id", distinct=True))
        .order_by("-papers", "topic__name", "topic_id")[:limit]
    )
    topic_url = url_maker("topics:detail", "slug")
    return [
        AuthorTopic(
            name=(
                f"{row['topic__short_name']}: {row['topic__name']}"
                if row["topic__short_name"]
                else row["topic__name"]
            ),
            url=topic_url(row["topic__slug"]),
            papers=row["papers"],
        )
        for row in rows
    ]


def author_momentum(*, author: Author, as_of: dt.date | None = None) -> AuthorMomentum:
    """``author``'s papers in the last four weeks against the four before, and per week over
    12 weeks, on ``as_of`` (default: the newest submitted date among all papers, as a topic's
    momentum). Two queries, one with ``as_of``."""
    if as_of is None:
        as_of = Paper.objects.aggregate(newest=Max("submitted"))["newest"] or timezone.localdate()
    per_day = author_papers_per_day(author=author, since=momentum_days_from(as_of), until=as_of)
    return AuthorMomentum(momentum=momentum_from_days(per_day, as_of=as_of))


def author_page(*, author: Author, page: str | None) -> AuthorPage:
    """:class:`AuthorPage` of ``author`` at ``?page=page`` (``AUTHOR_PAPERS_PER_PAGE`` cards
    a page; see :func:`author_page_number`, whose :class:`PageNumberInvalid` it raises).

    Eight queries whatever the numbers of papers, co-authors, affiliations and topics: the
    paper count, the page's paper ids, the cards (one on PostgreSQL), co-authors,
    affiliations, topics, and the two of the momentum.
    """
    paper_count = author_paper_count(author=author)
    number = author_page_number(page, paper_count=paper_count, per_page=AUTHOR_PAPERS_PER_PAGE)
    ids = author_paper_ids(
        author=author,
        limit=AUTHOR_PAPERS_PER_PAGE + 1,
        offset=(number - 1) * AUTHOR_PAPERS_PER_PAGE,
    )
    has_next, ids = len(ids) > AUTHOR_PAPERS_PER_PAGE, ids[:AUTHOR_PAPERS_PER_PAGE]
    return AuthorPage(
        author=author,
        page=TopicCardPage(
            papers=paper_cards(paper_ids=ids),
            number=number,
            per_page=AUTHOR_PAPERS_PER_PAGE,
            paper_count=paper_count,
            has_next=has_next,
        ),
        coauthors=author_coauthors(author=author, limit=AUTHOR_SHOWN),
        affiliations=author_affiliations(author=author, limit=AUTHOR_SHOWN),
        topics=author_topics(author=author),
        momentum=author_momentum(author=author),
    )
