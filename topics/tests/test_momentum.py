"""topics.momentum: counts, windows, wording and chart weeks on constructed data."""

import datetime as dt

import pytest

from papers.tests.factories import PaperFactory
from topics.models import Assignment
from topics.momentum import (
    Momentum,
    WeekCount,
    momentum_chart,
    momentum_sentence,
    topic_momentum,
    week_label,
)
from topics.tests.factories import AssignmentFactory, TopicFactory

AS_OF = dt.date(2026, 9, 29)  # the reference page's newest paper, a Tuesday


def days_before(n):
    return AS_OF - dt.timedelta(days=n)


def paper_in(topic, submitted, state=Assignment.State.ACCEPTED):
    paper = PaperFactory(submitted=submitted)
    AssignmentFactory(paper=paper, topic=topic, state=state)
    return paper


def momentum(recent=54, before=22, change_pct=145, share=0.005, weeks=()):
    return Momentum(
        as_of=AS_OF,
        recent=recent,
        before=before,
        change_pct=change_pct,
        share=share,
        weeks=list(weeks),
    )


@pytest.mark.django_db
def test_windows_are_half_open_and_the_boundary_day_belongs_to_before():
    topic = TopicFactory()
    paper_in(topic, AS_OF)
    paper_in(topic, days_before(27))
    paper_in(topic, days_before(28))  # exactly as_of - 28: the previous window
    paper_in(topic, days_before(55))
    paper_in(topic, days_before(56))  # exactly as_of - 56: in neither window
    PaperFactory(submitted=days_before(3))  # not in the topic: only in the share's denominator

    m = topic_momentum(topic=topic)

    assert m.as_of == AS_OF
    assert (m.recent, m.before) == (2, 2)
    assert m.change_pct == 0
    assert m.share == pytest.approx(2 / 3)


@pytest.mark.django_db
def test_rejected_assignments_do_not_count_but_their_papers_are_still_new_papers():
    topic = TopicFactory()
    paper_in(topic, AS_OF)
    paper_in(topic, days_before(1), state=Assignment.State.REJECTED)
    paper_in(topic, days_before(30), state=Assignment.State.REJECTED)

    m = topic_momentum(topic=topic)

    assert (m.recent, m.before) == (1, 0)
    assert m.change_pct is None
    assert m.share == pytest.approx(1 / 2)


@pytest.mark.django_db
def test_parent_counts_descendants_and_each_paper_once():
    parent = TopicFactory()
    child_a = TopicFactory(parent=parent)
    child_b = TopicFactory(parent=parent)
    grandchild = TopicFactory(parent=child_a)
    unrelated = TopicFactory()
    shared = paper_in(child_a, AS_OF)
    AssignmentFactory(paper=shared, topic=child_b)
    AssignmentFactory(paper=shared, topic=parent)
    paper_in(grandchild, days_before(2))
    paper_in(child_b, days_before(40))
    paper_in(unrelated, days_before(1))

    assert (topic_momentum(topic=parent).recent, topic_momentum(topic=parent).before) == (2, 1)
    assert topic_momentum(topic=child_a).recent == 2
    assert topic_momentum(topic=child_b).recent == 1
    assert topic_momentum(topic=grandchild).recent == 1
    assert topic_momentum(topic=unrelated).recent == 1
    assert topic_momentum(topic=parent).weeks[-1] == WeekCount(dt.date(2026, 9, 28), 1)


@pytest.mark.django_db
def test_as_of_defaults_to_newest_paper_overall_and_can_be_given():
    topic = TopicFactory()
    paper_in(topic, dt.date(2026, 9, 1))
    paper_in(topic, dt.date(2026, 8, 20))
    PaperFactory(submitted=dt.date(2026, 9, 10))  # newest paper, outside the topic

    m = topic_momentum(topic=topic)
    assert m.as_of == dt.date(2026, 9, 10)
    assert (m.recent, m.before) == (2, 0)

    earlier = topic_momentum(topic=topic, as_of=dt.date(2026, 8, 31))
    assert earlier.as_of == dt.date(2026, 8, 31)
    # The Sep 1 paper is after as_of: counted nowhere, not even in the chart.
    assert (earlier.recent, earlier.before) == (1, 0)
    assert sum(w.count for w in earlier.weeks) == 1
    assert earlier.share == pytest.approx(1.0)


