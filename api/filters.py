"""Every FilterSet of the API: the paper lists' (``papers/``, ``topics/{slug}/papers/``,
``search/``, exports), the topic list's and the assignments'.

:class:`PaperFilter` (django-filter) takes, all optional:

- ``topic``: a topic slug (an old slug of a renamed topic works too); papers with an accepted
  assignment to the topic or any descendant;
- ``category``: an arXiv category code, as primary category or cross-list; aliases
  (``math.MP``) resolve to the canonical code; ``primary_category``: primary only;
- ``submitted_after`` / ``submitted_before``: ISO 8601 dates (YYYY-MM-DD), both inclusive;
- ``updated_after``: the latest version dated on or after (a paper with one version counts its
  submitted date);
- ``author`` / ``affiliation``: case-insensitive substring of an author's / affiliation's name;
- ``withdrawn``: ``true`` or ``false``;
- ``q``: full text over title and abstract in the query language of saved searches and topic
  rules (``topics.tagging.rules``: words, ``"a phrase"``, ``prefix*``, ``AND``, ``OR``,
  ``NOT``/``-word``, parentheses; PostgreSQL's English configuration over the stored
  ``search_vector``; case-insensitive substrings on SQLite); a query that does not parse is
  a 400 saying why and where (``topics.search.query_validate``).

:class:`PaperOrderingFilter` takes ``ordering`` from :data:`ORDERING_FIELDS`. Every bad value
is a 400 naming the parameter and what it allows. :class:`SearchFilter` is the paper filters
with ``q`` required; :class:`TopicFilter` and :class:`AssignmentFilter` filter ``topics/`` and
``assignments/``.
"""

from __future__ import annotations

import datetime as dt
import re

import django_filters
from django import forms
from django.db.models import Q
from django.db.models.functions import Coalesce
from rest_framework.exceptions import ValidationError
from rest_framework.filters import OrderingFilter

from papers.identifiers import InvalidArxivId, parse_arxiv_id
from papers.models import Authorship, Category, Paper, PaperAffiliation
from papers.taxonomy import UnknownCategory, canonical_category
from topics.models import Assignment, Topic
from topics.search import MODES, full_text_match, query_validate
from topics.selectors import topic_by_slug

__all__ = [
    "ORDERING_FIELDS",
    "AssignmentFilter",
    "PaperFilter",
    "PaperOrderingFilter",
    "SearchFilter",
    "TopicFilter",
]

ORDERING_FIELDS = ("submitted", "-submitted", "updated", "-updated", "id", "-id")
MAX_TEXT_LENGTH = 300


FULL_TEXT_HELP = (
    "Full text over title and abstract, in the query language of saved searches and topic rules: "
    'words, "a phrase", prefix* (agent* finds agentic), AND (or a space), OR, NOT or -word, '
    "parentheses; operators in capitals. English stemming matches word forms (agent finds "
    "agents). A query that does not parse is a 400 saying why and at which position."
)


SEARCH_MODE_HELP = (
    "hybrid (default): keyword full text and meaning (sentence embeddings) fused into one "
    "ranking; keyword: full text only; semantic: meaning only. Without the embedding model or "
    "paper vectors, hybrid and semantic answer with the keyword ranking and meta.mode says so."
)
# C0 and C1 control characters other than tab, newline and carriage return.
_CONTROL_CHARACTER = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def text_without_control_characters(value: str) -> None:
    """Raise ``ValidationError`` naming the first control character in ``value`` (a search
    for U+0000 or an escape sequence is a client bug, not a query)."""
    match = _CONTROL_CHARACTER.search(value)
    if match:
        raise forms.ValidationError(
            "Control character U+%(code)04X at position %(position)d is not allowed.",
            params={"code": ord(match.group()), "position": match.start()},
        )


class TopicSlugField(forms.CharField):
    """A topic slug, cleaned to the active :class:`Topic` (old slugs follow their redirect)."""

    def clean(self, value):
        value = super().clean(value)
        if not value:
            return None
        topic = topic_by_slug(value)
        if topic is None:
            # The value goes in params: Django %-formats messages, and a slug may hold "%".
            raise forms.ValidationError(
                "Unknown topic slug %(value)r; the slugs are listed at /api/v1/topics/.",
                params={"value": value},
            )
        return topic


class CategoryCodeField(forms.CharField):
    """An arXiv category code, cleaned to the stored :class:`Category` (aliases resolved)."""

    def clean(self, value):
        value = super().clean(value)
        if not value:
            return None
        try:
            code = canonical_category(value)
        except UnknownCategory:
            code = None
        category = Category.objects.filter(code=code).first() if code else None
        if category is None:
            raise forms.ValidationError(
                "Unknown category code %(value)r; the codes are listed at /api/v1/categories/.",
                params={"value": value},
            )
        return category


