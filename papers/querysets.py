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

    def for_cards(self):
        """Everything a paper card shows, in a fixed number of queries whatever the count.

        Prefetches the first three authorships and affiliations; counts beyond them come from
        ``author_count`` and ``affiliation_count``.
        """
        from .models import Authorship, PaperAffiliation

        return self.select_related("primary_category").prefetch_related(
            models.Prefetch(
                "authorships",
                queryset=Authorship.objects.filter(position__lt=3)
                .select_related("author")
                .order_by("position"),
                to_attr="shown_authorships",
            ),
            models.Prefetch(
                "paper_affiliations",
                queryset=PaperAffiliation.objects.filter(position__lt=3)
                .select_related("affiliation")
                .order_by("position"),
                to_attr="shown_affiliations",
            ),
        )
