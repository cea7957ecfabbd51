"""Follow.label: what the follows page, the feed and messages show of a follow."""

import pytest

from follows.models import Follow


@pytest.mark.parametrize(
    ("query", "label"),
    [
        ("agent training", "“agent training”"),
        ('"tool use"', '"tool use"'),
        ('"tool use" agent*', '"tool use" agent*'),
        ("“reward shaping”", "“reward shaping”"),
        ("«agents»", "«agents»"),
    ],
)
def test_a_saved_search_label_quotes_the_query_once(query, label):
    assert Follow(kind=Follow.Kind.SEARCH, query=query).label == label


def test_search_matches_are_named_right_in_the_admin():
    from follows.models import SearchMatch

    assert SearchMatch._meta.verbose_name_plural == "search matches"
