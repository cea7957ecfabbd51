"""Abstract model bases shared by the apps."""

from django.db import models


class TimeStampedModel(models.Model):
    """Adds ``created_at`` (indexed, set once) and ``updated_at`` (set on every save)."""

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True
