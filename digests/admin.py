"""Admin for digest deliveries: who got what and when, and a way to send again a digest that
failed or was left unconfirmed (see ``digests.services`` for why those are not resent alone).
Delivery records are written by the services only; the admin shows them read-only."""

from django.contrib import admin, messages
from django.db import transaction

from .models import Digest, DigestItem
from .services import digests_send_again
from .tasks import digest_send_user


class DigestItemInline(admin.TabularInline):
    model = DigestItem
    fields = ["paper", "follow"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request, obj=None):
        return False

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("paper", "follow__topic")


@admin.register(Digest)
class DigestAdmin(admin.ModelAdmin):
    list_display = [
        "user",
        "period",
        "period_end",
        "status",
        "paper_count",
        "follow_count",
        "attempts",
        "sent_at",
    ]
    list_filter = ["status", "period", "period_end"]
    list_select_related = ["user"]
    search_fields = ["user__username", "user__email", "message_id"]
    date_hierarchy = "period_end"
    readonly_fields = [field.name for field in Digest._meta.concrete_fields]
    inlines = [DigestItemInline]
    actions = ["send_again"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.action(description="Send again (failed or unconfirmed digests only)")
    def send_again(self, request, queryset):
        changed = digests_send_again(digest_ids=list(queryset.values_list("pk", flat=True)))
        for digest in Digest.objects.filter(pk__in=changed):
            args = (digest.user_id, digest.period, digest.period_end.isoformat())
            transaction.on_commit(lambda args=args: digest_send_user.delay(*args))
        skipped = queryset.count() - len(changed)
        self.message_user(
            request,
            f"Queued {len(changed)} digests to be sent again; {skipped} left alone (sent, "
            "empty or being sent).",
            messages.SUCCESS if changed else messages.WARNING,
        )