@pytest.mark.django_db
def test_change_is_a_whole_percent_rounded_half_away_from_zero():
    up, down = TopicFactory(), TopicFactory()
    for _ in range(3):
        paper_in(up, days_before(1))
    for _ in range(2):
        paper_in(up, days_before(30))
    for _ in range(3):
        paper_in(down, days_before(1))
    for _ in range(8):
        paper_in(down, days_before(40))

    assert topic_momentum(topic=up).change_pct == 50
    # (3 - 8) / 8 = -62.5%: half away from zero gives 63; Python's round() would give 62.
    assert topic_momentum(topic=down).change_pct == -63


@pytest.mark.django_db
def test_empty_database_uses_today_and_reports_nothing():
    topic = TopicFactory()
    m = topic_momentum(topic=topic)
    assert (m.recent, m.before, m.change_pct, m.share) == (0, 0, None, 0.0)
    assert len(m.weeks) == 12
    assert momentum_sentence(m) == (
        "No new papers in the last four weeks, nor in the four weeks before."
    )


@pytest.mark.django_db
def test_twelve_monday_weeks_ending_with_the_week_of_as_of():
    topic = TopicFactory()
    paper_in(topic, dt.date(2026, 7, 13))  # Monday of the first chart week
    paper_in(topic, dt.date(2026, 7, 12))  # the Sunday before: outside the chart
    paper_in(topic, dt.date(2026, 9, 27))  # Sunday: week of Sep 21
    paper_in(topic, dt.date(2026, 9, 28))
    paper_in(topic, AS_OF)

    m = topic_momentum(topic=topic)

    assert [w.week_start for w in m.weeks] == [
        dt.date(2026, 7, 13) + dt.timedelta(weeks=i) for i in range(12)
    ]
    assert all(w.week_start.weekday() == 0 for w in m.weeks)
    counts = [w.count for w in m.weeks]
    assert counts == [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2]
    assert week_label(m.weeks[0].week_start) == "Jul 13"
    assert week_label(m.weeks[-1].week_start, last=True) == "Week of Sep 28"

    bars = momentum_chart(m, width=600, height=150)
    assert [b.label for b in bars][0::11] == ["Jul 13", "Week of Sep 28"]
    assert [b.count for b in bars] == counts
    assert bars[-1].height == 150 and bars[-1].y == 0  # busiest week fills the chart
    assert bars[0].height == 75
    assert bars[1].height == 1  # empty weeks keep a visible stub
    assert bars[0].x < bars[1].x < bars[-1].x <= 600


@pytest.mark.django_db
def test_query_count_does_not_grow_with_the_data(django_assert_num_queries):
    small, large = TopicFactory(), TopicFactory()
    paper_in(small, AS_OF)
    for i in range(60):
        paper_in(large, days_before(i))

    with django_assert_num_queries(3):
        topic_momentum(topic=small)
    with django_assert_num_queries(3):
        topic_momentum(topic=large)
    with django_assert_num_queries(2):
        topic_momentum(topic=large, as_of=AS_OF)


def test_sentence_matches_the_reference_wording():
    assert momentum_sentence(momentum()) == (
        "54 papers in the last four weeks, up 145% on the four weeks before. "
        "0.5% of all new papers."
    )


@pytest.mark.parametrize(
    ("recent", "before", "change_pct", "share", "expected"),
    [
        (
            22,
            25,
            -12,
            0.0123,
            "22 papers in the last four weeks, down 12% on the four weeks "
            "before. 1.2% of all new papers.",
        ),
        (
            7,
            7,
            0,
            0.25,
            "7 papers in the last four weeks, no change on the four weeks before. "
            "25.0% of all new papers.",
        ),
        (
            30,
            0,
            None,
            0.02,
            "30 papers in the last four weeks, none in the four weeks before "
            "(new in the last four weeks). 2.0% of all new papers.",
        ),
        (
            1,
            0,
            None,
            0.0004,
            "1 paper in the last four weeks, none in the four weeks before "
            "(new in the last four weeks). <0.1% of all new papers.",
        ),
        (
            0,
            3,
            -100,
            0.0,
            "No new papers in the last four weeks (3 in the four weeks before).",
        ),
        (
            3,
            1,
            200,
            0.001,
            "3 papers in the last four weeks, up 200% on the four weeks before. "
            "0.1% of all new papers.",
        ),
    ],
)
def test_sentence_wording_cases(recent, before, change_pct, share, expected):
    m = momentum(recent=recent, before=before, change_pct=change_pct, share=share)
    assert momentum_sentence(m) == expected
