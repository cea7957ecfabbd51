"""The paper admin of ``papers.admin`` registered again with what topics knows of a paper:
a topic filter, the paper's assignments inline, and their history."""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from papers.admin.papers import PaperAdmin as PaperRecordAdmin
from papers.models import Paper
from topics.admin.filters import PaperTopicFilter
from topics.admin.history import assignment_history_rows, assignment_history_table
from topics.models import Assignment


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
            assignment_history_table(
                assignment_history_rows(paper_id=paper.pk), show_paper=False, show_topic=True
            ),
            add_url,
        )
