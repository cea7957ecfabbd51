"""Authors in the admin, with the curator's two corrections of who is who, both through
``papers.author_services`` and both in the author's history (django-simple-history):

- "Merge selected authors into one…": choose the author that stays; the others' authorships
  move to it and they stay as its name variants (their pages redirect; ingestion credits the
  survivor when it meets their names again; their follows move);
- "Split authorships off the selected author…": choose authorships of one author and the name
  of the author they move to (a new one, or one of its variants made separate again).

Nothing merges authors by itself: initials, accents and suffixes make name variants too
uncertain to join without a person's decision.
"""

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.utils.html import format_html
from simple_history.admin import SimpleHistoryAdmin

from papers.author_services import author_split, authors_merge
from papers.models import Author, Authorship
from topicsite.admin_actions import ACTION_ITEMS_SHOWN, action_page
from topicsite.paginators import EstimatedCountPaginator

# Authorships offered by the split form.
SPLIT_AUTHORSHIPS_SHOWN = 500


class AuthorChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, author):
        return f"{author.name} (#{author.pk})"


class AuthorMergeForm(forms.Form):
    """The merge action's form: which of the selected authors stays."""

    survivor = AuthorChoiceField(
        queryset=Author.objects.none(),
        widget=forms.RadioSelect,
        label="The author that stays",
        empty_label=None,
        help_text=(
            "The others' authorships move to it; they stay as its name variants: their pages "
            "redirect to it, their followers follow it, and new papers under their names "
            "credit it."
        ),
    )

    def __init__(self, *args, authors, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["survivor"].queryset = authors


class AuthorshipChoiceField(forms.ModelMultipleChoiceField):
    def label_from_instance(self, authorship):
        paper = authorship.paper
        credited = f", as {authorship.name_raw!r}" if authorship.name_raw else ""
        return (
            f"{paper.identifier} ({paper.submitted:%Y-%m-%d}), author {authorship.position + 1}"
            f"{credited}: {paper.title[:100]}"
        )


class AuthorSplitForm(forms.Form):
    """The split action's form: the authorships to move and the author they move to."""

    authorships = AuthorshipChoiceField(
        queryset=Authorship.objects.none(),
        widget=forms.CheckboxSelectMultiple,
        label="Authorships to move",
    )
    name = forms.CharField(
        max_length=300,
        label="Name of the author they move to",
        help_text=(
            "A new author, or one of this author's merged name variants (to undo a merge). "
            "A name another author has is refused: merge with that author instead."
        ),
    )

    def __init__(self, *args, author, **kwargs):
        super().__init__(*args, **kwargs)
        newest = Authorship.objects.filter(author=author).order_by(
            "-paper__submitted", "-paper_id", "position"
        )
        # The newest ones, as a subquery: the field filters its queryset to check the choices,
        # which a sliced queryset cannot take.
        self.fields["authorships"].queryset = (
            Authorship.objects.filter(pk__in=newest.values("pk")[:SPLIT_AUTHORSHIPS_SHOWN])
            .select_related("paper")
            .order_by("-paper__submitted", "-paper_id", "position")
        )


class MergedFilter(admin.SimpleListFilter):
    title = "merged"
    parameter_name = "merged"

    def lookups(self, request, model_admin):
        return [("no", "Authors"), ("yes", "Merged-away variants")]

    def queryset(self, request, queryset):
        if self.value() == "no":
            return queryset.filter(merged_into__isnull=True)
        if self.value() == "yes":
            return queryset.filter(merged_into__isnull=False)
        return queryset


@admin.register(Author)
class AuthorAdmin(SimpleHistoryAdmin):
    list_display = ["name", "keyname", "forenames", "merged_into", "page"]
    list_filter = [MergedFilter]
    list_select_related = ["merged_into"]
    search_fields = ["name"]
    readonly_fields = ["merged_into"]
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    actions = ["merge_authors", "split_author"]

    @admin.display(description="Page")
    def page(self, author):
        return format_html('<a href="{}">view</a>', author.get_absolute_url())

    @admin.action(description="Merge selected authors into one…", permissions=["change"])
    def merge_authors(self, request, queryset):
        authors = queryset.filter(merged_into__isnull=True).order_by("name", "pk")
        form = AuthorMergeForm(request.POST if "apply" in request.POST else None, authors=authors)
        if form.is_bound and form.is_valid():
            survivor = form.cleaned_data["survivor"]
            try:
                result = authors_merge(
                    authors=list(queryset.values_list("pk", flat=True)),
                    survivor=survivor,
                    user=request.user,
                )
            except ValidationError as error:
                form.add_error(None, error)
            else:
                names = ", ".join(repr(a.name) for a in result.merged)
                self.message_user(
                    request,
                    f"Merged {names} into {survivor.name!r}: {result.authorships_moved} "
                    "authorship(s) moved; the merged names are its variants now.",
                    messages.SUCCESS,
                )
                return None
        return action_page(
            self,
            request,
            form=form,
            title="Merge authors",
            action="merge_authors",
            intro=(
                "Merge only names of one person: nothing is deleted (merged authors stay as "
                "name variants, in the history), and a split moves authorships back."
            ),
            items=[
                f"{a.name} (#{a.pk})" for a in queryset.order_by("name", "pk")[:ACTION_ITEMS_SHOWN]
            ],
        )

    @admin.action(description="Split authorships off the selected author…", permissions=["change"])
    def split_author(self, request, queryset):
        selected = list(queryset[:2])
        if len(selected) != 1:
            self.message_user(request, "Select exactly one author to split.", messages.ERROR)
            return None
        author = selected[0]
        form = AuthorSplitForm(request.POST if "apply" in request.POST else None, author=author)
        if form.is_bound and form.is_valid():
            try:
                other = author_split(
                    author=author,
                    authorship_ids=[a.pk for a in form.cleaned_data["authorships"]],
                    name=form.cleaned_data["name"],
                    user=request.user,
                )
            except ValidationError as error:
                form.add_error(None, error)
            else:
                moved = len(form.cleaned_data["authorships"])
                self.message_user(
                    request,
                    f"Moved {moved} authorship(s) of {author.name!r} to {other.name!r} "
                    f"(#{other.pk}).",
                    messages.SUCCESS,
                )
                return None
        return action_page(
            self,
            request,
            form=form,
            title=f"Split {author.name}",
            action="split_author",
            intro=(
                "Move the chosen authorships to another author; papers and positions stay. "
                f"The newest {SPLIT_AUTHORSHIPS_SHOWN} authorships are offered."
            ),
            items=[f"{author.name} (#{author.pk})"],
        )
