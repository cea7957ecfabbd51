"""Admin of emerging clusters (``topics.emerging``): the list with size, growth and name
terms; a cluster's page with its papers; and "Adopt as a new topic", one action that makes a
cluster a topic (name from its terms, editable; parent chosen) with its papers as the topic's
first curator-accepted labels."""

import unicodedata

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator

from topics.admin.tree import TopicTreeChoiceField
from topics.emerging import emerging_cluster_adopt
from topics.models import EmergingCluster, EmergingClusterPaper, Topic
from topicsite.admin_actions import action_page


class EmergingClusterPaperInline(admin.TabularInline):
    model = EmergingClusterPaper
    fields = ("paper_link", "submitted", "similarity")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = False

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("paper")

    def has_add_permission(self, request, obj=None):
        return False

    @admin.display(description="paper")
    def paper_link(self, member):
        paper = member.paper
        return format_html(
            '<a href="{}">{}</a>: {}',
            paper.get_absolute_url(),
            paper.identifier,
            Truncator(paper.title).chars(100),
        )

    @admin.display(description="submitted")
    def submitted(self, member):
        return member.paper.submitted


class AdoptForm(forms.Form):
    name = forms.CharField(max_length=200, help_text="Suggested from the cluster's terms.")
    parent = TopicTreeChoiceField(
        required=False, help_text="Leave empty for a topic at the root of the taxonomy."
    )

    def clean_name(self) -> str:
        """One line of visible text, not another topic's name (case aside): control and
        formatting characters (a newline, a right-to-left override) are refused by name."""
        name = " ".join(self.cleaned_data["name"].split())
        odd = sorted({f"U+{ord(c):04X}" for c in name if unicodedata.category(c) in ("Cc", "Cf")})
        if odd:
            raise ValidationError(f"The name holds invisible characters: {', '.join(odd)}.")
        existing = Topic.objects.filter(name__iexact=name).first()
        if existing is not None:
            raise ValidationError(f"A topic is named {existing.name!r} already; choose another.")
        return name


@admin.register(EmergingCluster)
class EmergingClusterAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "size",
        "growth_display",
        "recent_count",
        "previous_count",
        "terms_display",
        "window_end",
        "adopted_topic",
    )
    list_filter = (("adopted_topic", admin.EmptyFieldListFilter),)
    list_select_related = ("adopted_topic",)
    search_fields = ("name",)
    readonly_fields = (
        "name",
        "terms_display",
        "examples",
        "size",
        "recent_count",
        "previous_count",
        "growth_display",
        "window_start",
        "window_end",
        "adopted_topic",
        "adopted_by",
        "adopted_at",
        "created_at",
    )
    fields = readonly_fields
    inlines = (EmergingClusterPaperInline,)
    actions = ("adopt",)

    def has_add_permission(self, request):
        return False  # computed by find_emerging

    @admin.display(description="growth", ordering="growth")
    def growth_display(self, cluster):
        return f"{cluster.growth:.1f}×"

    @admin.display(description="name terms")
    def terms_display(self, cluster):
        return ", ".join(cluster.terms)

    @admin.display(description="example titles")
    def examples(self, cluster):
        return format_html(
            "<ul>{}</ul>",
            format_html_join("", "<li>{}</li>", ((t,) for t in cluster.example_titles)),
        )

    @admin.action(description="Adopt as a new topic…", permissions=["change"])
    def adopt(self, request, queryset):
        clusters = list(queryset[:2])
        if len(clusters) != 1:
            self.message_user(request, "Select exactly one cluster to adopt.", messages.ERROR)
            return None
        cluster = clusters[0]
        if cluster.adopted_topic_id is not None:
            self.message_user(request, f"{cluster.name!r} was adopted already.", messages.ERROR)
            return None
        applied = "apply" in request.POST
        form = AdoptForm(request.POST if applied else None, initial={"name": cluster.name})
        if form.is_bound and form.is_valid():
            try:
                topic = emerging_cluster_adopt(
                    cluster=cluster,
                    name=form.cleaned_data["name"],
                    parent=form.cleaned_data["parent"],
                    user=request.user,
                )
            except (ValueError, ValidationError) as error:
                form.add_error(None, "; ".join(getattr(error, "messages", [str(error)])))
            else:
                self.message_user(
                    request,
                    f"Topic {topic.name!r} created with {cluster.size} paper(s) as its first "
                    "labels.",
                    messages.SUCCESS,
                )
                return redirect(reverse("admin:topics_topic_change", args=[topic.pk]))
        return action_page(
            self,
            request,
            items=cluster.example_titles,
            form=form,
            title="Adopt an emerging cluster as a new topic",
            action="adopt",
            intro=f"{cluster.size} papers; terms: {', '.join(cluster.terms)}. Examples:",
        )
