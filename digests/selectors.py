"""Reads for digests: when a period is due, who is due, which papers a digest would carry and
what its email shows. No side effects.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from allauth.account.models import EmailAddress
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.urls import reverse
from django.utils import timezone

from follows.for_you_selectors import (
    ForYouPick,
    explained_picks,
    for_you_ranking,
    relevance_key,
    saved_closeness,
)
from follows.models import Follow
from follows.selectors import follow_papers, user_follow_matches
from papers.duplicates import duplicate_twins, duplicates_collapse
from topics.cards import PaperCard, paper_cards

from .models import Digest, DigestItem

# Digests that need nothing more from the sweep: delivered, nothing to deliver, being delivered,
# or left for an operator (unconfirmed).
SETTLED_STATUSES = (
    Digest.Status.SENT,
    Digest.Status.EMPTY,
    Digest.Status.SENDING,
    Digest.Status.UNCONFIRMED,
)


def period_end_due(*, period: str, now: dt.datetime) -> dt.date | None:
    """The boundary (a date) of the ``period`` digest due at ``now`` (aware), or None when none
    is due yet: daily digests are due from ``DIGESTS_SEND_HOUR`` (in ``TIME_ZONE``) each day,
    with that day as boundary; weekly ones from that hour on Monday, with the Monday as boundary
    for the rest of the week (so a sweep missed on Monday still sends on Tuesday).

    Raises ValueError for an unknown period.
    """
    local = timezone.localtime(now)
    hour = settings.DIGESTS_SEND_HOUR
    today = local.date()
    if period == Digest.Period.DAILY:
        return today if local.hour >= hour else None
    if period == Digest.Period.WEEKLY:
        monday = today - dt.timedelta(days=today.weekday())
        if today == monday and local.hour < hour:
            return None
        return monday
    raise ValueError(f"Unknown digest period {period!r}; expected daily or weekly.")


def digest_due_users(*, period: str, period_end: dt.date) -> QuerySet:
    """Active users whose email address is verified (allauth's primary ``EmailAddress``, the
    same as ``user.email``) and who have at least one follow with ``period`` as digest
    frequency, whose ``period`` digest for ``period_end`` is not settled yet: none made, or one
    the mail server refused fewer than ``DIGESTS_MAX_ATTEMPTS`` times. Ordered by pk."""
    settled = Digest.objects.filter(period=period, period_end=period_end).filter(
        Q(status__in=SETTLED_STATUSES)
        | Q(status=Digest.Status.FAILED, attempts__gte=settings.DIGESTS_MAX_ATTEMPTS)
    )
    return (
        get_user_model()
        .objects.filter(is_active=True)
        .exclude(email="")
        .filter(
            Exists(
                EmailAddress.objects.filter(
                    user_id=OuterRef("pk"),
                    primary=True,
                    verified=True,
                    email__iexact=OuterRef("email"),
                )
            )
        )
        .filter(pk__in=Follow.objects.filter(digest_frequency=period).values("user_id"))
        .exclude(pk__in=settled.values("user_id"))
        .order_by("pk")
    )


def digest_new_papers(
    *, user, period: str, period_end: dt.date, cutoff: dt.datetime
) -> dict[int, list[int]]:
    """The papers ``user``'s next ``period`` digest carries: for each follow whose digest
    frequency is ``period`` (oldest follow first), the pks of its papers (``follow_papers``)
    stored (``Paper.created_at``) after the follow began and after the previous digest's cutoff
    less ``DIGESTS_WINDOW_OVERLAP_MINUTES``, up to ``cutoff``, and never in an earlier digest of
    the user. A paper that several follows match is listed under the first only. A paper
    stored under two ids (``papers.duplicates``) is carried once: the original when both are
    new, neither when its twin was in an earlier digest.

    Returns ``{follow pk: [paper pk, ...]}`` (newest submitted first) without empty follows;
    one query per follow plus five.
    """
    previous = (
        Digest.objects.filter(
            user=user, period=period, period_end__lt=period_end, cutoff__isnull=False
        )
        .order_by("-period_end")
        .values_list("cutoff", flat=True)
        .first()
    )
    overlap = dt.timedelta(minutes=settings.DIGESTS_WINDOW_OVERLAP_MINUTES)
    already_sent = DigestItem.objects.filter(user=user).values("paper_id")
    chosen: set[int] = set()
    result: dict[int, list[int]] = {}
    follows = Follow.objects.filter(user=user, digest_frequency=period).order_by("created_at", "pk")
    for follow in follows.select_related("topic", "author"):
        since = (
            follow.created_at if previous is None else max(follow.created_at, previous - overlap)
        )
        paper_ids = [
            pk
            for pk in follow_papers(follow=follow)
            .filter(created_at__gt=since, created_at__lte=cutoff)
            .exclude(pk__in=already_sent)
            .order_by("-submitted", "-id")
            .values_list("pk", flat=True)
            if pk not in chosen
        ]
        if paper_ids:
            chosen.update(paper_ids)
            result[follow.pk] = paper_ids
    listed = [pk for paper_ids in result.values() for pk in paper_ids]
    twins_sent = already_sent.filter(paper_id__in=duplicate_twins(listed))
    once = set(duplicates_collapse(listed, already=twins_sent.values_list("paper_id", flat=True)))
    return {
        follow_pk: kept
        for follow_pk, paper_ids in result.items()
        if (kept := [pk for pk in paper_ids if pk in once])
    }


@dataclass
class DigestSection:
    """One follow's part of a digest email: ``papers`` shown (``topics.cards.PaperCard``),
    ``more`` counted but not shown, ``url`` (absolute) of the follow on
    the site, ``unsubscribe_url`` (absolute, set by the email builder). ``follow`` is None for
    papers whose follow was removed since."""

    follow: Follow | None
    label: str
    url: str
    papers: list[PaperCard] = field(default_factory=list)
    more: int = 0
    unsubscribe_url: str = ""


def digest_sections(*, digest: Digest) -> list[DigestSection]:
    """The email content of ``digest`` from its stored items, one section per follow (topics
    first, then authors, then saved searches, each by label), the "For you" picks left out
    (:func:`digest_for_you_papers`), papers most relevant first
    (``follows.for_you_selectors.relevance_key``: more of the reader's follows matching, then
    closer to their saved papers, then newest submitted), at most
    ``DIGESTS_PAPERS_PER_FOLLOW`` shown per follow. Nine queries on PostgreSQL at most (the
    items with their follows, the cards: ``topics.cards.paper_cards``, the follows matching
    them, the vectors), whatever the number of papers."""
    limit = settings.DIGESTS_PAPERS_PER_FOLLOW
    items = list(
        DigestItem.objects.filter(digest=digest, for_you=False).select_related(
            "follow", "follow__topic", "follow__author"
        )
    )
    papers = {
        card.pk: card
        for card in paper_cards(paper_ids=list(dict.fromkeys(item.paper_id for item in items)))
    }
    sections: dict[int | None, DigestSection] = {}
    for item in items:
        if item.paper_id not in papers:  # deleted since the list was read
            continue
        section = sections.get(item.follow_id)
        if section is None:
            section = sections[item.follow_id] = _section(item.follow)
        section.papers.append(papers[item.paper_id])
    ordered = sorted(
        sections.values(),
        key=lambda s: (
            s.follow is None,
            s.follow is not None and s.follow.kind != "topic",
            s.follow is not None and s.follow.kind != "author",
            s.label.casefold(),
        ),
    )
    listed = list(papers)
    matches = user_follow_matches(user=digest.user, paper_ids=listed) if listed else {}
    closeness = saved_closeness(user=digest.user, paper_ids=listed)
    for section in ordered:
        section.papers.sort(
            key=lambda p: relevance_key(
                matched_follows=len(matches.get(p.pk, [])),
                closeness=closeness.get(p.pk),
                submitted=p.submitted,
                pk=p.pk,
            )
        )
        section.more = max(0, len(section.papers) - limit)
        section.papers = section.papers[:limit]
    return ordered


def digest_for_you_picks(*, user, listed: dict[int, list[int]]) -> list[int]:
    """The pks of up to ``DIGESTS_FOR_YOU_PICKS`` "For you" picks for ``user``'s digest, best
    first (``follows.for_you_selectors.for_you_ranking``): never a paper of ``listed`` (the
    digest's ``{follow pk: [paper pk, ...]}``), nor its twin stored under another id, nor a
    paper an earlier digest sent. A fixed number of queries; empty when the setting is 0."""
    count = settings.DIGESTS_FOR_YOU_PICKS
    if not count:
        return []
    listed_ids = {pk for paper_ids in listed.values() for pk in paper_ids}
    excluded = listed_ids | duplicate_twins(listed_ids)
    excluded |= set(DigestItem.objects.filter(user=user).values_list("paper_id", flat=True))
    ranking = for_you_ranking(user=user, exclude_ids=excluded)
    return [pk for pk, _ in ranking.ranked if pk not in excluded][:count]


def digest_for_you_papers(*, digest: Digest) -> list[ForYouPick]:
    """``digest``'s stored "For you" picks in the order they were picked, each with its card
    and why it is for the reader (``follows.for_you_selectors.explained_picks``: the saved
    paper it is close to, the follows it matches). Ten queries on PostgreSQL at most."""
    ids = list(
        DigestItem.objects.filter(digest=digest, for_you=True)
        .order_by("pk")
        .values_list("paper_id", flat=True)
    )
    return explained_picks(user=digest.user, paper_ids=ids)


def _section(follow: Follow | None) -> DigestSection:
    site = settings.SITE_URL
    if follow is None:
        return DigestSection(
            follow=None, label="A follow you have removed", url=site + reverse("feed:index")
        )
    if follow.kind == Follow.Kind.TOPIC:
        return DigestSection(
            follow=follow, label=follow.label, url=site + follow.topic.get_absolute_url()
        )
    if follow.kind == Follow.Kind.AUTHOR:
        return DigestSection(
            follow=follow, label=follow.label, url=site + follow.author.get_absolute_url()
        )
    return DigestSection(follow=follow, label=follow.label, url=site + reverse("feed:index"))
