"""Writes for digests: sending one user's digest for a period, and unsubscribing from links.

How a digest is sent at most once (:func:`digest_send`):

1. **Claim** (one transaction, the :class:`Digest` row locked): the row for (user, period,
   period_end) is made or found. A first attempt chooses the papers, stores them as
   :class:`DigestItem` rows (unique per user and paper, so never twice), with up to
   ``DIGESTS_FOR_YOU_PICKS`` "For you" picks the follows did not bring, and the ``cutoff``; with
   no papers the digest is ``empty`` and nothing is sent. Otherwise it becomes ``sending``
   (with ``sending_started_at``, one more ``attempts``, a ``message_id``) and commits.
2. **Send**, outside any transaction: the email is rendered from the stored items and handed to
   Django's email backend. If that raises, the digest becomes ``failed`` and the error is
   re-raised (the task retries; a retry sends the same stored papers again).
3. **Mark sent** (``sent``, ``sent_at``).

A process that dies between the mail server accepting the message and step 3 leaves the digest
``sending``. Nothing then resends it blindly: another attempt finding it ``sending`` does
nothing, and once it is older than ``DIGESTS_SENDING_STALE_MINUTES`` it becomes
``unconfirmed`` (by the next attempt or the hourly sweep). An operator looks its
``message_id`` up in the mail server's log and, if it never left, uses the admin's "Send
again". We prefer a rare missing digest that an operator can see to a duplicate email.
"""

from __future__ import annotations

import datetime as dt
import logging
from email.utils import make_msgid
from urllib.parse import urlsplit

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.db import transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from follows.models import Follow

from .models import Digest, DigestItem
from .selectors import (
    digest_for_you_papers,
    digest_for_you_picks,
    digest_new_papers,
    digest_sections,
)
from .tokens import UnsubscribeTarget, unsubscribe_token_make

logger = logging.getLogger(__name__)


def digest_send(*, user, period: str, period_end: dt.date) -> Digest:
    """Send ``user`` their ``period`` digest for the boundary ``period_end`` unless it was
    sent, found empty, is being sent or was left unconfirmed; return the :class:`Digest`.

    Safe to call any number of times, concurrently too: at most one email per (user, period,
    period_end) goes out. Raises ValueError for an unknown period or a user without an email
    address; re-raises what the email backend raised (``smtplib.SMTPException``,
    ``OSError``) after marking the digest failed.
    """
    if period not in Digest.Period.values:
        raise ValueError(f"Unknown digest period {period!r}; expected daily or weekly.")
    if not user.email:
        raise ValueError(f"User {user.pk} has no email address to send a digest to.")
    digest, send = _digest_claim(user=user, period=period, period_end=period_end)
    if not send:
        return digest
    try:
        _digest_email(digest=digest).send()
    except Exception as error:
        Digest.objects.filter(pk=digest.pk, status=Digest.Status.SENDING).update(
            status=Digest.Status.FAILED, last_error=repr(error)[:2000], updated_at=timezone.now()
        )
        logger.warning("Digest %s to user %s failed: %r", digest.pk, user.pk, error)
        raise
    now = timezone.now()
    Digest.objects.filter(pk=digest.pk).update(
        status=Digest.Status.SENT, sent_at=now, last_error="", updated_at=now
    )
    digest.refresh_from_db()
    return digest


@transaction.atomic
def _digest_claim(*, user, period: str, period_end: dt.date) -> tuple[Digest, bool]:
    """Step 1 of :func:`digest_send`: returns the digest and whether to send it now."""
    now = timezone.now()
    digest, _ = Digest.objects.get_or_create(user=user, period=period, period_end=period_end)
    digest = Digest.objects.select_for_update().get(pk=digest.pk)
    status = digest.status
    if status in (Digest.Status.SENT, Digest.Status.EMPTY, Digest.Status.UNCONFIRMED):
        return digest, False
    if status == Digest.Status.SENDING:
        if digest.sending_started_at > now - _stale_after():
            return digest, False
        digest.status = Digest.Status.UNCONFIRMED
        digest.save(update_fields=["status", "updated_at"])
        logger.warning(
            "Digest %s (Message-ID %s) was left sending since %s; marked unconfirmed, not resent.",
            digest.pk,
            digest.message_id,
            digest.sending_started_at,
        )
        return digest, False
    if status == Digest.Status.FAILED and digest.attempts >= settings.DIGESTS_MAX_ATTEMPTS:
        return digest, False
    if status == Digest.Status.PENDING:
        if not _digest_fill(digest=digest, cutoff=now):
            digest.status = Digest.Status.EMPTY
            digest.save(update_fields=["status", "cutoff", "updated_at"])
            return digest, False
    digest.status = Digest.Status.SENDING
    digest.sending_started_at = now
    digest.attempts += 1
    digest.save(
        update_fields=[
            "status",
            "cutoff",
            "paper_count",
            "follow_count",
            "message_id",
            "sending_started_at",
            "attempts",
            "updated_at",
        ]
    )
    return digest, True