class StrictBooleanField(forms.Field):
    """``true``/``false`` (also ``1``/``0``); anything else is an error, not ignored."""

    _VALUES = {"true": True, "1": True, "false": False, "0": False}

    def clean(self, value):
        if value in (None, ""):
            return None
        try:
            return self._VALUES[str(value).lower()]
        except KeyError:
            raise forms.ValidationError(
                "Must be true or false; got %(value)r.", params={"value": value}
            ) from None


_DATE_KWARGS = {
    "input_formats": ["%Y-%m-%d"],
    "error_messages": {"invalid": "Enter a valid date (YYYY-MM-DD)."},
}


class _TopicFilter(django_filters.Filter):
    field_class = TopicSlugField


class _CategoryFilter(django_filters.Filter):
    field_class = CategoryCodeField


class _StrictBooleanFilter(django_filters.Filter):
    field_class = StrictBooleanField


class PaperFilter(django_filters.FilterSet):
    """The paper-list filters (see the module docstring). Each filter narrows with a subquery,
    so no filter multiplies rows and no ``DISTINCT`` is needed."""

    topic = _TopicFilter(method="filter_topic", help_text="Topic slug; descendants included.")
    category = _CategoryFilter(
        method="filter_category", help_text="arXiv category code, as primary or cross-list."
    )
    primary_category = _CategoryFilter(
        method="filter_primary_category", help_text="arXiv category code, as primary category."
    )
    submitted_after = django_filters.DateFilter(
        field_name="submitted",
        lookup_expr="gte",
        help_text="Submitted (v1) on or after this date, YYYY-MM-DD.",
        **_DATE_KWARGS,
    )
    submitted_before = django_filters.DateFilter(
        field_name="submitted",
        lookup_expr="lte",
        help_text="Submitted (v1) on or before this date, YYYY-MM-DD.",
        **_DATE_KWARGS,
    )
    updated_after = django_filters.DateFilter(
        method="filter_updated_after",
        help_text="Latest version dated on or after this date, YYYY-MM-DD.",
        **_DATE_KWARGS,
    )
    author = django_filters.CharFilter(
        method="filter_author",
        max_length=MAX_TEXT_LENGTH,
        help_text="Part of an author's name, case-insensitive.",
    )
    affiliation = django_filters.CharFilter(
        method="filter_affiliation",
        max_length=MAX_TEXT_LENGTH,
        help_text="Part of an affiliation's name, case-insensitive.",
    )
    withdrawn = _StrictBooleanFilter(
        method="filter_withdrawn", help_text="true: only withdrawn papers; false: none."
    )
    q = django_filters.CharFilter(
        method="filter_q",
        max_length=MAX_TEXT_LENGTH,
        validators=[query_validate],
        help_text=FULL_TEXT_HELP,
    )

    class Meta:
        model = Paper
        fields: list[str] = []

    def get_form_class(self):
        """The form of the filters, built once per class: its fields depend on the filters
        only, and building it (labels, field instances) costs more than running the filters.
        Each form instance still deep-copies the fields it uses."""
        form_class = type(self).__dict__.get("_form_class")
        if form_class is None:
            form_class = super().get_form_class()
            type(self)._form_class = form_class
        return form_class

    def filter_topic(self, queryset, name, value: str):
        paper_ids = Assignment.objects.accepted().in_subtree(value).order_by().values("paper_id")
        return queryset.filter(id__in=paper_ids)

    # The hints say what the query parameter is (for the schema); the field has already
    # cleaned it to a Topic / Category / bool.
    def filter_category(self, queryset, name, value: str):
        cross_listed = (
            Paper.cross_lists.through.objects.filter(category=value).order_by().values("paper_id")
        )
        return queryset.filter(Q(primary_category=value) | Q(id__in=cross_listed))

    def filter_primary_category(self, queryset, name, value: str):
        return queryset.filter(primary_category=value)

    def filter_withdrawn(self, queryset, name, value: bool):
        return queryset.filter(withdrawn=value)

    def filter_updated_after(self, queryset, name, value: dt.date):
        return queryset.filter(
            Q(updated__gte=value) | Q(updated__isnull=True, submitted__gte=value)
        )

    def filter_author(self, queryset, name, value: str):
        value = value.strip()
        if not value:
            return queryset
        paper_ids = (
            Authorship.objects.filter(author__name__icontains=value).order_by().values("paper_id")
        )
        return queryset.filter(id__in=paper_ids)

    def filter_affiliation(self, queryset, name, value: str):
        value = value.strip()
        if not value:
            return queryset
        paper_ids = (
            PaperAffiliation.objects.filter(affiliation__name__icontains=value)
            .order_by()
            .values("paper_id")
        )
        return queryset.filter(id__in=paper_ids)

    def filter_q(self, queryset, name, value: str):
        value = value.strip()
        return full_text_match(queryset, value) if value else queryset


