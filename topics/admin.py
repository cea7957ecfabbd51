"""Admin for curators: the topic tree (rules with a preview, rename / merge / move), the
assignments (filters, bulk decisions, a review queue, re-tagging) and, on the paper page from
``papers.admin``, the paper's assignments, their history and a topic filter.

Every write goes through ``topics.services`` or ``topics.curation``, so ``Topic.path`` stays
right, curator decisions are recorded with who made them and when, and every change has a
history row (django-simple-history). List pages never count or scan a whole big table: counts
per topic are correlated subqueries on the (topic, state) index for the rows shown only.
"""

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.utils import flatten_fieldsets, unquote
from django.contrib.auth import get_user_model
from django.contrib.postgres.fields import ArrayField
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Exists, F, Func, IntegerField, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce
from django.http import HttpResponseNotAllowed
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode
from django.utils.text import Truncator
from simple_history.admin import SimpleHistoryAdmin

from papers.admin.papers import EstimatedCountPaginator
from papers.admin.papers import PaperAdmin as PaperRecordAdmin
from papers.models import Paper

from .assignments import (
    assignment_add,
    assignment_decide,
    assignments_bulk_decide,
    assignments_move,
)
from .models import Assignment, ClassifierModel, Topic
from .services import (
    topic_create,
    topic_history_record,
    topic_merge,
    topic_move,
    topic_rename,
    topic_slug_validate,
)
from .tagging.classifier import ClassifierLoadError, classifier_explain
from .tagging.engine import papers_tag_enqueue
from .tagging.preview import rule_preview
from .tagging.rules import RuleSyntaxError, compile_rule
from .tasks import retrain_classifier

# Every column of a topic but its key, its path and its creation time.
EDITABLE_TOPIC_FIELDS = [
    field.name
    for field in Topic._meta.concrete_fields
    if not field.primary_key and field.name not in ("path", "created_at")
]
HISTORY_ROWS_SHOWN = 50


# --- the tree ------------------------------------------------------------------------------


class _PathKey(Func):
    """``Topic.path`` as an array of integers (``"3/17/"`` -> ``{3, 17}``): ordered by it,
    every topic comes right after its parent, siblings by id (PostgreSQL arrays compare
    element by element; as text, ``"10/"`` would come before ``"9/"``)."""

    template = "string_to_array(rtrim(%(expressions)s, '/'), '/')::integer[]"
    output_field = ArrayField(IntegerField())


def _tree_order():
    """Topics in tree order: each after its parent, siblings by id."""
    if connection.vendor == "postgresql":
        return _PathKey("path").asc()
    return F("path").asc()  # SQLite (the demo): text order, still each after its parent


def _depth(topic: Topic) -> int:
    return max(topic.path.count("/") - 1, 0)


def _tree_label(topic: Topic) -> str:
    label = f"{'    ' * _depth(topic)}{topic.display_name}"
    return label if topic.active else f"{label} (inactive)"


class TopicTreeChoiceField(forms.ModelChoiceField):
    """A choice of topic, listed as an indented tree."""

    def __init__(self, queryset=None, **kwargs):
        if queryset is None:
            queryset = Topic.objects.active()
        super().__init__(queryset=queryset.order_by(_tree_order()), **kwargs)

    def label_from_instance(self, topic):
        return _tree_label(topic).replace(" ", "\u00a0")  # non-breaking: browsers keep them


# --- history tables shown on change pages --------------------------------------------------


def _assignment_history_table(rows, *, show_paper: bool, show_topic: bool):
    """An HTML table of HistoricalAssignment rows: when, who, what, and the state after."""
    headers = ["When", "Who", "Change"]
    headers += ["Paper"] if show_paper else []
    headers += ["Topic"] if show_topic else []
    headers += ["Source", "State", "Score", "Decided by", "Reason"]
    body = []
    for row in rows:
        cells = [
            row.history_date.strftime("%Y-%m-%d %H:%M"),
            row.history_user.get_username() if row.history_user else "(system)",
            row.get_history_type_display(),
        ]
        if show_paper:
            cells.append(row.paper.identifier if row.paper else f"#{row.paper_id}")
        if show_topic:
            cells.append(row.topic.name if row.topic else f"#{row.topic_id}")
        cells += [
            row.source,
            row.state,
            "" if row.score is None else f"{row.score:.3f}",
            row.decided_by.get_username() if row.decided_by else "",
            row.history_change_reason or "",
        ]
        body.append(cells)
    if not body:
        return "No changes recorded yet."
    return format_html(
        '<table class="assignment-history"><thead><tr>{}</tr></thead><tbody>{}</tbody></table>',
        format_html_join("", "<th>{}</th>", ((h,) for h in headers)),
        format_html_join(
            "",
            "<tr>{}</tr>",
            ((format_html_join("", "<td>{}</td>", ((c,) for c in cells)),) for cells in body),
        ),
    )


