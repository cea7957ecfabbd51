"""Admin of the topic tree: the topic form (rule check and preview), counts per state, and the
rename / merge / move / re-tag actions. Every write goes through ``topics.services`` (topic
writes) or ``topics.tagging`` so ``Topic.path`` stays right and every change has a history
row."""

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import flatten_fieldsets, unquote
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count, IntegerField, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import urlencode
from django.utils.text import Truncator
from simple_history.admin import SimpleHistoryAdmin

from papers.models import Paper
from topics.admin.history import assignment_history_rows, assignment_history_table
from topics.admin.tree import TopicTreeChoiceField, tree_depth, tree_order
from topics.models import Assignment, Topic
from topics.services import (
    topic_create,
    topic_history_record,
    topic_merge,
    topic_move,
    topic_rename,
    topic_slug_validate,
)
from topics.tagging.engine import papers_tag_enqueue
from topics.tagging.preview import rule_preview
from topics.tagging.rules import RuleSyntaxError, compile_rule
from topicsite.admin_actions import action_page

# Every column of a topic but its key, its path and its creation time.
EDITABLE_TOPIC_FIELDS = [
    field.name
    for field in Topic._meta.concrete_fields
    if not field.primary_key and field.name not in ("path", "created_at")
]


def _topic_items(queryset):
    return [
        f"{topic.display_name} (/topics/{topic.slug}/)" for topic in queryset.order_by(tree_order())
    ]


