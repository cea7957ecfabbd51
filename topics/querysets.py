"""Chainable reads over topics and assignments: filter and annotate only."""

from django.db import models
from django.db.models import Exists, OuterRef, Q


def _subtree_prefix(topic) -> str:
    """The path prefix of ``topic``'s subtree; an empty path would match every row, so refuse it."""
    if not topic.path:
        raise ValueError(
            f"topic {topic.pk} has no path; create and move topics via topics.services"
        )
    return topic.path


class TopicQuerySet(models.QuerySet):
    def active(self):
        return self.filter(active=True)

    def roots(self):
        return self.filter(parent__isnull=True)

    def subtree(self, topic):
        """``topic`` and all its descendants."""
        return self.filter(path__startswith=_subtree_prefix(topic))


class AssignmentQuerySet(models.QuerySet):
    def accepted(self):
        return self.filter(state="accepted")

    def accepted_live(self):
        """Accepted assignments of papers that count (neither withdrawn nor deleted:
        ``paper_live``, copied from ``papers.querysets.LIVE`` by triggers): what counts,
        momentum, "latest papers", feeds and digests read."""
        return self.filter(state="accepted", paper_live=True)

    def in_subtree(self, topic):
        """Assignments to ``topic`` or any of its descendants."""
        return self.filter(topic__path__startswith=_subtree_prefix(topic))

    def curator_decisions(self):
        return self.filter(decided_by__isnull=False)

    def machine_made(self):
        """Assignments no person has decided: the only ones re-tagging may change."""
        return self.filter(decided_by__isnull=True)

    def reported(self):
        """Assignments a reader reported as a wrong topic since a curator last decided them
        (or never decided): an open report (``topics.models.AssignmentReport``)."""
        reports = self.model._meta.get_field("reports").related_model  # no import cycle
        open_reports = reports.objects.filter(assignment_id=OuterRef("pk")).filter(
            Q(created_at__gt=OuterRef("decided_at")) | Q(assignment__decided_at__isnull=True)
        )
        return self.filter(Exists(open_reports))