def _history_rows(**filters):
    return (
        Assignment.history.filter(**filters)
        .select_related("history_user", "decided_by", "paper", "topic")
        .order_by("-history_date", "-history_id")[:HISTORY_ROWS_SHOWN]
    )


# --- filters -------------------------------------------------------------------------------


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
        return [(str(topic.pk), _tree_label(topic)) for topic in shown.order_by(_tree_order())]

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
        if not value.isdigit():
            raise IncorrectLookupParameters(f"Unknown decider {value!r}.")
        return queryset.filter(decided_by_id=int(value))


class ReviewQueueFilter(admin.SimpleListFilter):
    """The review queue: classifier assignments left pending (their score is near the topic's
    threshold) that no person has decided. Listed highest score first."""

    title = "review queue"
    parameter_name = "review"
    VALUE = "queue"

    def lookups(self, request, model_admin):
        return [(self.VALUE, "Pending classifier assignments")]

    def queryset(self, request, queryset):
        if self.value() != self.VALUE:
            return queryset
        return queryset.machine_made().filter(
            decided_at__isnull=True,  # a decision whose curator account was deleted
            source=Assignment.Source.CLASSIFIER,
            state=Assignment.State.PENDING,
        )


# --- intermediate pages of actions ---------------------------------------------------------


ACTION_ITEMS_SHOWN = 100


def _action_page(model_admin, request, *, form, title, action, intro, items):
    """The page an action shows before it acts: what was selected (``items``, strings, the
    first ``ACTION_ITEMS_SHOWN``), the action's ``form`` and Apply. Posting it runs the action
    again with the same selection (ids, or every row matching the filters) and ``apply``."""
    items = list(items)
    context = {
        **model_admin.admin_site.each_context(request),
        "title": title,
        "intro": intro,
        "opts": model_admin.opts,
        "form": form,
        "items": items[:ACTION_ITEMS_SHOWN],
        "items_hidden": max(len(items) - ACTION_ITEMS_SHOWN, 0),
        "action": action,
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        "selected_ids": request.POST.getlist(helpers.ACTION_CHECKBOX_NAME),
        "select_across": request.POST.get("select_across", "0"),
        "media": model_admin.media + form.media,
    }
    request.current_app = model_admin.admin_site.name
    return TemplateResponse(request, "admin/topics/action_form.html", context)


def _topic_items(queryset):
    return [
        f"{topic.display_name} (/topics/{topic.slug}/)"
        for topic in queryset.order_by(_tree_order())
    ]


# --- topics --------------------------------------------------------------------------------


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
    name = forms.CharField(max_length=200)
    short_name = forms.CharField(max_length=32, required=False)
    slug = forms.SlugField(
        max_length=200,
        required=False,
        help_text="The new address; blank: made from the name. The old one will redirect.",
    )


class TopicMergeForm(forms.Form):
    target = TopicTreeChoiceField(
        label="Merge into",
        help_text=(
            "The topic that stays. If it is one of the selected topics, the others merge into "
            "it. Assignments move (curator decisions kept), child topics move under it, "
            "follows move, and the merged topics' addresses redirect to it."
        ),
    )


