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
