"""Saved searches through a real Celery worker consuming from Redis: storing real recorded
arXiv records (``papers_upsert``) sends ``papers_stored`` on commit, ``follows.receivers``
queues ``follows.tasks.saved_searches_match`` and the worker writes the matches; a new saved
search's ``saved_search_backfill`` runs on the worker too.

The worker is the one ``papers/tests/test_pipeline.py`` starts (``start_worker``, a solo pool in
a thread, queues harvest, tag and default)."""

import pytest

from follows.models import SearchMatch
from follows.services import follow_search_create
from papers.categories import category_sync
from papers.ingest import papers_upsert
from papers.models import Paper
from papers.parsers.atom import parse_atom_feed
from papers.sources.recorded import DEFAULT_RECORDED_DIR
from papers.tests.test_pipeline import live_worker  # noqa: F401  (the fixture)
from topics.tagging.rules import compile_rule
from topics.tests.factories import UserFactory

pytestmark = [pytest.mark.pipeline, pytest.mark.django_db(transaction=True)]

RECORDED_PAGE = DEFAULT_RECORDED_DIR / "atom" / "q_testing_s0_m10_bc5a6c384fe9.xml"


def finished(log, name):
    return [value for value in log.finished.values() if value[0] == name]


def expected(query, papers):
    rule = compile_rule(query)
    return {p.pk for p in papers if rule.matches(f"{p.title}\n{p.abstract}")}


def test_stored_papers_are_matched_by_a_real_worker(live_worker):  # noqa: F811
    category_sync()
    reader = UserFactory(username="reader")
    fuzzing = follow_search_create(user=reader, query='fuzzing OR "test case"')
    gui = follow_search_create(user=reader, query="GUI -mobile", categories=["cs.SE"])
    backfills = list(live_worker.published)
    assert len(backfills) == 2  # one backfill per new search, sent on commit
    live_worker.wait_for(backfills[-1], "backfills")
    assert not SearchMatch.objects.exists()  # no papers yet

    records = parse_atom_feed(RECORDED_PAGE.read_bytes(), source=RECORDED_PAGE.name).records
    result = papers_upsert(records=records, source="atom")
    assert result.created == len(records) == 10

    # The commit queued tag_papers (queue tag) and saved_searches_match (queue default).
    match_task = live_worker.last_published("follows.tasks.saved_searches_match")
    name, found, state = live_worker.wait_for(match_task, "saved_searches_match")
    assert (name, state) == ("follows.tasks.saved_searches_match", "SUCCESS")
    assert [v[0] for v in live_worker.finished.values()].count("topics.tasks.tag_papers") == 1

    papers = list(Paper.objects.all())
    want_fuzzing = expected('fuzzing OR "test case"', papers)
    want_gui = expected(
        "GUI -mobile",
        [
            p
            for p in papers
            if p.primary_category.code == "cs.SE" or p.cross_lists.filter(code="cs.SE").exists()
        ],
    )
    assert want_fuzzing and want_gui  # the recorded page has papers for both
    assert set(SearchMatch.objects.filter(follow=fuzzing).values_list("paper_id", flat=True)) == (
        want_fuzzing
    )
    assert set(SearchMatch.objects.filter(follow=gui).values_list("paper_id", flat=True)) == (
        want_gui
    )
    assert found == len(want_fuzzing) + len(want_gui)
