"""Admin for harvest runs: listed with their progress, status and errors, read-only (a run is
a record of what a harvest did); an action queues the resumption of failed or interrupted runs.

The harvest schedule itself is django-celery-beat's ``PeriodicTask`` (its own admin, "Periodic
tasks"): the migration ``papers.0003_default_harvest_schedule`` adds the daily OAI harvest,
disabled.
"""

from django.contrib import admin, messages
from django.db import transaction
from django.utils.html import format_html, format_html_join

from papers.models import HarvestRun
from papers.tasks import harvest_resume


@admin.register(HarvestRun)
class HarvestRunAdmin(admin.ModelAdmin):
    list_display = [
        "__str__",
        "kind",
        "status",
        "progress",
        "last_datestamp",
        "error_count",
        "started_at",
        "finished_at",
    ]
    list_display_links = ["__str__"]
    list_filter = ["status", "kind"]
    search_fields = ["=id", "=task_id"]
    date_hierarchy = "created_at"
    ordering = ["-created_at", "-id"]
    actions = ["resume_runs"]
    fields = [
        "kind",
        "params",
        "status",
        "progress",
        "pages_done",
        "records_created",
        "records_updated",
        "records_unchanged",
        "records_rejected",
        "records_deleted",
        "records_duplicate",
        "resumption_token",
        "last_datestamp",
        "position",
        "window_from",
        "window_until",
        "error_count",
        "error_messages",
        "gap_list",
        "task_id",
        "attempt",
        "started_at",
        "finished_at",
        "created_at",
        "updated_at",
    ]
    readonly_fields = fields

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="progress")
    def progress(self, run):
        return (
            f"{run.pages_done} pages; {run.records_created} created, "
            f"{run.records_updated} updated, {run.records_unchanged} unchanged, "
            f"{run.records_rejected} rejected"
        )

    @admin.display(description="errors")
    def error_messages(self, run):
        if not run.errors:
            return "-"
        items = format_html_join("", "<li>{}</li>", ((message,) for message in run.errors))
        more = run.error_count - len(run.errors)
        tail = format_html("<li>… and {} more</li>", more) if more > 0 else ""
        return format_html("<ol>{}{}</ol>", items, tail)

    @admin.display(description="gaps (asked for, not delivered)")
    def gap_list(self, run):
        if not run.gaps:
            return "-"
        items = format_html_join(
            "",
            "<li>{}{}: {}</li>",
            (
                (
                    gap["query"],
                    "" if gap["offset"] is None else f", offset {gap['offset']}",
                    gap["message"],
                )
                for gap in run.gaps
            ),
        )
        return format_html("<ol>{}</ol>", items)

    def has_resume_permission(self, request):
        # Runs are read-only here, but resuming one changes it: the model's change permission.
        return request.user.has_perm("papers.change_harvestrun")

    @admin.action(
        description="Resume the selected runs from their checkpoints",
        permissions=["resume"],
    )
    def resume_runs(self, request, queryset):
        """Queue ``papers.tasks.harvest_resume`` for each selected run that has not succeeded
        (a running one is taken over: its worker may be dead)."""
        resumable = [run for run in queryset if run.is_resumable]
        skipped = len(queryset) - len(resumable)
        for run in resumable:
            transaction.on_commit(lambda run_id=run.pk: harvest_resume.delay(run_id))
        if resumable:
            self.message_user(
                request,
                "Queued the resumption of "
                + ", ".join(f"run #{run.pk}" for run in resumable)
                + ".",
                messages.SUCCESS,
            )
        if skipped:
            self.message_user(
                request,
                f"{skipped} selected run(s) had finished already; nothing to resume.",
                messages.WARNING,
            )
