"""Admin for near-duplicates (``papers.duplicates``): the linked pairs, newest first, with
their similarity and decision; curators confirm or reject pairs in bulk (final: detection never
changes a decided pair)."""

from django.contrib import admin, messages

from papers.duplicates import duplicate_decide
from papers.models import PaperDuplicate
from topicsite.paginators import EstimatedCountPaginator


@admin.register(PaperDuplicate)
class PaperDuplicateAdmin(admin.ModelAdmin):
    list_display = ("paper", "original", "similarity", "decision", "detected_at", "decided_by")
    list_filter = ("decision",)
    list_select_related = ("paper", "original", "decided_by")
    search_fields = ("paper__arxiv_id", "original__arxiv_id", "paper__title")
    raw_id_fields = ("paper", "original")
    readonly_fields = ("similarity", "detected_at", "decided_by", "decided_at")
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    actions = ("confirm", "reject")

    def has_add_permission(self, request):
        # Pairs come from detection (papers.duplicates), which scores them; a pair typed in
        # by hand would have no similarity. Curators confirm or reject what was found.
        return False

    def _decide(self, request, queryset, decision: str) -> None:
        count = 0
        for duplicate in queryset:
            duplicate_decide(duplicate=duplicate, decision=decision, user=request.user)
            count += 1
        self.message_user(request, f"{count} pair(s) {decision}.", messages.SUCCESS)

    @admin.action(description="Confirm: the same paper", permissions=["change"])
    def confirm(self, request, queryset):
        self._decide(request, queryset, PaperDuplicate.Decision.CONFIRMED)

    @admin.action(description="Reject: different papers", permissions=["change"])
    def reject(self, request, queryset):
        self._decide(request, queryset, PaperDuplicate.Decision.REJECTED)
