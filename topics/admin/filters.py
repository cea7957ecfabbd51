"""List filters of the topics admin: a topic picked down the tree (for assignments and for
papers), score ranges, who decided, and the review queue."""

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.auth import get_user_model
from django.db.models import Exists, OuterRef, Q

from topics.admin.tree import tree_depth, tree_label, tree_order
from topics.models import Assignment, Topic
from topicsite.admin_site import CURATORS_GROUP


class TopicTreeListFilter(admin.SimpleListFilter):
    """Pick a topic from the whole tree: every topic, each after its parent, siblings by name,
    indented by depth (``topics.admin.tree``). An unknown or malformed id is refused with a
    message naming it (the admin's "invalid lookup" page, not a 500)."""

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
        self._selected()  # a bad ?topic= is refused before the list is built
        topics = Topic.objects.only("pk", "name", "short_name", "path", "active")
        # Indented with em spaces, which browsers keep; the names still wrap between words.
        return [
            (str(topic.pk), "\u2003" * tree_depth(topic) + tree_label(topic).lstrip(" "))
            for topic in topics.order_by(tree_order())
        ]

    def queryset(self, request, queryset):
        selected = self._selected()
        return queryset if selected is None else self.filter_for(queryset, selected)

    def filter_for(self, queryset, topic):
        raise NotImplementedError


class AssignmentTopicFilter(TopicTreeListFilter):
    """Assignments to the chosen topic or any of its descendants (a parent's list holds its
    children's assignments, as its topic page holds their papers)."""

    def filter_for(self, queryset, topic):
        return queryset.filter(topic__in=Topic.objects.subtree(topic))


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
    member or curator."""

    title = "decided by"
    parameter_name = "decider"

    def lookups(self, request, model_admin):
        staff = (
            get_user_model()
            .objects.filter(Q(is_staff=True) | Q(groups__name=CURATORS_GROUP))
            .distinct()
            .order_by("username")
        )
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