def _digest_fill(*, digest: Digest, cutoff: dt.datetime) -> bool:
    """Choose and store ``digest``'s papers (in the caller's transaction); True if any."""
    chosen = digest_new_papers(
        user=digest.user, period=digest.period, period_end=digest.period_end, cutoff=cutoff
    )
    # A concurrent digest of the user's other period may store the same paper first: the
    # unique (user, paper) key keeps it there, and this digest goes without it.
    DigestItem.objects.bulk_create(
        [
            DigestItem(digest=digest, user_id=digest.user_id, paper_id=paper_id, follow_id=follow)
            for follow, paper_ids in chosen.items()
            for paper_id in paper_ids
        ],
        ignore_conflicts=True,
    )
    if chosen:
        picks = digest_for_you_picks(user=digest.user, listed=chosen)
        DigestItem.objects.bulk_create(
            [
                DigestItem(digest=digest, user_id=digest.user_id, paper_id=paper_id, for_you=True)
                for paper_id in picks
            ],
            ignore_conflicts=True,
        )
    digest.cutoff = cutoff
    # The counts (and the subject) are of the follows' papers; the picks come on top.
    items = DigestItem.objects.filter(digest=digest, for_you=False)
    digest.paper_count = items.count()
    digest.follow_count = items.values("follow_id").distinct().count()
    host = urlsplit(settings.SITE_URL).hostname or "localhost"
    digest.message_id = make_msgid(idstring=f"digest.{digest.pk}", domain=host)
    return digest.paper_count > 0


def _stale_after() -> dt.timedelta:
    return dt.timedelta(minutes=settings.DIGESTS_SENDING_STALE_MINUTES)


def digests_mark_unconfirmed() -> int:
    """Mark every digest left ``sending`` longer than ``DIGESTS_SENDING_STALE_MINUTES``
    ``unconfirmed`` (one conditional UPDATE); returns how many. They are not resent."""
    stale = timezone.now() - _stale_after()
    count = Digest.objects.filter(
        status=Digest.Status.SENDING, sending_started_at__lt=stale
    ).update(status=Digest.Status.UNCONFIRMED, updated_at=timezone.now())
    if count:
        logger.warning("%s digests were left sending; marked unconfirmed, not resent.", count)
    return count


@transaction.atomic
def digests_send_again(*, digest_ids: list[int]) -> list[int]:
    """Let the digests ``digest_ids`` (pks) that failed or were left unconfirmed be sent again,
    with the papers they already hold (status failed, attempts reset); returns the pks changed.
    Sent, empty and sending digests are left alone."""
    digests = Digest.objects.select_for_update().filter(
        pk__in=digest_ids, status__in=[Digest.Status.FAILED, Digest.Status.UNCONFIRMED]
    )
    changed = list(digests.values_list("pk", flat=True))
    Digest.objects.filter(pk__in=changed).update(
        status=Digest.Status.FAILED, attempts=0, updated_at=timezone.now()
    )
    return changed


def _digest_email(*, digest: Digest) -> EmailMultiAlternatives:
    """The digest email (plain text and HTML alternatives) from ``digest``'s stored items,
    with List-Unsubscribe (RFC 2369) and List-Unsubscribe-Post (RFC 8058) headers."""
    user = digest.user
    site = settings.SITE_URL
    sections = digest_sections(digest=digest)
    for_you = digest_for_you_papers(digest=digest)
    for section in sections:
        section.unsubscribe_url = (
            _unsubscribe_url(user=user, follow=section.follow) if section.follow else ""
        )
    unsubscribe_all_url = _unsubscribe_url(user=user, follow=None)
    context = {
        "digest": digest,
        "user": user,
        "sections": sections,
        "for_you": for_you,
        "for_you_url": site + reverse("for_you:index"),
        "site_url": site,
        "manage_url": site + reverse("follows:list"),
        "unsubscribe_all_url": unsubscribe_all_url,
    }
    papers = "paper" if digest.paper_count == 1 else "papers"
    follows = "follow" if digest.follow_count == 1 else "follows"
    message = EmailMultiAlternatives(
        subject=f"topicsite: {digest.paper_count} new {papers} in {digest.follow_count} {follows}",
        body=render_to_string("digests/email/digest.txt", context),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[user.email],
        headers={
            "Message-ID": digest.message_id,
            "List-Unsubscribe": f"<{unsubscribe_all_url}>",
            "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
            "Auto-Submitted": "auto-generated",
        },
    )
    message.attach_alternative(render_to_string("digests/email/digest.html", context), "text/html")
    return message


def _unsubscribe_url(*, user, follow: Follow | None) -> str:
    token = unsubscribe_token_make(user=user, follow=follow)
    return settings.SITE_URL + reverse("digests:unsubscribe", kwargs={"token": token})


@transaction.atomic
def digest_unsubscribe(*, target: UnsubscribeTarget) -> list[Follow]:
    """Turn digests off for ``target`` (one follow, or every follow of the user): their
    ``digest_frequency`` becomes off. Returns the follows concerned, by label. Idempotent."""
    follows = Follow.objects.filter(user=target.user)
    if target.follow is not None:
        follows = follows.filter(pk=target.follow.pk)
    follows.exclude(digest_frequency=Follow.Frequency.OFF).update(
        digest_frequency=Follow.Frequency.OFF, updated_at=timezone.now()
    )
    return sorted(follows.select_related("topic", "author"), key=lambda f: f.label.casefold())
