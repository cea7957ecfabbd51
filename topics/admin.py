"""Admin for curators: topics (with their rules) and assignments (accept / reject / add).

Every write goes through ``topics.services``, so ``Topic.path`` stays right and curator
decisions are recorded with who made them and when.
"""

from django import forms
from django.contrib import admin, messages
from django.db import transaction

from papers.models import Paper

from .models import Assignment, Topic
from .rules import RuleSyntaxError, compile_rule
from .services import (
    assignment_add,
    assignment_decide,
    papers_tag_enqueue,
    topic_create,
    topic_move,
)

# Every column of a topic but its key, its path and its creation time.
EDITABLE_TOPIC_FIELDS = [
    field.name
    for field in Topic._meta.concrete_fields
    if not field.primary_key and field.name not in ("path", "created_at")
]


class TopicAdminForm(forms.ModelForm):
    """Checks the rule query with the rule parser and refuses a parent inside the topic."""

    class Meta:
        model = Topic
        fields = [
            "name",
            "short_name",
            "slug",
            "parent",
            "description",
            "active",
            "rule_query",
            "rule_categories",
        ]

    def clean_rule_query(self):
        rule_query = self.cleaned_data["rule_query"]
        try:
            compile_rule(rule_query)
        except RuleSyntaxError as error:
            raise forms.ValidationError(str(error), code="rule_syntax") from None
        return rule_query

    def clean_parent(self):
        parent = self.cleaned_data["parent"]
        topic = self.instance
        if parent is not None and topic.pk is not None and parent.path.startswith(topic.path):
            raise forms.ValidationError(
                f"{parent.name!r} is this topic or one of its descendants.", code="cycle"
            )
        return parent


@admin.register(Topic)
class TopicAdmin(admin.ModelAdmin):
    form = TopicAdminForm
    list_display = ["name", "short_name", "parent", "active", "path"]
    list_filter = ["active"]
    list_select_related = ["parent"]
    search_fields = ["name", "short_name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    autocomplete_fields = ["parent"]
    filter_horizontal = ["rule_categories"]
    readonly_fields = ["path", "created_at", "updated_at"]
    fieldsets = [
        (None, {"fields": ["name", "short_name", "slug", "parent", "description", "active"]}),
        ("Rule", {"fields": ["rule_query", "rule_categories"]}),
        ("Record", {"fields": ["path", "created_at", "updated_at"]}),
    ]
    actions = ["retag_all_papers"]

    def save_model(self, request, obj, form, change):
        if not change:
            created = topic_create(
                name=obj.name,
                slug=obj.slug,
                parent=obj.parent,
                short_name=obj.short_name,
                description=obj.description,
                rule_query=obj.rule_query,
                active=obj.active,
            )
            # The form saves rule_categories next, onto its own instance: give it the row.
            obj.pk = created.pk
            obj.refresh_from_db()
            return
        with transaction.atomic():
            new_parent = obj.parent
            # Save the other fields under the stored parent; topic_move then rewrites the paths.
            obj.parent_id = Topic.objects.values_list("parent_id", flat=True).get(pk=obj.pk)
            # Never write ``path`` from the form's copy: a concurrent move may have changed it.
            obj.save(update_fields=EDITABLE_TOPIC_FIELDS)
            if obj.parent_id != (new_parent.pk if new_parent else None):
                topic_move(topic=obj, parent=new_parent)

    @admin.action(description="Re-tag every paper (queue tagging tasks)")
    def retag_all_papers(self, request, queryset):
        result = papers_tag_enqueue(
            paper_ids=Paper.objects.order_by("pk").values_list("pk", flat=True).iterator()
        )
        self.message_user(
            request,
            f"Queued tagging of {result.papers} papers in {result.chunks} tasks.",
            messages.SUCCESS,
        )


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["paper", "topic", "source", "state", "score", "decided_by", "decided_at"]
    list_filter = ["topic", "source", "state"]
    list_select_related = ["paper", "topic", "decided_by"]
    search_fields = ["=paper__arxiv_id", "paper__title", "topic__name"]
    raw_id_fields = ["paper"]
    autocomplete_fields = ["topic"]
    actions = ["accept", "reject"]
    show_full_result_count = False

    def get_fields(self, request, obj=None):
        if obj is None:
            # A curator adds a paper to a topic; the service fills in the rest.
            return ["paper", "topic"]
        return ["paper", "topic", "source", "state", "score", "decided_by", "decided_at"]

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        return ["paper", "topic", "source", "score", "decided_by", "decided_at"]

    def save_model(self, request, obj, form, change):
        if change:
            assignment_decide(assignment=obj, state=obj.state, user=request.user)
            return
        added = assignment_add(paper=obj.paper, topic=obj.topic, user=request.user)
        obj.pk = added.pk
        obj.refresh_from_db()

    def _decide(self, request, queryset, state):
        count = 0
        for assignment in queryset.select_related("topic"):
            assignment_decide(assignment=assignment, state=state, user=request.user)
            count += 1
        self.message_user(
            request, f"{count} assignment(s) marked {state} by you.", messages.SUCCESS
        )

    @admin.action(description="Accept selected assignments (curator decision)")
    def accept(self, request, queryset):
        self._decide(request, queryset, Assignment.State.ACCEPTED)

    @admin.action(description="Reject selected assignments (curator decision)")
    def reject(self, request, queryset):
        self._decide(request, queryset, Assignment.State.REJECTED)