class TopicAdminForm(forms.ModelForm):
    """Checks the rule query with the rule parser (the error gives the position), refuses a
    parent inside the topic and a slug that is another topic's old address."""

    class Meta:
        model = Topic
        fields = [
            "name",
            "short_name",
            "slug",
            "parent",
            "description",
            "keywords",
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

    def clean_slug(self):
        slug = self.cleaned_data["slug"]
        try:
            topic_slug_validate(slug=slug, topic=self.instance if self.instance.pk else None)
        except ValidationError as error:
            raise forms.ValidationError(error.message_dict["slug"], code="slug") from None
        return slug

    def clean_parent(self):
        parent = self.cleaned_data["parent"]
        topic = self.instance
        if parent is not None and topic.pk is not None and parent.path.startswith(topic.path):
            raise forms.ValidationError(
                f"{parent.name!r} is this topic or one of its descendants.", code="cycle"
            )
        return parent


class TopicRenameForm(forms.Form):
    """The rename action's form: a new name, short name and, optionally, a new slug."""

    name = forms.CharField(max_length=200)
    short_name = forms.CharField(max_length=32, required=False)
    slug = forms.SlugField(
        max_length=200,
        required=False,
        help_text="The new address; blank: made from the name. The old one will redirect.",
    )


class TopicMergeForm(forms.Form):
    """The merge action's form: the topic the selected ones merge into."""

    target = TopicTreeChoiceField(
        label="Merge into",
        help_text=(
            "The topic that stays. If it is one of the selected topics, the others merge into "
            "it. Assignments move (curator decisions kept), child topics move under it, "
            "follows move, and the merged topics' addresses redirect to it."
        ),
    )


class TopicMoveForm(forms.Form):
    """The move action's form: the new parent, or none for top-level topics."""

    parent = TopicTreeChoiceField(
        label="New parent", required=False, empty_label="(none: make them top-level topics)"
    )


def _state_count(state: str):
    """The number of assignments in ``state`` of the outer topic: a correlated subquery on the
    (topic, state) index, evaluated for the listed rows only."""
    per_topic = (
        Assignment.objects.filter(topic=OuterRef("pk"), state=state)
        .order_by()
        .values("topic")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(per_topic, output_field=IntegerField()), Value(0))


@admin.register(Topic)
class TopicAdmin(SimpleHistoryAdmin):
    """The topic tree with assignment counts per state; the form checks and previews the rule;
    saves, renames, merges and moves go through the services and are in the topic's
    history."""

    form = TopicAdminForm
    change_form_template = "admin/topics/topic/change_form.html"

    class Media:
        css = {"all": ["css/admin.css"]}  # columns that fit 1280 px (static/css/admin.css)

    list_display = [
        "tree_name",
        "short_name",
        "parent",
        "rule",
        "accepted_count",
        "pending_count",
        "rejected_count",
        "active",
    ]
    list_filter = ["active"]
    list_select_related = ["parent"]
    list_per_page = 200
    search_fields = ["name", "short_name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    autocomplete_fields = ["parent"]
    filter_horizontal = ["rule_categories"]
    readonly_fields = ["path", "created_at", "updated_at", "recent_assignment_changes"]
    actions = ["rename_topic", "merge_topics", "move_topics", "retag_all_papers"]
    history_list_display = ["parent", "rule_query", "active"]

    def get_fieldsets(self, request, obj=None):
        fieldsets = [
            (
                None,
                {
                    "fields": [
                        "name",
                        "short_name",
                        "slug",
                        "parent",
                        "description",
                        "keywords",
                        "active",
                    ]
                },
            ),
            (
                "Rule",
                {
                    "fields": ["rule_query", "rule_categories"],
                    "description": (
                        "Keywords over title and abstract: phrases in quotes, OR, NOT (or -), "
                        "parentheses, word* for a prefix; and, optionally, arXiv categories "
                        "(primary or cross-list). “Preview rule” below shows what it matches "
                        "before you save."
                    ),
                },
            ),
            ("Record", {"fields": ["path", "created_at", "updated_at"]}),
        ]
        if obj is not None:
            fieldsets.append(
                ("Assignment history", {"fields": ["recent_assignment_changes"]}),
            )
        return fieldsets

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(
                accepted_count=_state_count(Assignment.State.ACCEPTED),
                pending_count=_state_count(Assignment.State.PENDING),
                rejected_count=_state_count(Assignment.State.REJECTED),
            )
            .prefetch_related("rule_categories")
        )

    def get_ordering(self, request):
        return [tree_order()]

    # --- columns

    @admin.display(description="topic", ordering=tree_order())
    def tree_name(self, topic):
        # Indented with em and en spaces, not a style attribute: the site's
        # Content-Security-Policy blocks inline styles (settings/base.py, security).
        return format_html(
            "{}{}{}",
            "\u2003\u2002" * tree_depth(topic),
            "└ " if tree_depth(topic) else "",
            topic.name,
        )

    @admin.display(description="rule")
    def rule(self, topic):
        codes = ", ".join(category.code for category in topic.rule_categories.all())
        query = Truncator(topic.rule_query).chars(80)
        return " in ".join(part for part in (query, codes) if part) or "—"

    def _count_link(self, topic, state: str, count: int):
        query = urlencode({"topic": topic.pk, "state__exact": state})
        return format_html(
            '<a href="{}?{}">{}</a>', reverse("admin:topics_assignment_changelist"), query, count
        )

    @admin.display(description="accepted", ordering="accepted_count")
    def accepted_count(self, topic):
        return self._count_link(topic, Assignment.State.ACCEPTED, topic.accepted_count)

    @admin.display(description="pending review", ordering="pending_count")
    def pending_count(self, topic):
        return self._count_link(topic, Assignment.State.PENDING, topic.pending_count)

    @admin.display(description="rejected", ordering="rejected_count")
    def rejected_count(self, topic):
        return self._count_link(topic, Assignment.State.REJECTED, topic.rejected_count)

    @admin.display(description="latest changes to its assignments")
    def recent_assignment_changes(self, topic):
        return assignment_history_table(
            assignment_history_rows(topic_id=topic.pk), show_paper=True, show_topic=False
        )

    # --- saving through the services

    def save_model(self, request, obj, form, change):
        if not change:
            created = topic_create(
                name=obj.name,
                slug=obj.slug,
                parent=obj.parent,
                short_name=obj.short_name,
                description=obj.description,
                keywords=obj.keywords,
                rule_query=obj.rule_query,
                active=obj.active,
            )
            # The form saves rule_categories next, onto its own instance: give it the row.
            obj.pk = created.pk
            obj.refresh_from_db()
            return
        with transaction.atomic():
            stored = Topic.objects.select_for_update().get(pk=obj.pk)
            changed = set(form.changed_data)
            if "slug" in changed:
                # A new address: the old one must keep answering (with a 301).
                topic_rename(
                    topic=stored,
                    name=obj.name,
                    slug=obj.slug,
                    short_name=obj.short_name,
                    user=request.user,
                )
            new_parent = obj.parent
            # Save the other fields under the stored parent; topic_move then rewrites the paths.
            obj.parent_id = stored.parent_id
            # Never write ``path`` from the form's copy: a concurrent move may have changed it.
            obj.save(update_fields=EDITABLE_TOPIC_FIELDS)
            if obj.parent_id != (new_parent.pk if new_parent else None):
                topic_move(topic=obj, parent=new_parent)
                topic_history_record(topic=obj, user=request.user, reason="moved")

    # --- the rule preview

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        if request.method == "POST" and "_preview_rule" in request.POST:
            return self._rule_preview_view(request, object_id, form_url, extra_context)
        return super().changeform_view(request, object_id, form_url, extra_context)

    def _rule_preview_view(self, request, object_id, form_url, extra_context):
        """The change (or add) form again, with what was typed and, when the rule parses, the
        count and a sample of the stored papers it matches. Nothing is saved."""
        add = object_id is None
        obj = None
        if add:
            if not self.has_add_permission(request):
                raise PermissionDenied
        else:
            obj = self.get_object(request, unquote(object_id))
            if obj is None:
                return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
            if not self.has_change_permission(request, obj):
                raise PermissionDenied
        subtitle = str(obj) if obj else None
        fieldsets = self.get_fieldsets(request, obj)
        form_class = self.get_form(
            request, obj, change=not add, fields=flatten_fieldsets(fieldsets)
        )
        form = form_class(request.POST, request.FILES, instance=obj)
        form.is_valid()
        preview = None
        if "rule_query" not in form.errors and "rule_categories" not in form.errors:
            preview = rule_preview(
                query=form.cleaned_data.get("rule_query", ""),
                categories=form.cleaned_data.get("rule_categories", []),
            )
        admin_form = helpers.AdminForm(
            form,
            list(fieldsets),
            self.get_prepopulated_fields(request, obj),
            self.get_readonly_fields(request, obj),
            model_admin=self,
        )
        context = {
            **self.admin_site.each_context(request),
            "title": ("Add %s" if add else "Change %s") % self.opts.verbose_name,
            "subtitle": subtitle,
            "adminform": admin_form,
            "object_id": object_id,
            "original": obj,
            "is_popup": False,
            "to_field": None,
            "media": self.media + admin_form.media,
            "inline_admin_formsets": [],
            "errors": helpers.AdminErrorList(form, []),
            "preserved_filters": self.get_preserved_filters(request),
            "rule_preview": preview,
            **(extra_context or {}),
        }
        return self.render_change_form(
            request, context, add=add, change=not add, obj=obj, form_url=form_url
        )

    # --- actions

    @admin.action(description="Rename the selected topic…", permissions=["change"])
    def rename_topic(self, request, queryset):
        topics = list(queryset[:2])
        if len(topics) != 1:
            self.message_user(request, "Select exactly one topic to rename.", messages.ERROR)
            return None
        topic = topics[0]
        form = TopicRenameForm(
            request.POST if "apply" in request.POST else None,
            initial={"name": topic.name, "short_name": topic.short_name, "slug": ""},
        )
        if form.is_bound and form.is_valid():
            old_url = topic.get_absolute_url()
            try:
                topic_rename(
                    topic=topic,
                    name=form.cleaned_data["name"],
                    short_name=form.cleaned_data["short_name"],
                    slug=form.cleaned_data["slug"] or None,
                    user=request.user,
                )
            except ValidationError as error:
                form.add_error(None, error)
            else:
                new_url = topic.get_absolute_url()
                moved = f"; {old_url} now redirects to {new_url}" if new_url != old_url else ""
                self.message_user(
                    request, f"Renamed to {topic.display_name!r}{moved}.", messages.SUCCESS
                )
                return None
        return action_page(
            self,
            request,
            items=_topic_items(queryset),
            form=form,
            title=f"Rename {topic.display_name}",
            action="rename_topic",
            intro="The old address keeps working: it answers with a permanent redirect.",
        )

    @admin.action(description="Merge the selected topics into one…", permissions=["change"])
    def merge_topics(self, request, queryset):
        form = TopicMergeForm(request.POST if "apply" in request.POST else None)
        if form.is_bound and form.is_valid():
            target = form.cleaned_data["target"]
            sources = list(queryset.exclude(pk=target.pk).order_by(tree_order()))
            if not sources:
                form.add_error("target", "Select at least one topic other than the target.")
            else:
                try:
                    with transaction.atomic():
                        results = [
                            topic_merge(source=source, target=target, user=request.user)
                            for source in sources
                        ]
                except (ValueError, IntegrityError) as error:
                    form.add_error(None, str(error))
                else:
                    self._report_merges(request, target, results)
                    return None
        return action_page(
            self,
            request,
            items=_topic_items(queryset),
            form=form,
            title="Merge topics",
            action="merge_topics",
            intro="Nothing is lost: merged topics stay, inactive, with their history.",
        )

    def _report_merges(self, request, target, results):
        for result in results:
            self.message_user(
                request,
                f"Merged {result.source.name!r} into {target.name!r}: "
                f"{result.assignments_moved} assignment(s) moved, "
                f"{result.assignments_dropped} duplicate(s) dropped, "
                f"{result.children_moved} child topic(s) moved.",
                messages.SUCCESS,
            )
            if result.rule == "differs":
                self.message_user(
                    request,
                    f"The rules of {result.source.name!r} and {target.name!r} use different "
                    f"categories, so {target.name!r} kept its own: re-tagging will drop the "
                    "moved rule assignments it does not match. Edit its rule to cover them.",
                    messages.WARNING,
                )
            elif result.rule in ("combined", "taken"):
                self.message_user(
                    request,
                    f"The rule of {target.name!r} now also covers {result.source.name!r}'s.",
                    messages.INFO,
                )

    @admin.action(
        description="Move the selected topics under another parent…", permissions=["change"]
    )
    def move_topics(self, request, queryset):
        form = TopicMoveForm(request.POST if "apply" in request.POST else None)
        if form.is_bound and form.is_valid():
            parent = form.cleaned_data["parent"]
            try:
                with transaction.atomic():
                    for topic in queryset.order_by(tree_order()):
                        topic_move(topic=topic, parent=parent)
                        topic_history_record(topic=topic, user=request.user, reason="moved")
            except ValueError as error:
                form.add_error("parent", str(error))
            else:
                where = f"under {parent.name!r}" if parent else "to the top level"
                self.message_user(
                    request, f"Moved {queryset.count()} topic(s) {where}.", messages.SUCCESS
                )
                return None
        return action_page(
            self,
            request,
            items=_topic_items(queryset),
            form=form,
            title="Move topics",
            action="move_topics",
            intro="Each topic moves with all its descendants.",
        )

    @admin.action(description="Re-tag every paper (queue tagging tasks)", permissions=["change"])
    def retag_all_papers(self, request, queryset):
        result = papers_tag_enqueue(
            paper_ids=Paper.objects.order_by("pk").values_list("pk", flat=True).iterator()
        )
        self.message_user(
            request,
            f"Queued tagging of {result.papers} papers in {result.chunks} tasks.",
            messages.SUCCESS,
        )
