"""The search page's form (``/search/``): the query and its filters, each bad value an error
that names the parameter and what it allows."""

from __future__ import annotations

import re

from django import forms

from papers.models import Category
from papers.taxonomy import UnknownCategory, canonical_category

from .search import DEFAULT_MODE, query_validate
from .search_page import SORTS
from .selectors import topic_by_slug

__all__ = ["QUERY_MAX_LENGTH", "SearchForm"]

# As /api/v1/search/'s q.
QUERY_MAX_LENGTH = 300
# C0 and C1 control characters other than tab, newline and carriage return.
_CONTROL_CHARACTER = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_DATE = {
    "required": False,
    "input_formats": ["%Y-%m-%d"],
    "error_messages": {"invalid": "Enter a date as YYYY-MM-DD."},
    "widget": forms.DateInput(attrs={"type": "date"}),
}
MODE_LABELS = (
    ("hybrid", "Words and meaning"),
    ("keyword", "Words only"),
    ("semantic", "Meaning only"),
)
SORT_LABELS = tuple(zip(SORTS, ("Relevance", "Newest"), strict=True))


class SearchForm(forms.Form):
    """``q`` (topic-rule language, at most :data:`QUERY_MAX_LENGTH` characters; blank: no
    search), ``topic`` (an active topic's slug, or an old slug that redirects; cleaned to the
    :class:`~topics.models.Topic`), ``category`` (an arXiv category code or alias, cleaned to
    the :class:`~papers.models.Category`), ``submitted_after`` / ``submitted_before``
    (YYYY-MM-DD, inclusive), ``sort`` (:data:`SORT_LABELS`), ``mode`` (:data:`MODE_LABELS`)
    and ``page`` (a whole number from 1). A query that does not parse is an error on ``q``
    with the parser's reason and 0-based position."""

    q = forms.CharField(
        required=False,
        strip=True,
        max_length=QUERY_MAX_LENGTH,
        label="Search papers",
        error_messages={
            "max_length": "The query is %(show_value)d characters long; at most "
            "%(limit_value)d are allowed."
        },
    )
    topic = forms.CharField(required=False, max_length=200, label="Topic")
    category = forms.CharField(required=False, max_length=40, label="Category")
    submitted_after = forms.DateField(label="Submitted from", **_DATE)
    submitted_before = forms.DateField(label="to", **_DATE)
    sort = forms.ChoiceField(
        required=False,
        choices=SORT_LABELS,
        error_messages={
            "invalid_choice": "Unknown sort %(value)s; one of: " + ", ".join(SORTS) + "."
        },
    )
    mode = forms.ChoiceField(
        required=False,
        choices=MODE_LABELS,
        label="Match",
        error_messages={
            "invalid_choice": "Unknown mode %(value)s; one of: "
            + ", ".join(value for value, _ in MODE_LABELS)
            + "."
        },
    )
    page = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=1_000_000,
        widget=forms.HiddenInput,
        error_messages={"invalid": "page must be a whole number from 1."},
    )

    def clean_q(self) -> str:
        query = self.cleaned_data["q"]
        found = _CONTROL_CHARACTER.search(query)
        if found:
            raise forms.ValidationError(
                "Control character U+%(code)04X at position %(position)d is not allowed.",
                params={"code": ord(found.group()), "position": found.start()},
            )
        if query:
            query_validate(query)
        return query

    def clean_topic(self):
        slug = self.cleaned_data["topic"].strip()
        if not slug:
            return None
        topic = topic_by_slug(slug)
        if topic is None:
            raise forms.ValidationError(
                "Unknown topic %(slug)s; the topics are listed at /topics/.",
                params={"slug": slug},
            )
        return topic

    def clean_category(self):
        code = self.cleaned_data["category"].strip()
        if not code:
            return None
        try:
            canonical = canonical_category(code)
        except UnknownCategory:
            canonical = None
        category = Category.objects.filter(code=canonical).first() if canonical else None
        if category is None:
            raise forms.ValidationError(
                "Unknown arXiv category %(code)s (a code such as cs.CL).",
                params={"code": code},
            )
        return category

    def clean_sort(self) -> str:
        return self.cleaned_data["sort"] or SORTS[0]

    def clean_mode(self) -> str:
        return self.cleaned_data["mode"] or DEFAULT_MODE

    def clean_page(self) -> int:
        return self.cleaned_data["page"] or 1

    def clean(self):
        cleaned = super().clean()
        after, before = cleaned.get("submitted_after"), cleaned.get("submitted_before")
        if after and before and after > before:
            self.add_error(
                "submitted_before",
                forms.ValidationError(
                    "The range ends (%(before)s) before it starts (%(after)s).",
                    params={"before": before.isoformat(), "after": after.isoformat()},
                ),
            )
        return cleaned

    @property
    def filtered(self) -> bool:
        """Whether any filter (topic, category, dates) narrows the search."""
        data = self.cleaned_data
        return any(
            data.get(name) for name in ("topic", "category", "submitted_after", "submitted_before")
        )
