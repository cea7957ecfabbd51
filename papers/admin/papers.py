"""Admin for arXiv records: papers (with their versions and first authors, read-only),
categories and affiliations (authors: ``papers.admin.authors``). Knows nothing of topics
(``papers`` is the bottom of the stack):
``topics.admin.papers`` extends :class:`PaperAdmin` with the topic filter and the assignments.

Built for tables of millions of papers: no page counts every row (see
:class:`topicsite.paginators.EstimatedCountPaginator`), no filter lists values by scanning
papers, no facet counts.
"""

from django.contrib import admin
from django.db.models import Exists, OuterRef, Q
from django.utils.html import format_html, format_html_join

from papers.identifiers import InvalidArxivId, parse_arxiv_id
from papers.models import Affiliation, Authorship, Category, Paper, PaperVersion
from papers.parsers import split_dois
from topicsite.paginators import EstimatedCountPaginator


class ArxivIdSearchMixin:
    """Admin search where a term that is an arXiv identifier in any spelling
    (``papers.identifiers.parse_arxiv_id``: ``2409.01234v2``, an abs URL, the arXiv DOI, a PDF
    stamp) finds its paper by the unique canonical id, an index lookup through
    ``arxiv_id_lookup``; any other term searches the ``search_fields``."""

    arxiv_id_lookup = "arxiv_id"

    def get_search_results(self, request, queryset, search_term):
        try:
            canonical_id, _version = parse_arxiv_id(search_term)
        except InvalidArxivId:
            return super().get_search_results(request, queryset, search_term)
        return queryset.filter(**{self.arxiv_id_lookup: canonical_id}), False


class CategoryListFilter(admin.SimpleListFilter):
    """Papers with the chosen arXiv category as primary category or as a cross-list."""

    title = "category (primary or cross-list)"
    parameter_name = "category"

    def lookups(self, request, model_admin):
        return list(Category.objects.filter(is_active=True).values_list("code", "code"))

    def queryset(self, request, queryset):
        code = self.value()
        if not code:
            return queryset
        cross_listed = Paper.cross_lists.through.objects.filter(
            paper_id=OuterRef("pk"), category__code=code
        )
        return queryset.filter(Q(primary_category__code=code) | Exists(cross_listed))


class SubmittedFilter(admin.DateFieldListFilter):
    """The v1 date: the usual presets, and a from / before form for any range (no
    JavaScript; the other filters and the search are kept as hidden fields)."""

    template = "admin/papers/submitted_filter.html"

    def __init__(self, field, request, params, model, model_admin, field_path):
        # A range with one end left blank: the form still sends the blank end; drop it.
        for end in (f"{field_path}__gte", f"{field_path}__lt"):
            if end in params and not any(params[end]):
                del params[end]
        super().__init__(field, request, params, model, model_admin, field_path)
        self.since_value = self.date_params.get(self.lookup_kwarg_since, "")
        self.until_value = self.date_params.get(self.lookup_kwarg_until, "")
        own = set(self.expected_parameters())
        # "p" (page) is dropped: a new range starts on the first page.
        self.hidden_params = [
            (name, value)
            for name, values in request.GET.lists()
            if name not in own and name != "p"
            for value in values
        ]


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


# Authors the change page lists. Not an inline: a read-only inline still posts two fields
# per row, so a paper of thousands of authors overran DATA_UPLOAD_MAX_NUMBER_FIELDS (a 400 on
# save) and took many seconds to render.
ADMIN_AUTHORS_SHOWN = 20


@admin.register(Paper)
class PaperAdmin(ArxivIdSearchMixin, admin.ModelAdmin):
    list_display = ["identifier", "title", "primary_category", "submitted", "withdrawn"]
    list_display_links = ["identifier", "title"]
    # The quality flags (text_repaired, title_missing): papers a curator should look at.
    list_filter = [
        ("submitted", SubmittedFilter),
        CategoryListFilter,
        "withdrawn",
        # "Deleted upstream": papers an OAI harvest saw reported deleted.
        ("deleted_at", admin.EmptyFieldListFilter),
        "text_repaired",
        "title_missing",
    ]
    list_select_related = ["primary_category"]
    search_fields = ["=arxiv_id", "=import_key", "title", "authorships__author__name"]
    search_help_text = (
        "An arXiv identifier (any spelling: 2409.01234v2, arXiv:hep-th/9901001, an abs URL), "
        "or words of the title or an author's name."
    )
    ordering = ["-submitted", "-id"]
    autocomplete_fields = ["primary_category", "cross_lists"]
    readonly_fields = [
        "authors",
        "arxiv_id",
        "import_key",
        "latest_version",
        "dois",
        "datestamp",
        "source",
        "created_at",
        "updated_at",
    ]
    inlines = [PaperVersionInline]
    paginator = EstimatedCountPaginator
    show_full_result_count = False  # COUNT(*) over millions of papers on every page is slow.
    show_facets = admin.ShowFacets.NEVER  # so are facet counts

    @admin.display(description="arXiv identifier", ordering="arxiv_id")
    def identifier(self, paper):
        return paper.identifier

    def save_model(self, request, obj, form, change):
        """A DOI field edited here is split again, so the links follow the edit."""
        if "doi" in form.changed_data:
            obj.dois = split_dois(obj.doi)[0]
        super().save_model(request, obj, form, change)

    @admin.display(description="authors")
    def authors(self, paper):
        """The first :data:`ADMIN_AUTHORS_SHOWN` authors in order, how many there are in all
        with a link to the paper's page (which pages through every author), and every author
        whose name ingestion repaired, with the name as received (at most
        :data:`ADMIN_AUTHORS_SHOWN` of those too)."""
        if paper.pk is None:
            return "—"
        authorships = Authorship.objects.filter(paper=paper).select_related("author")
        shown = list(authorships.order_by("position")[:ADMIN_AUTHORS_SHOWN])
        if not shown:
            return "No authors recorded."
        listed = format_html_join(
            "", "<li>{}</li>", ((authorship.author.name,) for authorship in shown)
        )
        total = len(shown)
        if total == ADMIN_AUTHORS_SHOWN:
            total = authorships.count()
        if total == len(shown):
            html = format_html("<ol>{}</ol>", listed)
        else:
            html = format_html(
                '<ol>{}</ol><p>The first {} of {} authors; <a href="{}">all of them</a> on the '
                "paper's page.</p>",
                listed,
                len(shown),
                total,
                paper.get_absolute_url(),
            )
        repaired = authorships.exclude(name_raw="").order_by("position")[:ADMIN_AUTHORS_SHOWN]
        rows = [(a.position + 1, a.author.name, a.name_raw) for a in repaired]
        if rows:
            html += format_html(
                "<p>Names repaired on ingestion (as received):</p><ul>{}</ul>",
                format_html_join("", "<li>{}. {} (as received: {})</li>", rows),
            )
        return html


@admin.register(Category)
class CategoryAdmin(admin.ModelAdmin):
    list_display = ["code", "name", "archive_name", "group_name", "is_active"]
    list_filter = ["is_active", "group_name"]
    search_fields = ["code", "name", "archive_name"]


@admin.register(Affiliation)
class AffiliationAdmin(admin.ModelAdmin):
    list_display = ["name"]
    search_fields = ["name"]
