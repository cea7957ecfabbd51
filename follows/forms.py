"""Forms of the follows page. Checking a saved search is the service's job
(``follows.services.follow_search_create``); these forms only shape the input."""

import re

from django import forms

from .models import Follow

_LIST_SEPARATOR = re.compile(r"[\s,]+")


def _split(value: str) -> list[str]:
    """``"cs.CL, cs.LG  stat.ML"`` -> ``["cs.CL", "cs.LG", "stat.ML"]``."""
    return [item for item in _LIST_SEPARATOR.split(value or "") if item]


class SavedSearchForm(forms.Form):
    """A new saved search: a query, optional topic slugs and category codes (comma or space
    separated), a digest frequency. ``cleaned_data["topics"]`` and ``["categories"]`` are
    lists of str."""

    query = forms.CharField(
        max_length=Follow.QUERY_MAX_LENGTH,
        help_text='Words, "phrases", prefix*, OR, NOT or -word, parentheses.',
    )
    topics = forms.CharField(
        required=False,
        label="Only in topics",
        help_text="Topic slugs, comma separated (optional).",
    )
    categories = forms.CharField(
        required=False,
        label="Only in categories",
        help_text="arXiv category codes such as cs.CL, comma separated (optional).",
    )
    digest_frequency = forms.ChoiceField(
        choices=Follow.Frequency.choices, initial=Follow.Frequency.WEEKLY, label="Digest"
    )

    def clean_topics(self):
        return _split(self.cleaned_data["topics"])

    def clean_categories(self):
        return _split(self.cleaned_data["categories"])


class DigestFrequencyForm(forms.Form):
    """How often one follow goes into the digests."""

    digest_frequency = forms.ChoiceField(choices=Follow.Frequency.choices, label="Digest")


class ImportForm(forms.Form):
    """An export file to import (``follows.services.follows_import`` checks its content)."""

    file = forms.FileField(label="Export file (JSON)")
