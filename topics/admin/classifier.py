"""Admin of stored classifier versions: read-only, with held-out figures per topic, and a
"Retrain now" button that queues the retraining task."""

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpResponseNotAllowed
from django.shortcuts import redirect
from django.urls import path
from django.utils.html import format_html, format_html_join

from topics.models import ClassifierModel
from topics.tasks import retrain_classifier


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