class TopicMoveForm(forms.Form):
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
    form = TopicAdminForm
    change_form_template = "admin/topics/topic/change_form.html"
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
            (None, {"fields": ["name", "short_name", "slug", "parent", "description", "active"]}),
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
        return [_tree_order()]

    # --- columns

    @admin.display(description="topic", ordering=_tree_order())
    def tree_name(self, topic):
        # Indented with em and en spaces, not a style attribute: the site's
        # Content-Security-Policy blocks inline styles (settings/base.py, security).
        return format_html(
            "{}{}{}",
            "\u2003\u2002" * _depth(topic),
            "└ " if _depth(topic) else "",
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
        return _assignment_history_table(
            _history_rows(topic_id=topic.pk), show_paper=True, show_topic=False
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
        return _action_page(
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
            sources = list(queryset.exclude(pk=target.pk).order_by(_tree_order()))
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
        return _action_page(
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
                    for topic in queryset.order_by(_tree_order()):
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
        return _action_page(
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


# --- assignments ---------------------------------------------------------------------------


class AssignmentMoveForm(forms.Form):
    topic = TopicTreeChoiceField(
        label="Move to",
        help_text=(
            "Each paper is accepted in this topic and its selected assignment is rejected, "
            "both as your decisions (re-tagging will not undo them)."
        ),
    )


@admin.register(Assignment)
class AssignmentAdmin(SimpleHistoryAdmin):
    change_list_template = "admin/topics/assignment/change_list.html"
    list_display = [
        "paper_link",
        "topic",
        "source",
        "state",
        "score",
        "decided_by",
        "decided_at",
    ]
    list_filter = [
        ReviewQueueFilter,
        AssignmentTopicFilter,
        "source",
        "state",
        ScoreRangeFilter,
        DeciderFilter,
    ]
    list_select_related = ["paper", "topic", "decided_by"]
    search_fields = ["=paper__arxiv_id", "paper__title", "topic__name"]
    raw_id_fields = ["paper"]
    autocomplete_fields = ["topic"]
    actions = ["accept", "reject", "move_to_topic", "retag_papers"]
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    history_list_display = ["state", "decided_by"]

    AUDIT_FIELDS = ["decided_by", "decided_at", "created_at", "updated_at"]

    def get_fields(self, request, obj=None):
        if obj is None:
            # A curator adds a paper to a topic; the service fills in the rest.
            return ["paper", "topic"]
        return ["paper", "topic", "source", "state", "score", "why", *self.AUDIT_FIELDS]

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        return ["paper", "topic", "source", "score", "why", *self.AUDIT_FIELDS]

    def formfield_for_choice_field(self, db_field, request, **kwargs):
        if db_field.name == "state":
            # A person accepts or rejects; "pending review" is the classifier's.
            kwargs["choices"] = [
                (value, label)
                for value, label in Assignment.State.choices
                if value != Assignment.State.PENDING
            ]
        return super().formfield_for_choice_field(db_field, request, **kwargs)

    @admin.display(description="words that raised the classifier score")
    def why(self, assignment):
        try:
            words = classifier_explain(paper=assignment.paper, topic=assignment.topic)
        except ClassifierLoadError as error:
            return f"Cannot explain: {error}"
        if not words:
            return "No classifier model for this topic (it is tagged by its rule)."
        return ", ".join(f"{word} ({weight:+.2f})" for word, weight in words)

    def get_ordering(self, request):
        if request.GET.get(ReviewQueueFilter.parameter_name) == ReviewQueueFilter.VALUE:
            return ["-score", "pk"]
        return super().get_ordering(request)

    @admin.display(description="paper", ordering="paper__submitted")
    def paper_link(self, assignment):
        paper = assignment.paper
        return f"{paper.identifier}: {Truncator(paper.title).chars(70)}"

    def save_model(self, request, obj, form, change):
        if change:
            assignment_decide(assignment=obj, state=obj.state, user=request.user)
            return
        added = assignment_add(paper=obj.paper, topic=obj.topic, user=request.user)
        obj.pk = added.pk
        obj.refresh_from_db()

    def _decide(self, request, queryset, state):
        try:
            count = assignments_bulk_decide(assignments=queryset, state=state, user=request.user)
        except ValueError as error:
            self.message_user(request, str(error), messages.ERROR)
            return
        self.message_user(
            request, f"{count} assignment(s) marked {state} by you.", messages.SUCCESS
        )

    @admin.action(
        description="Accept selected assignments (curator decision)", permissions=["change"]
    )
    def accept(self, request, queryset):
        self._decide(request, queryset, Assignment.State.ACCEPTED)

    @admin.action(
        description="Reject selected assignments (curator decision)", permissions=["change"]
    )
    def reject(self, request, queryset):
        self._decide(request, queryset, Assignment.State.REJECTED)

    @admin.action(description="Move the selected papers to another topic…", permissions=["change"])
    def move_to_topic(self, request, queryset):
        form = AssignmentMoveForm(request.POST if "apply" in request.POST else None)
        if form.is_bound and form.is_valid():
            target = form.cleaned_data["topic"]
            try:
                result = assignments_move(assignments=queryset, topic=target, user=request.user)
            except (ValueError, IntegrityError) as error:
                form.add_error(None, str(error))
            else:
                self.message_user(
                    request,
                    f"Moved {result.moved} paper(s) to {target.name!r}"
                    + (f"; {result.unchanged} were already there" if result.unchanged else "")
                    + ".",
                    messages.SUCCESS,
                )
                return None
        assignments = queryset.select_related("paper", "topic")[: ACTION_ITEMS_SHOWN + 1]
        return _action_page(
            self,
            request,
            items=[f"{a.paper.identifier} in {a.topic.name} ({a.state})" for a in assignments],
            form=form,
            title="Move papers to another topic",
            action="move_to_topic",
            intro=f"{queryset.count()} assignment(s) selected.",
        )

    @admin.action(description="Re-tag these papers (queue tagging tasks)", permissions=["change"])
    def retag_papers(self, request, queryset):
        paper_ids = queryset.order_by("paper_id").values_list("paper_id", flat=True).distinct()
        result = papers_tag_enqueue(paper_ids=paper_ids.iterator())
        self.message_user(
            request,
            f"Queued re-tagging of {result.papers} paper(s) in {result.chunks} task(s) on the "
            "tag queue; their assignments update as the tasks finish.",
            messages.SUCCESS,
        )


# --- the classifier ------------------------------------------------------------------------


@admin.register(ClassifierModel)
class ClassifierModelAdmin(admin.ModelAdmin):
    """Stored classifier versions, read-only, with their held-out figures per topic; "Retrain
    now" queues ``topics.tasks.retrain_classifier`` (needs the change permission)."""

    change_list_template = "admin/topics/classifiermodel/change_list.html"
    list_display = ["version", "active", "topic_count", "label_count", "created_at"]
    fields = ["version", "active", "topic_count", "label_count", "created_at", "topic_figures"]
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).defer("artifact")

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def changelist_view(self, request, extra_context=None):
        extra_context = {
            "can_retrain": self.has_change_permission(request),
            **(extra_context or {}),
        }
        return super().changelist_view(request, extra_context)

    def get_urls(self):
        retrain = path(
            "retrain/",
            self.admin_site.admin_view(self.retrain_view),
            name="topics_classifiermodel_retrain",
        )
        return [retrain, *super().get_urls()]

    def retrain_view(self, request):
        """POST: queue a retraining (on the ``tag`` queue) and go back to the list."""
        if not self.has_change_permission(request):
            raise PermissionDenied
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        transaction.on_commit(retrain_classifier.delay)
        self.message_user(
            request,
            "Queued a retraining of the classifier on the tag queue; the new version appears "
            "here when it is trained, then every paper is re-tagged with it.",
            messages.SUCCESS,
        )
        return redirect("admin:topics_classifiermodel_changelist")

    @admin.display(description="held-out figures per topic")
    def topic_figures(self, model):
        topics = (model.metrics or {}).get("topics", {})
        if not topics:
            return "—"

        def figure(value):
            return "—" if value is None else f"{value:.2f}"

        rows = sorted(topics.values(), key=lambda t: (t.get("status") != "trained", t["name"]))
        return format_html(
            "<table><thead><tr><th>Topic</th><th>Status</th><th>Labels (+/−)</th>"
            "<th>Threshold</th><th>Precision</th><th>Recall</th><th>F1</th></tr></thead>"
            "<tbody>{}</tbody></table>",
            format_html_join(
                "",
                "<tr><td>{}</td><td>{}</td><td>{} / {}</td><td>{}</td><td>{}</td><td>{}</td>"
                "<td>{}</td></tr>",
                (
                    (
                        t.get("name", ""),
                        t.get("status", ""),
                        t.get("positives", 0),
                        t.get("negatives", 0),
                        figure(t.get("threshold")),
                        figure(t.get("precision")),
                        figure(t.get("recall")),
                        figure(t.get("f1")),
                    )
                    for t in rows
                ),
            ),
        )


# --- the paper page, extended with what topics knows of a paper -----------------------------


class AssignmentInline(admin.TabularInline):
    """The paper's assignments with source, score and state. Decisions are made on the
    assignment's own page (the link), where they go through the services."""

    model = Assignment
    fields = ["topic", "source", "state", "score", "decided_by", "decided_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True
    ordering = ["topic__name"]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("topic", "decided_by")

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


admin.site.unregister(Paper)


@admin.register(Paper)
class PaperAdmin(PaperRecordAdmin):
    """The papers admin of ``papers.admin`` with a topic filter, the paper's assignments and
    their history."""

    list_filter = [*PaperRecordAdmin.list_filter, PaperTopicFilter]
    inlines = [*PaperRecordAdmin.inlines, AssignmentInline]
    readonly_fields = [*PaperRecordAdmin.readonly_fields, "topic_assignment_history"]

    @admin.display(description="assignment history")
    def topic_assignment_history(self, paper):
        if paper.pk is None:
            return "—"
        add_url = f"{reverse('admin:topics_assignment_add')}?paper={paper.pk}"
        return format_html(
            '{}<p><a href="{}">Add this paper to a topic</a></p>',
            _assignment_history_table(
                _history_rows(paper_id=paper.pk), show_paper=False, show_topic=True
            ),
            add_url,
        )
