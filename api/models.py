"""API tokens: what a third party sends as ``Authorization: Bearer <key>``.

Only a SHA-256 digest of the key is stored. A key is 43 URL-safe characters drawn from 256 random
bits, so a plain (unsalted, fast) digest is as safe as a password hash would be, and it lets a
request be authenticated with one indexed lookup on ``key_prefix`` and a constant-time
comparison of the digests.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q

from topicsite.models import TimeStampedModel


class ApiTokenQuerySet(models.QuerySet):
    def active(self):
        """Tokens that have not been revoked."""
        return self.filter(revoked_at__isnull=True)


class ApiToken(TimeStampedModel):
    """A named API key of ``user``.

    ``key_prefix``: the first 8 characters of the key, shown to tell tokens apart and used to
    find the row; ``key_hash``: the SHA-256 hex digest of the whole key (the key itself is never
    stored). ``last_used_at`` is updated at most once a minute; ``revoked_at`` set means the
    token no longer authenticates (revoking is final).
    """

    PREFIX_LENGTH = 8

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    key_prefix = models.CharField(max_length=PREFIX_LENGTH, db_index=True)
    key_hash = models.CharField(max_length=64, unique=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = "API token"
        constraints = [
            models.CheckConstraint(
                condition=Q(key_hash__regex=r"^[0-9a-f]{64}$"), name="api_token_key_hash_is_sha256"
            ),
        ]

    def __str__(self):
        return f"{self.name} ({self.key_prefix}…) of {self.user}"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class FacetCount(models.Model):
    """How many papers fall in one group of a whole-corpus facet (``api.facet_counts``).

    ``facet`` is one of :class:`Facet`; ``key`` the group as an integer: a category's, topic's
    or author's primary key, the submitted date (or the first day of its year, month or
    Monday week) as days since 1970-01-01, or 0/1 for withdrawn. ``count`` is the number of
    distinct papers in the group, every paper counted (withdrawn and deleted too, as the
    unfiltered paper list shows them). Never written by Python: PostgreSQL triggers on
    papers, assignments and authorships append :class:`FacetCountDelta` rows in the writing
    transaction (days, not periods), and ``api.facet_counts.facet_counts_fold`` adds them in
    here, each day's to its periods too. A group whose count falls to 0 is deleted.
    """

    class Facet(models.TextChoices):
        PRIMARY_CATEGORY = "primary_category"
        SUBMITTED_DAY = "submitted_day"
        SUBMITTED_YEAR = "submitted_year"
        SUBMITTED_MONTH = "submitted_month"
        SUBMITTED_WEEK = "submitted_week"
        WITHDRAWN = "withdrawn"
        TOPIC = "topic"
        AUTHOR = "author"

    facet = models.CharField(max_length=16, choices=Facet.choices)
    key = models.BigIntegerField()
    count = models.BigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["facet", "key"], name="facet_count_unique_key"),
        ]
        indexes = [
            # The top groups of a facet (author: one of a million) as an index range scan.
            models.Index(fields=["facet", "-count", "key"], name="facet_count_top_idx"),
        ]

    def __str__(self):
        return f"{self.facet} {self.key}: {self.count}"


class FacetCountDelta(models.Model):
    """A change to :class:`FacetCount` not added in yet: ``delta`` papers (negative for
    papers gone) in group ``key`` of ``facet``. Appended by triggers (one row per group a
    statement changed), so concurrent writers never wait on each other's counts; removed when
    folded."""

    facet = models.CharField(max_length=16, choices=FacetCount.Facet.choices)
    key = models.BigIntegerField()
    delta = models.BigIntegerField()

    def __str__(self):
        return f"{self.facet} {self.key}: {self.delta:+d}"
