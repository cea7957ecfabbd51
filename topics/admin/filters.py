"""List filters of the topics admin: a topic picked down the tree (for assignments and for
papers), score ranges, who decided, and the review queue."""

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.auth import get_user_model
from django.db.models import Exists, OuterRef, Q

from topics.admin.tree import tree_label, tree_order
from topics.models import Assignment, Topic


class TopicTreeListFilter(admin.SimpleListFilter):
    """Pick a topic by walking down the tree: the roots first, then the chosen topic with its
    ancestors and children, so the list stays short on a taxonomy of thousands."""

    title = "topic"
    parameter_name = "topic"

    def _selected(self):
        if not hasattr(self, "_selected_topic"):
            value = self.value()
            try:
                self._selected_topic = Topic.objects.get(pk=int(value)) if value else None
            except (ValueError, Topic.DoesNotExist):
                raise IncorrectLookupParameters(f"No topic has the id {value!r}.") from None
        return self._selected_topic

    def lookups(self, request, model_admin):
        selected = self._selected()
        if selected is None:
            shown = Topic.objects.roots()
        else:
            ancestor_ids = [int(pk) for pk in selected.path.split("/") if pk]
            shown = Topic.objects.filter(Q(pk__in=ancestor_ids) | Q(parent=selected))
        return [(str(topic.pk), tree_label(topic)) for topic in shown.order_by(tree_order())]

    def queryset(self, request, queryset):
        selected = self._selected()
        return queryset if selected is None else self.filter_for(queryset, selected)

    def filter_for(self, queryset, topic):
        raise NotImplementedError


class AssignmentTopicFilter(TopicTreeListFilter):
    """Assignments to the chosen topic itself (its children have their own)."""

    def filter_for(self, queryset, topic):
        return queryset.filter(topic=topic)


class PaperTopicFilter(TopicTreeListFilter):
    """Papers in the chosen topic or a descendant (accepted or pending review), as its topic
    page would gather them."""

    def filter_for(self, queryset, topic):
        in_topic = (
            Assignment.objects.in_subtree(topic)
            .exclude(state=Assignment.State.REJECTED)
            .filter(paper_id=OuterRef("pk"))
        )
        return queryset.filter(Exists(in_topic))


class ScoreRangeFilter(admin.SimpleListFilter):
    """Ranges of the machine score in [0, 1]; curator and import assignments have none."""

    title = "score"
    parameter_name = "score"
    RANGES = {
        "0.9-1": ("0.9 to 1", Q(score__gte=0.9)),
        "0.7-0.9": ("0.7 to 0.9", Q(score__gte=0.7, score__lt=0.9)),
        "0.5-0.7": ("0.5 to 0.7", Q(score__gte=0.5, score__lt=0.7)),
        "0.3-0.5": ("0.3 to 0.5", Q(score__gte=0.3, score__lt=0.5)),
        "0-0.3": ("below 0.3", Q(score__lt=0.3)),
        "none": ("no score", Q(score__isnull=True)),
    }

    def lookups(self, request, model_admin):
        return [(key, label) for key, (label, _) in self.RANGES.items()]

    def queryset(self, request, queryset):
        value = self.value()
        if not value:
            return queryset
        if value not in self.RANGES:
            raise IncorrectLookupParameters(f"Unknown score range {value!r}.")
        return queryset.filter(self.RANGES[value][1])


class DeciderFilter(admin.SimpleListFilter):
    """Who decided: you, any person (curator decisions), no one (machine-made), or one staff
    member."""

    title = "decided by"
    parameter_name = "decider"

    def lookups(self, request, model_admin):
        staff = get_user_model().objects.filter(is_staff=True).order_by("username")
        return [
            ("me", "Me"),
            ("anyone", "Anyone (curator decisions)"),
            ("nobody", "No one (machine-made)"),
            *((str(user.pk), user.get_username()) for user in staff),
        ]

    def queryset(self, request, queryset):
        value = self.value()
        if not value:
            return queryset
        if value == "me":
            return queryset.filter(decided_by=request.user)
        if value == "anyone":
            return queryset.curator_decisions()
        if value == "nobody":
            return queryset.machine_made()
        if not (value.isascii() and value.isdigit()):  # "²" passes isdigit(), not int()
            raise IncorrectLookupParameters(f"Unknown decider {value!r}.")
        return queryset.filter(decided_by_id=int(value))


class ReviewQueueFilter(admin.SimpleListFilter):
    """The review queue: machine assignments left pending that no person has decided (the
    classifier's near a topic's threshold and semantic suggestions for topics whose precision
    is not yet known), and assignments a reader reported as a wrong topic since a curator
    last decided them (``AssignmentQuerySet.reported``). Listed highest score first.
    ``reported`` lists the reported ones alone."""

    title = "review queue"
    parameter_name = "review"
    VALUE = "queue"
    REPORTED = "reported"

    def lookups(self, request, model_admin):
        return [
            (self.VALUE, "Pending machine suggestions and reader reports"),
            (self.REPORTED, "Reported by readers"),
        ]

    def queryset(self, request, queryset):
        value = self.value()
        if value == self.REPORTED:
            return queryset.reported()
        if value != self.VALUE:
            return queryset
        pending = queryset.machine_made().filter(
            decided_at__isnull=True,  # a decision whose curator account was deleted
            source__in=[Assignment.Source.CLASSIFIER, Assignment.Source.SEMANTIC],
            state=Assignment.State.PENDING,
        )
        return pending | queryset.reported()