class PaperOrderingFilter(OrderingFilter):
    """``ordering`` from :data:`ORDERING_FIELDS`, one field; ``id`` breaks ties in the same
    direction so the order is total (cursor pagination needs that). Anything else is a 400."""

    ordering_param = "ordering"
    ordering_fields = ("submitted", "updated", "id")
    ordering_description = "One of: " + ", ".join(ORDERING_FIELDS) + ". Default: -submitted."

    def get_ordering(self, request, queryset, view):
        raw = request.query_params.get(self.ordering_param)
        if raw is None or raw == "":
            return self.get_default_ordering(view)
        if raw not in ORDERING_FIELDS:
            raise ValidationError(
                {
                    self.ordering_param: [
                        f"Unknown ordering {raw!r}; allowed: {', '.join(ORDERING_FIELDS)}."
                    ]
                }
            )
        descending = raw.startswith("-")
        field = raw.lstrip("-")
        if field == "id":
            return (raw,)
        # Papers with one version have no ``updated``: order them by their submitted date,
        # through an annotation that is never null (cursor positions cannot be null).
        column = "last_updated" if field == "updated" else field
        sign = "-" if descending else ""
        return (f"{sign}{column}", f"{sign}id")

    def filter_queryset(self, request, queryset, view):
        ordering = self.get_ordering(request, queryset, view)
        if any(f.lstrip("-") == "last_updated" for f in ordering):
            queryset = queryset.annotate(last_updated=Coalesce("updated", "submitted"))
        return queryset.order_by(*ordering)

    def get_default_ordering(self, view):
        return ("-submitted", "-id")

    def get_schema_operation_parameters(self, view):
        return [
            {
                "name": self.ordering_param,
                "required": False,
                "in": "query",
                "description": self.ordering_description,
                "schema": {"type": "string", "enum": list(ORDERING_FIELDS)},
            }
        ]


class SearchFilter(PaperFilter):
    """The paper filters, with ``q`` required and ``mode``: ``q`` only validates here, the
    ranking (``topics.search.papers_search``) matches and ranks it in the view, since a
    semantic match needs none of q's words."""

    q = django_filters.CharFilter(
        method="filter_search_q",
        required=True,
        max_length=MAX_TEXT_LENGTH,
        validators=[query_validate, text_without_control_characters],
        help_text=FULL_TEXT_HELP + " Up to 300 characters.",
    )
    mode = django_filters.ChoiceFilter(
        method="filter_mode",
        choices=[(mode, mode) for mode in MODES],
        empty_label=None,
        error_messages={
            "invalid_choice": "Unknown mode %(value)r; one of: " + ", ".join(MODES) + "."
        },
        help_text=SEARCH_MODE_HELP,
    )

    def filter_search_q(self, queryset, name, value: str):
        return queryset

    def filter_mode(self, queryset, name, value: str):
        return queryset


class TopicFilter(django_filters.FilterSet):
    """Topics by ``q`` (part of the name, case-insensitive) and ``parent`` (slug)."""

    q = django_filters.CharFilter(
        field_name="name", lookup_expr="icontains", max_length=200, help_text="Part of the name."
    )
    parent = django_filters.CharFilter(
        field_name="parent__slug", max_length=200, help_text="Slug of the parent topic."
    )

    class Meta:
        model = Topic
        fields: list[str] = []


class ArxivIdFormField(forms.CharField):
    """An arXiv identifier in any common spelling, cleaned to its canonical form."""

    def clean(self, value):
        value = super().clean(value)
        if not value:
            return value
        try:
            return parse_arxiv_id(value)[0]
        except InvalidArxivId as error:
            raise forms.ValidationError(str(error)) from None


class ArxivIdFilter(django_filters.CharFilter):
    field_class = ArxivIdFormField


class AssignmentFilter(django_filters.FilterSet):
    """Filters of ``assignments/``: ``topic`` (slug, that topic only), ``paper`` (arXiv
    identifier, any spelling), ``state`` and ``source``."""

    topic = django_filters.ModelChoiceFilter(
        queryset=Topic.objects.all(), to_field_name="slug", help_text="Topic slug."
    )
    paper = ArxivIdFilter(
        field_name="paper__arxiv_id",
        help_text="arXiv identifier, any spelling (2409.01234v2, arXiv:…, an abs URL, the "
        "arXiv DOI).",
    )
    state = django_filters.ChoiceFilter(choices=Assignment.State.choices)
    source = django_filters.ChoiceFilter(choices=Assignment.Source.choices)

    class Meta:
        model = Assignment
        fields = ["topic", "paper", "state", "source"]
