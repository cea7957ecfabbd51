"""Digest deliveries: one :class:`Digest` per user, period and scheduled boundary, and the
papers it carried (:class:`DigestItem`).

The unique (user, period, period_end) key is what makes a retried or duplicated task harmless:
every attempt claims the same row, and its ``status`` says whether there is anything left to do.
The unique (user, paper) key on items is what keeps a paper out of every later digest of that
user, whichever follow or period it came through.
"""

from django.conf import settings
from django.db import models

from follows.models import Follow
from papers.models import Paper
from topicsite.models import TimeStampedModel


class Digest(TimeStampedModel):
    """The delivery record of one digest email.

    - ``period`` (daily | weekly) and ``period_end``: the scheduled boundary it is for (the day
      for daily digests, the Monday for weekly ones);
    - ``status``: pending (claimed, papers being chosen) → sending (papers chosen and stored as
      items, handing the email to the mail server) → sent; or empty (no new papers: nothing is
      sent); or failed (the mail server refused or could not be reached: retried from the stored
      items); or unconfirmed (an attempt stopped while sending, so the email may or may not have
      gone: never resent automatically, an operator decides in the admin);
    - ``cutoff``: papers stored up to this moment were considered (the next digest of the period
      starts from here, less an overlap);
    - ``message_id``: the Message-ID header sent, to look the delivery up in the mail server's log.
    """

    class Period(models.TextChoices):
        DAILY = "daily", "Daily"
        WEEKLY = "weekly", "Weekly"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        SENDING = "sending", "Sending"
        SENT = "sent", "Sent"
        EMPTY = "empty", "Empty (nothing sent)"
        FAILED = "failed", "Failed (will be retried)"
        UNCONFIRMED = "unconfirmed", "Unconfirmed (stopped while sending)"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="digests"
    )
    period = models.CharField(max_length=8, choices=Period.choices)
    period_end = models.DateField(help_text="The scheduled boundary: the day, or the Monday.")
    status = models.CharField(
        max_length=12, choices=Status.choices, default=Status.PENDING, db_index=True
    )
    cutoff = models.DateTimeField(null=True, blank=True)
    sending_started_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    paper_count = models.PositiveIntegerField(default=0)
    follow_count = models.PositiveIntegerField(default=0)
    attempts = models.PositiveSmallIntegerField(default=0)
    message_id = models.CharField(max_length=255, blank=True)
    last_error = models.TextField(blank=True)

    class Meta:
        ordering = ["-period_end", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "period", "period_end"], name="unique_digest_per_period"
            ),
        ]

    def __str__(self):
        return f"{self.get_period_display()} digest for {self.user} ending {self.period_end}"


class DigestItem(models.Model):
    """``paper`` went out to ``user`` in ``digest``, listed under ``follow``.

    ``user`` repeats ``digest.user`` so that the database itself refuses the same paper twice
    across a user's digests. ``follow`` is kept null when the follow is later removed, so the
    paper still counts as delivered. ``for_you``: a pick of the digest's "For you" section
    (``follows.for_you_selectors``; ``follow`` null), not a paper of a follow.
    """

    digest = models.ForeignKey(Digest, on_delete=models.CASCADE, related_name="items")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="digest_items"
    )
    paper = models.ForeignKey(Paper, on_delete=models.CASCADE, related_name="digest_items")
    follow = models.ForeignKey(
        Follow, on_delete=models.SET_NULL, null=True, blank=True, related_name="digest_items"
    )
    for_you = models.BooleanField(default=False)

    class Meta:
        ordering = ["digest", "id"]
        constraints = [
            models.UniqueConstraint(fields=["user", "paper"], name="unique_digest_paper_per_user"),
        ]
        indexes = [models.Index(fields=["digest", "follow"], name="digestitem_digest_follow_idx")]

    def __str__(self):
        return f"{self.paper_id} in digest {self.digest_id}"
