"""Follows in the admin: who follows what (topics, authors), saved searches with their scopes,
their matches."""

from django.contrib import admin

from .models import Follow, SearchMatch


@admin.register(Follow)
class FollowAdmin(admin.ModelAdmin):
    list_display = ("user", "kind", "topic", "author", "query", "digest_frequency", "created_at")
    list_filter = ("kind", "digest_frequency")
    list_select_related = ("user", "topic", "author")
    search_fields = (
        "user__username",
        "user__email",
        "topic__name",
        "topic__slug",
        "author__name",
        "query",
    )
    raw_id_fields = ("user", "topic", "author")
    filter_horizontal = ("topic_scope", "category_scope")
    readonly_fields = ("created_at", "updated_at")
    date_hierarchy = "created_at"


@admin.register(SearchMatch)
class SearchMatchAdmin(admin.ModelAdmin):
    list_display = ("follow", "paper", "matched_at")
    list_select_related = ("follow__user", "follow__topic", "paper")
    search_fields = ("follow__query", "paper__arxiv_id", "paper__title")
    raw_id_fields = ("follow", "paper")
    readonly_fields = ("matched_at",)
