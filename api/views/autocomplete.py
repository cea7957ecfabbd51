"""``autocomplete/?q=``: a typeahead over topics, authors and categories."""

from __future__ import annotations

from urllib.parse import urlencode

from django.db.models import Case, IntegerField, Q, Value, When
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from papers.author_selectors import authors_matching, authors_paper_counts
from papers.models import Category
from topics.models import Topic

from ..serializers.authors import AutocompleteSerializer
from .base import ReadView

PER_TYPE = 5
MIN_QUERY = 2
MAX_QUERY = 100


def _prefix_first(q: str, *fields: str) -> Case:
    """0 for a row where any of ``fields`` starts with ``q`` (case-insensitive), else 1."""
    starts = Q()
    for field in fields:
        starts |= Q(**{f"{field}__istartswith": q})
    return Case(When(starts, then=Value(0)), default=Value(1), output_field=IntegerField())


def suggestions(q: str) -> list[dict]:
    """Up to :data:`PER_TYPE` active topics (name or short name holding ``q``), authors
    (``papers.author_selectors.authors_matching``) and categories (code or name holding
    ``q``), in that order, each type's names starting with ``q`` first. Four queries."""
    topics = (
        Topic.objects.active()
        .filter(Q(name__icontains=q) | Q(short_name__icontains=q))
        .select_related("parent")
        .annotate(starts=_prefix_first(q, "name", "short_name"))
        .order_by("starts", "name", "pk")[:PER_TYPE]
    )
    results = [
        {
            "type": "topic",
            "id": topic.slug,
            "display_name": topic.display_name,
            "hint": f"in {topic.parent.display_name}" if topic.parent else "topic",
            "url": topic.get_absolute_url(),
        }
        for topic in topics
    ]
    authors = list(authors_matching(q=q)[:PER_TYPE])
    counts = authors_paper_counts(author_ids=[author.pk for author in authors])
    for author in authors:
        papers = counts.get(author.pk, 0)
        results.append(
            {
                "type": "author",
                "id": str(author.pk),
                "display_name": author.name,
                "hint": f"{papers} paper{'' if papers == 1 else 's'}",
                "url": author.get_absolute_url(),
            }
        )
    categories = (
        Category.objects.filter(Q(code__icontains=q) | Q(name__icontains=q))
        .annotate(starts=_prefix_first(q, "code", "name"))
        .order_by("starts", "code")[:PER_TYPE]
    )
    results.extend(
        {
            "type": "category",
            "id": category.code,
            "display_name": f"{category.code}: {category.name}",
            "hint": category.archive_name,
            "url": reverse("topics:search") + "?" + urlencode({"category": category.code}),
        }
        for category in categories
    )
    return results


class AutocompleteView(ReadView):
    serializer_class = AutocompleteSerializer
    filter_backends: list = []
    pagination_class = None
    extra_query_params = ("q",)

    @extend_schema(
        summary="Typeahead over topics, authors and categories",
        description=f"Up to {PER_TYPE} of each kind whose name (a topic's short name, a "
        "category's code) holds `q`, case-insensitive, those starting with it first: "
        "topics, then authors, then categories. Fewer than "
        f"{MIN_QUERY} characters of `q` suggest nothing (an empty `results`); more than "
        f"{MAX_QUERY} is a 400. `url` is the site page (a category's: the search page "
        "filtered to it).",
        parameters=[
            OpenApiParameter(
                "q", OpenApiTypes.STR, required=True, description="What the reader has typed."
            )
        ],
    )
    def get(self, request):
        q = request.query_params.get("q", "").strip()
        if len(q) > MAX_QUERY:
            raise ValidationError({"q": [f"At most {MAX_QUERY} characters."]})
        results = suggestions(q) if len(q) >= MIN_QUERY else []
        return Response(AutocompleteSerializer({"q": q, "results": results}).data)
