"""Every FilterSet of the API: the paper lists' (``papers/``, ``topics/{slug}/papers/``,
``search/``, exports), the topic list's and the assignments'.

:class:`PaperFilter` (django-filter) takes, all optional:

- ``topic``: a topic slug (an old slug of a renamed topic works too); papers with an accepted
  assignment to the topic or any descendant;
- ``category``: an arXiv category code, as primary category or cross-list; aliases
  (``math.MP``) resolve to the canonical code; ``primary_category``: primary only;
- ``submitted``: ``YYYY-MM-DD`` or ``YYYY`` (that day or year), ``>…`` after it, ``<…`` before
  it (OpenAlex's comparison convention); ``submitted_after`` / ``submitted_before``: ISO 8601
  dates (YYYY-MM-DD), both inclusive;
- ``updated_after``: the latest version dated on or after (a paper with one version counts its
  submitted date);
- ``author`` / ``affiliation``: case-insensitive substring of an author's / affiliation's name;
- ``withdrawn``: ``true`` or ``false``;
- ``topic``, ``category``, ``primary_category``, ``author``, ``affiliation`` take OpenAlex's
  conventions (:class:`Alternatives`): ``a|b`` for any of them, a leading ``!`` for none of
  them (``category=cs.CL|cs.AI``, ``category=!hep-th``), at most :data:`MAX_ALTERNATIVES`;
  an unknown code or slug among them, or an empty alternative, is a 400 naming it;
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

import copy
import datetime as dt
import re
from dataclasses import dataclass

import django_filters
from django import forms
from django.db import connection
from django.db.models import Q, QuerySet
from django.db.models.functions import Coalesce
from django.http import QueryDict
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import extend_schema_field
from rest_framework.exceptions import ValidationError
from rest_framework.filters import OrderingFilter

from papers.categories import categories_by_code
from papers.identifiers import InvalidArxivId, parse_arxiv_id
from papers.models import Affiliation, Author, Authorship, Paper, PaperAffiliation
from papers.taxonomy import UnknownCategory, canonical_category
from topics.index import topic_index
from topics.models import Assignment, Topic
from topics.search import MODES, full_text_match, query_validate
from topics.selectors import topic_by_slug
from topicsite.planner import planner_rows, planner_table_rows

__all__ = [
    "NAME_FILTERS",
    "ORDERING_FIELDS",
    "AssignmentFilter",
    "PaperFilter",
    "PaperOrderingFilter",
    "SearchFilter",
    "TopicFilter",
    "name_ids_matching",
    "submitted_range",
    "name_links",
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


MAX_ALTERNATIVES = 50


# When a category filter reads its papers as a union (see ``PaperFilter.filter_category``),
# from costs measured at 1M papers (vacuumed, as autovacuum keeps them; cross-lists indexed
# by (category, paper), papers 0017). A page of 25 walks about 25 N / T papers newest first
# for T matches among N, at about 0.13 us a paper (index only), against about 10 us a match
# for the union (indexes, table, hash): the union is cheaper for a page while T x T stays
# under 0.33 N, below about 570 matches at 1M. The capped count (``api.facets``, 1,001 rows)
# walks ``paper_category_newest_idx`` in category order, so its cost is where the category
# sits in that index rather than its size (math.AG, 23,400 papers: 79 ms walked, 9 ms as a
# union); the union's is its size (0.3-0.5 us a match: cs.CE's 5,400 in 4.5 ms, gr-qc's
# 54,000 in 17, astro-ph's 189,000 in 56 against 0.2 walked): the union below about 32,000
# matches at 1M (T x T under 1,000 N). "estimate" always takes the union: the planner
# estimates it from its per-category statistics (math.PR: 28,143 for 28,262 papers), while
# it takes the ``OR`` of the walked form to match half of all papers (510,262).
# "unread": the filtered papers are read for neither the page nor the count (a category walk,
# ``api.views.papers.PaperListView``, reads both from index ranges), so no form is estimated.
CATEGORY_UNION_FACTOR = {"page": 0.33, "count": 1000.0, "estimate": float("inf"), "unread": 0.0}


def category_union_wanted(
    primary: QuerySet, cross_listed: QuerySet, *, purpose: str, known: dict | None = None
) -> bool:
    """Whether a category filter should read its papers as a union for ``purpose``
    (``"page"``: a page newest first; ``"count"``: the list's capped count; ``"estimate"``:
    the planner's estimate of a count above the cap, always a union; ``"unread"``: neither,
    never a union): on PostgreSQL when the planner's estimates of ``primary`` (papers of the
    categories) plus ``cross_listed`` (their cross-list rows), squared, stay below
    :data:`CATEGORY_UNION_FACTOR` [purpose] x the papers table's estimated size; never
    elsewhere. Two ``EXPLAIN`` s and a catalogue read, no row read; none when ``known`` (a
    dict kept for one request) already holds the estimates of the same two querysets, or
    when the purpose's answer does not depend on them. Raises ``KeyError`` for another
    ``purpose``."""
    factor = CATEGORY_UNION_FACTOR[purpose]
    if connection.vendor != "postgresql" or factor == 0:
        return False
    if factor == float("inf"):
        return True
    key = (str(primary.query), str(cross_listed.query), primary.db)
    found = None if known is None else known.get(key)
    if found is None:
        found = (
            planner_rows(primary) + planner_rows(cross_listed),
            planner_table_rows(Paper, using=primary.db),
        )
        if known is not None:
            known[key] = found
    matches, papers = found
    return matches * matches < factor * max(papers, 1)


@dataclass(frozen=True)
class Alternatives:
    """A filter value in OpenAlex's conventions: ``a|b`` (any of them) and a leading ``!``
    (none of them: ``!a``, ``!a|b``). ``values`` are the cleaned alternatives, in order."""

    values: tuple
    negated: bool = False

    def q(self, one) -> Q:
        """The ``Q`` of the whole value from ``one`` (alternative -> ``Q``): OR-ed, negated
        for ``!``."""
        combined = Q()
        for value in self.values:
            combined |= one(value)
        return ~combined if self.negated else combined


class AlternativesField(forms.CharField):
    """A field taking ``a``, ``a|b|…`` (at most :data:`MAX_ALTERNATIVES`) and ``!a|…``; each
    alternative cleaned by :meth:`clean_one`. An empty alternative (``a||b``, ``a|``, ``!``)
    is an error naming it. Cleans to :class:`Alternatives`, or None when blank."""

    def clean_one(self, value: str):
        return value

    def clean(self, value):
        value = super().clean(value)
        if not value:
            return None
        negated = value.startswith("!")
        parts = value[1:].split("|") if negated else value.split("|")
        if len(parts) > MAX_ALTERNATIVES:
            raise forms.ValidationError(
                "At most %(most)d alternatives separated by |; got %(count)d.",
                params={"most": MAX_ALTERNATIVES, "count": len(parts)},
            )
        if any(not part.strip() for part in parts):
            raise forms.ValidationError(
                "Empty alternative in %(value)r: write a|b for either, !a for not a.",
                params={"value": value},
            )
        cleaned = tuple(dict.fromkeys(self.clean_all([part.strip() for part in parts])))
        return Alternatives(values=cleaned, negated=negated)

    def clean_all(self, values: list[str]) -> list:
        """Each of ``values`` cleaned by :meth:`clean_one`, in order (a subclass may look
        them up together)."""
        return [self.clean_one(value) for value in values]


ALTERNATIVES_HELP = " Several: a|b (any of them); !a or !a|b: none of them."


class TopicSlugField(AlternativesField):
    """Topic slugs (``a|b``, ``!a``), each cleaned to the active :class:`Topic` (old slugs
    follow their redirect)."""

    def clean_one(self, value):
        topic = topic_by_slug(value)
        if topic is None:
            # The value goes in params: Django %-formats messages, and a slug may hold "%".
            raise forms.ValidationError(
                "Unknown topic slug %(value)r; the slugs are listed at /api/v1/topics/.",
                params={"value": value},
            )
        return topic


class CategoryCodeField(AlternativesField):
    """arXiv category codes (``a|b``, ``!a``), each cleaned to the stored :class:`Category`
    (aliases resolved)."""

    def clean_all(self, values: list[str]) -> list:
        """The categories of ``values``, in order, read in one query; the first unknown code
        is the error."""
        codes = []
        for value in values:
            try:
                codes.append(canonical_category(value))
            except UnknownCategory:
                codes.append(None)
        stored = categories_by_code(code for code in codes if code)
        for value, code in zip(values, codes, strict=True):
            if stored.get(code) is None:
                raise forms.ValidationError(
                    "Unknown category code %(value)r; the codes are listed at /api/v1/categories/.",
                    params={"value": value},
                )
        return [stored[code] for code in codes]


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


class SubmittedField(forms.CharField):
    """``YYYY-MM-DD`` or ``YYYY``, optionally after ``>`` or ``<``: cleans to ``(operator,
    first day, last day)`` of that day or year, operator ``""``, ``">"`` or ``"<"``."""

    _PATTERN = re.compile(r"([<>]?)(\d{4})(?:-(\d{2})-(\d{2}))?")

    def clean(self, value):
        value = super().clean(value)
        if not value:
            return None
        match = self._PATTERN.fullmatch(value.strip())
        try:
            if match is None:
                raise ValueError
            operator, year, month, day = match.groups()
            if month is None:
                first, last = dt.date(int(year), 1, 1), dt.date(int(year), 12, 31)
            else:
                first = last = dt.date(int(year), int(month), int(day))
        except ValueError:
            raise forms.ValidationError(
                "Expected YYYY-MM-DD or YYYY, optionally after > or <; got %(value)r.",
                params={"value": value},
            ) from None
        return operator, first, last


def submitted_range(cleaned: dict) -> tuple[dt.date | None, dt.date | None]:
    """``(since, until)``, both inclusive, of the cleaned submitted filters in ``cleaned``
    (:class:`PaperFilter`'s: ``submitted`` as ``(operator, first, last)``,
    ``submitted_after`` and ``submitted_before`` as dates); None where unbounded. Raises
    ``OverflowError`` for ``>9999-12-31`` or ``<0001-01-01``."""
    since, until = cleaned.get("submitted_after"), cleaned.get("submitted_before")
    submitted = cleaned.get("submitted")
    bounds_since, bounds_until = [since], [until]
    if submitted is not None:
        operator, first, last = submitted
        if operator == ">":
            bounds_since.append(last + dt.timedelta(days=1))
        elif operator == "<":
            bounds_until.append(first - dt.timedelta(days=1))
        else:
            bounds_since.append(first)
            bounds_until.append(last)
    since = max((day for day in bounds_since if day is not None), default=None)
    until = min((day for day in bounds_until if day is not None), default=None)
    return since, until


class _SubmittedFilter(django_filters.Filter):
    field_class = SubmittedField


class CountField(forms.CharField):
    """A count compared OpenAlex's way: ``N`` (exactly), ``>N`` (more than), ``<N`` (fewer
    than), N a whole number below 10^12; several joined by ``|`` match any of them (at most
    :data:`MAX_ALTERNATIVES`). Cleans to a tuple of ``(operator, N)``, operator ``""``,
    ``">"`` or ``"<"``; None when blank."""

    _PATTERN = re.compile(r"([<>]?)(\d{1,12})")

    def clean(self, value):
        value = super().clean(value)
        if not value:
            return None
        parts = value.split("|")
        if len(parts) > MAX_ALTERNATIVES:
            raise forms.ValidationError(
                "At most %(most)d alternatives separated by |; got %(count)d.",
                params={"most": MAX_ALTERNATIVES, "count": len(parts)},
            )
        cleaned = []
        for part in parts:
            match = self._PATTERN.fullmatch(part.strip())
            if match is None:
                raise forms.ValidationError(
                    "Expected a whole number, >N or <N (several joined by |); got %(value)r.",
                    params={"value": part},
                )
            cleaned.append((match.group(1), int(match.group(2))))
        return tuple(cleaned)


def count_matches(count: int, comparisons) -> bool:
    """Whether ``count`` satisfies any of ``comparisons`` (:class:`CountField`'s value)."""
    for operator, number in comparisons:
        if operator == ">" and count > number:
            return True
        if operator == "<" and count < number:
            return True
        if not operator and count == number:
            return True
    return False


class _CountFilter(django_filters.Filter):
    field_class = CountField


class _TextAlternativesField(AlternativesField):
    pass


class _TextAlternativesFilter(django_filters.CharFilter):
    field_class = _TextAlternativesField


class _TopicFilter(django_filters.Filter):
    field_class = TopicSlugField


class _CategoryFilter(django_filters.Filter):
    field_class = CategoryCodeField


class _StrictBooleanFilter(django_filters.Filter):
    field_class = StrictBooleanField


# The text filters on names: the link rows (a paper's authorships, its affiliations) and
# the name they reach.
NAME_FILTERS = {
    "author": (Authorship, "author__name"),
    "affiliation": (PaperAffiliation, "affiliation__name"),
}


def _names_q(value: Alternatives, field: str) -> Q:
    """``field`` holding any of ``value``'s texts, case-insensitive (``!`` ignored)."""
    return Alternatives(value.values).q(lambda text: Q(**{f"{field}__icontains": text}))


def name_links(name: str, value: Alternatives) -> QuerySet:
    """The link rows of the text filter ``name`` (a key of :data:`NAME_FILTERS`: authorships
    for ``author``, paper affiliations for ``affiliation``) whose name holds any of
    ``value``'s texts, case-insensitive (``!`` ignored: the papers of these rows are those
    ``!`` leaves out)."""
    links, field = NAME_FILTERS[name]
    return links.objects.filter(_names_q(value, field))


# The named rows of each text filter on names.
NAMED = {"author": Author, "affiliation": Affiliation}


def name_ids_matching(name: str, value: Alternatives, *, limit: int) -> list[int]:
    """Ids of at most ``limit`` rows of the text filter ``name`` (a key of
    :data:`NAME_FILTERS`): authors for ``author`` (merged variants included: they hold no
    authorships), affiliations for ``affiliation``, whose name holds any of ``value``'s
    texts, as the filter matches them (``!`` ignored). One query (for authors the trigram
    index of papers 0005 serves it)."""
    return list(
        NAMED[name]
        .objects.filter(_names_q(value, "name"))
        .order_by()
        .values_list("pk", flat=True)[:limit]
    )


def _name_match(queryset, value: Alternatives, name: str):
    """Papers of ``queryset`` linked (:func:`name_links`) to a name holding any of
    ``value``'s texts, case-insensitive; for ``!``, papers linked to none."""
    paper_ids = name_links(name, value).order_by().values("paper_id")
    if value.negated:
        return queryset.exclude(id__in=paper_ids)
    return queryset.filter(id__in=paper_ids)


class FilterSet(django_filters.FilterSet):
    """django-filter's ``FilterSet`` whose instances copy their filters shallowly.

    django-filter deep-copies every declared filter for each filterset it makes (and a paper
    list makes two or three a request: the page's, the count's, the estimate's); the deep copy
    walks each filter's field arguments and was a tenth of the Python time of a filtered list.
    A filter's per-instance state is its ``parent`` and ``model`` (set here, as django-filter
    sets them) and, for a filter with ``method``, the ``FilterMethod`` that reaches that
    parent (made again for the copy), and the field's arguments (``extra``: a filter may
    write there), copied too; everything else (the cached form field, which each form
    deep-copies in turn) is only read. Otherwise the same as
    ``django_filters.filterset.BaseFilterSet.__init__``."""

    def __init__(self, data=None, queryset=None, *, request=None, prefix=None):
        if queryset is None:
            queryset = self._meta.model._default_manager.all()
        self.is_bound = data is not None
        self.data = data or QueryDict()
        self.queryset = queryset
        self.request = request
        self.form_prefix = prefix
        self.filters = {
            name: _bound_copy(declared, parent=self, model=queryset.model)
            for name, declared in self.base_filters.items()
        }


def _bound_copy(declared: django_filters.Filter, *, parent, model) -> django_filters.Filter:
    """A shallow copy of the declared filter ``declared`` for the filterset ``parent``."""
    bound = copy.copy(declared)
    # Its own field arguments: a filter may write there while making its field (a model
    # choice filter puts its queryset, a callable's answer for the request, in them).
    bound.extra = dict(declared.extra)
    if declared.method is not None:
        # The setter makes the FilterMethod that resolves the method on this copy's parent.
        bound.method = declared.method
    bound.model = model
    bound.parent = parent
    return bound


class PaperFilter(FilterSet):
    """The paper-list filters (see the module docstring). Each filter narrows with a subquery,
    so no filter multiplies rows and no ``DISTINCT`` is needed. ``purpose`` (``"page"``, the
    default, ``"count"`` or ``"estimate"``) says what the filtered papers are read for, where
    a filter's fastest or best-estimated form depends on it (``category``)."""

    purpose = "page"

    topic = _TopicFilter(
        method="filter_topic", help_text="Topic slug; descendants included." + ALTERNATIVES_HELP
    )
    category = _CategoryFilter(
        method="filter_category",
        help_text="arXiv category code, as primary or cross-list." + ALTERNATIVES_HELP,
    )
    primary_category = _CategoryFilter(
        method="filter_primary_category",
        help_text="arXiv category code, as primary category." + ALTERNATIVES_HELP,
    )
    submitted = _SubmittedFilter(
        method="filter_submitted",
        help_text="Submitted (v1): YYYY-MM-DD (that day), YYYY (that year), >YYYY-MM-DD or "
        ">YYYY (after it), <YYYY-MM-DD or <YYYY (before it); OpenAlex's comparison "
        "convention. submitted_after / submitted_before are the inclusive forms.",
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
    author = _TextAlternativesFilter(
        method="filter_author",
        max_length=MAX_TEXT_LENGTH,
        help_text="Part of an author's name, case-insensitive." + ALTERNATIVES_HELP,
    )
    affiliation = _TextAlternativesFilter(
        method="filter_affiliation",
        max_length=MAX_TEXT_LENGTH,
        help_text="Part of an affiliation's name, case-insensitive." + ALTERNATIVES_HELP,
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

    @property
    def form(self):
        """The bound form, shared by every filterset of this class over the same data in one
        request (a list's page, count and estimate filtersets, ``api.views.papers``): its
        values are cleaned once, and cleaning a category code or a topic slug is a query."""
        if not hasattr(self, "_form"):
            shared = None
            if self.request is not None and self.is_bound:
                shared = self.request.__dict__.setdefault("_paper_filter_forms", {})
                found = shared.get(type(self))
                if found is not None and found.data is self.data:
                    self._form = found
                    return found
            form = super().form
            if shared is not None:
                shared[type(self)] = form
        return self._form

    # The hints say what the query parameter is (for the schema); the field has already
    # cleaned it to Alternatives of Topics / Categories / texts, or a bool.
    def filter_topic(self, queryset, name, value: str):
        return queryset.filter(
            value.q(
                lambda topic: Q(
                    id__in=Assignment.objects.accepted()
                    .in_subtree(topic)
                    .order_by()
                    .values("paper_id")
                )
            )
        )

    def filter_category(self, queryset, name, value: str):
        """Papers whose primary category or a cross-list is one of the value's categories.

        Two ways to ask PostgreSQL, each several times the other's cost at one end: ``primary IN
        (…) OR id IN (cross-listed)`` lets it walk the papers newest first and stop at a
        page (or at the count's cap) as soon as enough match, which is cheap for a common
        category and reads every paper for a rare one (the planner takes the ``OR`` with a
        subquery to match half of all papers, so it walks: a 4,600-paper category's count
        read all 1M papers, 129-375 ms); ``id IN (primary UNION ALL cross-listed)`` reads the
        category's papers through their indexes, which is cheap for a rare category and
        reads hundreds of thousands for a common one. :func:`category_union_wanted` chooses
        from the planner's estimates of the two parts, which it makes well (per-category
        statistics), for the filterset's :attr:`purpose`: a page and a count of the same list
        can choose differently."""
        categories = list(value.values)
        primary = Paper.objects.filter(primary_category__in=categories).order_by().values("id")
        cross_listed = (
            Paper.cross_lists.through.objects.filter(category__in=categories)
            .order_by()
            .values("paper_id")
        )
        # The page's and the count's filtersets of one request share the estimates.
        known = None
        if self.request is not None:
            known = self.request.__dict__.setdefault("_category_estimates", {})
        if not value.negated and category_union_wanted(
            primary, cross_listed, purpose=self.purpose, known=known
        ):
            return queryset.filter(id__in=primary.union(cross_listed, all=True))
        either = Q(primary_category__in=categories) | Q(id__in=cross_listed)
        return queryset.filter(~either if value.negated else either)

    def filter_primary_category(self, queryset, name, value: str):
        either = Q(primary_category__in=list(value.values))
        return queryset.filter(~either if value.negated else either)

    def filter_submitted(self, queryset, name, value: tuple):
        operator, first, last = value
        if operator == ">":
            return queryset.filter(submitted__gt=last)
        if operator == "<":
            return queryset.filter(submitted__lt=first)
        return queryset.filter(submitted__gte=first, submitted__lte=last)

    def filter_withdrawn(self, queryset, name, value: bool):
        return queryset.filter(withdrawn=value)

    def filter_updated_after(self, queryset, name, value: dt.date):
        return queryset.filter(
            Q(updated__gte=value) | Q(updated__isnull=True, submitted__gte=value)
        )

    def filter_author(self, queryset, name, value: Alternatives):
        return _name_match(queryset, value, "author")

    def filter_affiliation(self, queryset, name, value: Alternatives):
        return _name_match(queryset, value, "affiliation")

    def filter_q(self, queryset, name, value: str):
        value = value.strip()
        return full_text_match(queryset, value) if value else queryset


class PaperFilterBackend(DjangoFilterBackend):
    """django-filter's backend, with the filterset's :attr:`PaperFilter.purpose` taken from
    the view's ``filter_purpose()`` when it has one (what the filtered papers will be read
    for)."""

    def get_filterset(self, request, queryset, view):
        filterset = super().get_filterset(request, queryset, view)
        if filterset is not None and hasattr(view, "filter_purpose"):
            filterset.purpose = view.filter_purpose()
        return filterset


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


PAPER_COUNT_HELP = (
    "Papers in the topic, descendants included (`paper_count` of the answer), compared "
    "OpenAlex's way: 100 (exactly), >100 (more), <10 (fewer); a|b for any of them (<5|>1000)."
)


class TopicFilter(FilterSet):
    """Topics by ``q`` (part of the name, case-insensitive), ``parent`` (slug) and
    ``paper_count`` (:class:`CountField`: the index's subtree counts)."""

    q = django_filters.CharFilter(
        field_name="name", lookup_expr="icontains", max_length=200, help_text="Part of the name."
    )
    parent = django_filters.CharFilter(
        field_name="parent__slug", max_length=200, help_text="Slug of the parent topic."
    )
    paper_count = _CountFilter(method="filter_paper_count", help_text=PAPER_COUNT_HELP)

    # A method filter of no model field: its schema said here (the text with it, as
    # drf-spectacular then reads no help_text).
    @extend_schema_field({"type": "string", "description": PAPER_COUNT_HELP})
    def filter_paper_count(self, queryset, name, value):
        keep = [item.pk for item in topic_index().topics if count_matches(item.paper_count, value)]
        return queryset.filter(pk__in=keep)

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


class AssignmentFilter(FilterSet):
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
