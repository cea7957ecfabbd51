"""API tokens in the admin: read-only, with a revoke action (users create their own)."""

from django.contrib import admin

from .models import ApiToken
from .services import token_revoke


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "key_prefix", "created_at", "last_used_at", "revoked_at"]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["name", "key_prefix", "user__username", "user__email"]
    list_select_related = ["user"]
    raw_id_fields = ["user"]
    readonly_fields = [
        "user",
        "name",
        "key_prefix",
        "key_hash",
        "created_at",
        "updated_at",
        "last_used_at",
        "revoked_at",
    ]
    actions = ["revoke"]

    def has_add_permission(self, request):
        # A key is shown once to the user who made it; the admin never sees one.
        return False

    @admin.action(description="Revoke the selected tokens", permissions=["change"])
    def revoke(self, request, queryset):
        revoked = 0
        for token in queryset.filter(revoked_at__isnull=True):
            token_revoke(token=token)
            revoked += 1
        self.message_user(request, f"{revoked} token(s) revoked.")
