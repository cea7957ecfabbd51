"""Admin for arXiv records: papers (with their versions and authors, read-only), categories,
authors and affiliations. Knows nothing of topics (``papers`` is the bottom of the stack)."""

from django.contrib import admin

from papers.models import Affiliation, Author, Authorship, Category, Paper, PaperVersion


class ReadOnlyInline(admin.TabularInline):
    """Rows that come from the source records: shown, never edited here."""

    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class PaperVersionInline(ReadOnlyInline):
    model = PaperVersion
    fields = ["number", "submitted", "size_kb", "source_type"]
    readonly_fields = fields


class AuthorshipInline(ReadOnlyInline):
    model = Authorship
    fields = ["position", "author"]
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("author")


@admin.register(Paper)
class PaperAdmin(admin.ModelAdmin):
    list_display = ["identifier", "title", "primary_category", "submitted", "withdrawn"]
    list_display_links = ["identifier", "title"]
    list_filter = ["withdrawn", "primary_category"]
    list_select_related = ["primary_category"]
    search_fields = ["=arxiv_id", "=import_key", "title", "authorships__author__name"]
    date_hierarchy = "submitted"
    ordering = ["-submitted", "-id"]
    autocomplete_fields = ["primary_category", "cross_lists"]
    readonly_fields = [
        "arxiv_id",
        "import_key",
        "latest_version",
        "datestamp",
        "source",
        "created_at",
        "updated_at",
    ]
    inlines = [PaperVersionInline, AuthorshipInline]
    show_full_result_count = False  # COUNT(*) over millions of papers on every page is slow.

    @admin.display(description="arXiv identifier", ordering="arxiv_id")
    def identifier(self, paper):
        return paper.identifier


@admin.register(Category)
class CategoryAdmin(admin.ModelAdmin):
    list_display = ["code", "name", "archive_name", "group_name", "is_active"]
    list_filter = ["is_active", "group_name"]
    search_fields = ["code", "name", "archive_name"]


@admin.register(Author)
class AuthorAdmin(admin.ModelAdmin):
    list_display = ["name", "keyname", "forenames"]
    search_fields = ["name"]


@admin.register(Affiliation)
class AffiliationAdmin(admin.ModelAdmin):
    list_display = ["name"]
    search_fields = ["name"]
