"""Admin of assignments: filters, the review queue, bulk accept / reject, moving papers to
another topic and re-tagging. Decisions go through the services and are recorded as the
curator's."""

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError
from django.http import HttpResponseBadRequest, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils.formats import date_format
from django.utils.html import format_html, format_html_join
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import mark_safe
from django.utils.text import Truncator
from django.views.decorators.http import require_POST
from simple_history.admin import SimpleHistoryAdmin

from papers.admin.papers import ArxivIdSearchMixin
from topics.admin.filters import (
    AssignmentTopicFilter,
    DeciderFilter,
    ReviewQueueFilter,
    ScoreRangeFilter,
)
from topics.admin.tree import TopicTreeChoiceField
from topics.assignments import (
    assignment_add,
    assignment_decide,
    assignments_bulk_decide,
    assignments_move,
)
from topics.models import Assignment
from topics.tagging.classifier import ClassifierLoadError, classifier_explain
from topics.tagging.engine import papers_tag_enqueue
from topicsite.admin_actions import ACTION_ITEMS_SHOWN, action_page
from topicsite.paginators import EstimatedCountPaginator


class AssignmentMoveForm(forms.Form):
    """The move action's form: the topic the selected assignments' papers move to."""

    topic = TopicTreeChoiceField(
        label="Move to",
        help_text=(
            "Each paper is accepted in this topic and its selected assignment is rejected, "
            "both as your decisions (re-tagging will not undo them)."
        ),
    )


@admin.register(Assignment)
class AssignmentAdmin(ArxivIdSearchMixin, SimpleHistoryAdmin):
    """Assignments with filters and the review queue; adding one, changing its state and the
    bulk actions are curator decisions made through the services."""

    change_list_template = "admin/topics/assignment/change_list.html"

    class Media:
        css = {"all": ["css/admin.css"]}  # columns that fit 1280 px (static/css/admin.css)

    list_display = [
        "paper_link",
        "topic",
        "source",
        "state",
        "score_shown",
        "decided",
        "decide",
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
    arxiv_id_lookup = "paper__arxiv_id"  # a paper's id in any spelling finds its assignments
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

    @admin.display(description="score", ordering="score")
    def score_shown(self, assignment):
        """The machine score in [0, 1] to three decimals ("0.462"; the change page has it
        whole), or "—" for curator and import assignments, which have none."""
        return "—" if assignment.score is None else f"{assignment.score:.3f}"

    @admin.display(description="decided", ordering="decided_at")
    def decided(self, assignment):
        """Who decided and on which day ("ana, Dec 2, 2026"), one narrow column; "—" when no
        person has."""
        if assignment.decided_at is None:
            return "—"
        who = assignment.decided_by.get_username() if assignment.decided_by else "(deleted)"
        return f"{who}, {date_format(assignment.decided_at, 'M j, Y')}"

    @admin.display(description="why")
    def why(self, assignment):
        """What placed the paper: the rule's query, the semantic evidence (cosine and the
        nearest accepted papers of the topic, linked) and the words that raised the
        classifier score."""
        lines = []
        evidence = assignment.evidence or {}
        if "rule" in evidence:
            restricted = " (within the topic's categories)" if evidence.get("categories") else ""
            lines.append(format_html("Rule: {}{}", evidence["rule"] or "categories", restricted))
        if "cosine" in evidence:
            nearest = format_html_join(
                ", ",
                '<a href="{}">{}</a>',
                (
                    (reverse("admin:papers_paper_change", args=[pk]), pk)
                    for pk in evidence.get("nearest", [])
                ),
            )
            lines.append(
                format_html(
                    "Meaning: cosine {} to the topic's prototype ({} accepted papers); "
                    "nearest accepted papers: {}",
                    evidence["cosine"],
                    evidence.get("labels", 0),
                    nearest or "none yet (its name and description alone)",
                )
            )
        try:
            words = classifier_explain(paper=assignment.paper, topic=assignment.topic)
        except ClassifierLoadError as error:
            words, lines = [], [*lines, f"Cannot explain the classifier: {error}"]
        if words:
            lines.append(
                "Classifier words: "
                + ", ".join(f"{word} ({weight:+.2f})" for word, weight in words)
            )
        for report in assignment.reports.select_related("reporter").order_by("-created_at"):
            is_open = assignment.decided_at is None or report.created_at > assignment.decided_at
            lines.append(
                format_html(
                    "Reported as a wrong topic by {} on {}{}{}",
                    report.reporter.get_username(),
                    report.created_at.date().isoformat(),
                    f": “{report.note}”" if report.note else "",
                    "" if is_open else " (decided since)",
                )
            )
        if not lines:
            return "No machine evidence (a curator or an import placed it, or it predates it)."
        return format_html_join(mark_safe("<br>"), "{}", ((line,) for line in lines))

    @admin.display(description="decide")
    def decide(self, assignment):
        """One click accept / reject buttons for a machine assignment nobody decided yet (they
        submit the change list's form, with its CSRF token, to :meth:`quick_decide_view`)."""
        if assignment.is_curator_decision or assignment.decided_at is not None:
            return ""
        url = reverse("admin:topics_assignment_quick_decide")
        return format_html(
            '<button type="submit" name="decision" value="accepted:{pk}" formaction="{url}" '
            'title="Accept (your decision)">Accept</button> '
            '<button type="submit" name="decision" value="rejected:{pk}" formaction="{url}" '
            'title="Reject (your decision)">Reject</button>',
            pk=assignment.pk,
            url=url,
        )

    def get_urls(self):
        return [
            path(
                "decide/",
                self.admin_site.admin_view(require_POST(self.quick_decide_view)),
                name="topics_assignment_quick_decide",
            ),
            *super().get_urls(),
        ]

    def quick_decide_view(self, request):
        """POST ``decision=<accepted|rejected>:<assignment pk>``: that assignment decided by the
        curator (``assignment_decide``), then back to the list they came from. 400 for a
        malformed decision, 403 without the change permission, 404 for an unknown pk."""
        if not self.has_change_permission(request):
            raise PermissionDenied
        state, _, pk = request.POST.get("decision", "").partition(":")
        # ASCII digits only: str.isdigit() is also true of "²", which int() refuses (a 500).
        if state not in (Assignment.State.ACCEPTED, Assignment.State.REJECTED) or not (
            pk.isascii() and pk.isdigit()
        ):
            return HttpResponseBadRequest(
                "decision must be 'accepted:<assignment id>' or 'rejected:<assignment id>'."
            )
        assignment = get_object_or_404(Assignment.objects.select_related("paper", "topic"), pk=pk)
        assignment_decide(assignment=assignment, state=state, user=request.user)
        self.message_user(
            request,
            f"{assignment.paper.identifier} {state} in {assignment.topic.name!r} by you.",
            messages.SUCCESS,
        )
        back = request.META.get("HTTP_REFERER", "")
        if not url_has_allowed_host_and_scheme(
            back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        ):
            back = reverse("admin:topics_assignment_changelist")
        return HttpResponseRedirect(back)

    def get_ordering(self, request):
        if request.GET.get(ReviewQueueFilter.parameter_name) in (
            ReviewQueueFilter.VALUE,
            ReviewQueueFilter.REPORTED,
        ):
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
        return action_page(
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
