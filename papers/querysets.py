"""Chainable reads over papers: filter and annotate only, no side effects."""

import datetime as dt

from django.db import models


class PaperQuerySet(models.QuerySet):
    def submitted_between(self, after: dt.date, until: dt.date):
        """Papers submitted in the half-open interval ``(after, until]``."""
        return self.filter(submitted__gt=after, submitted__lte=until)

    def in_category(self, code: str):
        """Papers with ``code`` as primary category or as a cross-list."""
        return self.filter(
            models.Q(primary_category__code=code) | models.Q(cross_lists__code=code)
        ).distinct()

    def newest_first(self):
        return self.order_by("-submitted", "-id")
