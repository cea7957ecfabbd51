"""The rule preview (``topics.tagging.preview.rule_preview``): counts and samples as tagging
would match, categories counted in the database, the scan limit, syntax errors."""

import datetime as dt

import pytest

from papers.tests.factories import CategoryFactory, PaperFactory
from topics.services import topic_create
from topics.tagging.engine import papers_tag
from topics.tagging.preview import rule_preview
from topics.tagging.rules import RuleSyntaxError

pytestmark = pytest.mark.django_db


@pytest.fixture
def library():
    ai, lg, th = (CategoryFactory(code=code) for code in ("cs.AI", "cs.LG", "hep-th"))
    papers = [
        PaperFactory(title="Agents that plan", primary_category=ai, submitted=dt.date(2026, 9, 1)),
        PaperFactory(title="Reagents in a lab", primary_category=ai, submitted=dt.date(2026, 9, 2)),
        PaperFactory(title="Learning agents", primary_category=lg, submitted=dt.date(2026, 9, 3)),
        PaperFactory(
            title="Holographic agents", primary_category=th, submitted=dt.date(2026, 9, 4)
        ),
        PaperFactory(title="Strings", primary_category=th, submitted=dt.date(2026, 9, 5)),
    ]
    papers[3].cross_lists.add(ai)
    for paper in papers:
        paper.abstract = "Nothing to see."
        paper.save()
    return {"categories": {"cs.AI": ai, "cs.LG": lg, "hep-th": th}, "papers": papers}


def titles(papers):
    return [paper.title for paper in papers]


def test_preview_counts_and_samples_newest_first_as_tagging_would(library):
    ai = library["categories"]["cs.AI"]
    preview = rule_preview(query="agents", categories=[ai], sample_size=1)

    # "Reagents" is not the word; the hep-th paper is cross-listed in cs.AI.
    assert (preview.count, preview.checked, preview.complete) == (2, 3, True)
    assert titles(preview.sample) == ["Holographic agents"]

    topic = topic_create(name="Agents", rule_query="agents", rule_categories=[ai])
    papers_tag(paper_ids=[paper.pk for paper in library["papers"]])
    full = rule_preview(query="agents", categories=[ai.pk], sample_size=10)
    assert {p.pk for p in full.sample} == set(topic.assignments.values_list("paper_id", flat=True))


def test_preview_of_categories_only_counts_in_the_database(library):
    th = library["categories"]["hep-th"]
    preview = rule_preview(query="", categories=[th])
    assert (preview.count, preview.complete) == (2, True)
    assert titles(preview.sample) == ["Strings", "Holographic agents"]


def test_preview_of_no_rule_matches_nothing(library):
    assert rule_preview(query="  ", categories=[]) == rule_preview(query="", categories=())
    assert rule_preview(query="", categories=[]).count == 0


def test_preview_stops_at_the_scan_limit_and_says_so(library):
    preview = rule_preview(query="agents OR strings", scan_limit=2)
    # The two newest: "Strings" and "Holographic agents".
    assert (preview.count, preview.checked, preview.complete) == (2, 2, False)
    exact = rule_preview(query="agents OR strings", scan_limit=5)
    assert (exact.count, exact.checked, exact.complete) == (4, 5, True)


def test_preview_of_a_malformed_rule_gives_the_position(library):
    with pytest.raises(RuleSyntaxError) as error:
        rule_preview(query='agents AND ("tool', categories=[])
    assert error.value.position == 12
