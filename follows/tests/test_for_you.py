""" "For you": the ranking (saved papers, follows, "Not interested"), its exclusions (saved,
dismissed, withdrawn, old, duplicates), the page and its button, and query counts.

Vectors are written straight into ``PaperEmbedding`` (a made-up model): no encoder loads."""

import datetime as dt
import re

import numpy as np
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from follows import for_you_selectors
from follows.for_you_selectors import for_you_picks, for_you_ranking
from follows.models import Follow, ForYouFeedback, LibraryItem, SearchMatch
from follows.selectors import user_papers
from papers.models import Author, Paper, PaperDuplicate
from papers.tests.factories import AuthorshipFactory, embedding_near
from topics.selectors import topic_newest_paper_ids

from .conftest import assign, make_paper

pytestmark = pytest.mark.django_db

DIMENSION = 8
NEWEST = dt.date(2026, 9, 29)
AGENTS = np.eye(DIMENSION)[0]
VISION = np.eye(DIMENSION)[1]
# Two kinds of agent papers: about tool use, and about planning.
TOOLS = np.eye(DIMENSION)[2]
PLANNING = np.eye(DIMENSION)[3]


def embedded(title, direction, *, rng, submitted=NEWEST, **fields):
    paper = make_paper(title, abstract=f"{title}. " * 40, submitted=submitted, **fields)
    return embedding_near(paper, direction, rng)


@pytest.fixture
def world(categories, taxonomy):
    """Saved-to-be agent papers from August; new (last 14 days) papers: 5 agent papers on tool
    use, 5 on planning, 10 vision papers; an old agent paper and a withdrawn new one."""
    rng = np.random.default_rng(7)
    old_day = dt.date(2026, 8, 3)
    saved = [
        embedded(
            f"Saved agent paper {n}",
            AGENTS + 0.6 * (TOOLS if n % 2 else PLANNING),
            rng=rng,
            submitted=old_day,
        )
        for n in range(6)
    ]
    tools = [
        embedded(
            f"Agents calling tools {n}",
            AGENTS + 0.6 * TOOLS,
            rng=rng,
            submitted=NEWEST - dt.timedelta(days=n),
        )
        for n in range(5)
    ]
    planning = [
        embedded(
            f"Agents that plan {n}",
            AGENTS + 0.6 * PLANNING,
            rng=rng,
            submitted=NEWEST - dt.timedelta(days=n),
        )
        for n in range(5)
    ]
    vision = [
        embedded(f"Vision paper {n}", VISION, rng=rng, submitted=NEWEST - dt.timedelta(days=n))
        for n in range(10)
    ]
    for paper in vision:
        assign(paper, taxonomy["vision"])
    old = embedded("Old agent paper", AGENTS, rng=rng, submitted=dt.date(2026, 6, 1))
    withdrawn = embedded("Withdrawn agent paper", AGENTS, rng=rng, withdrawn=True)
    return {
        "saved": saved,
        "tools": tools,
        "planning": planning,
        "vision": vision,
        "old": old,
        "withdrawn": withdrawn,
    }


def save(user, papers):
    for paper in papers:
        LibraryItem.objects.create(user=user, paper=paper)


def ranked_ids(user):
    return [pk for pk, _ in for_you_ranking(user=user).ranked]


@pytest.mark.parametrize("saved_count", [2, 6], ids=["mean-of-saved", "logistic-regression"])
def test_a_reader_who_saved_agent_papers_gets_agent_papers_first(
    reader, world, saved_count, monkeypatch
):
    save(reader, world["saved"][:saved_count])
    trained = []
    original = for_you_selectors._scores

    def spy(**kwargs):
        trained.append(len(kwargs["positives"]) >= for_you_selectors.MIN_TRAIN_POSITIVES)
        return original(**kwargs)

    monkeypatch.setattr(for_you_selectors, "_scores", spy)
    ids = ranked_ids(reader)
    agent_ids = {p.pk for p in world["tools"] + world["planning"]}
    assert set(ids[:10]) == agent_ids
    assert set(ids[10:]) == {p.pk for p in world["vision"]}
    assert trained == [saved_count >= for_you_selectors.MIN_TRAIN_POSITIVES]


def test_saved_dismissed_withdrawn_and_old_papers_are_not_picked(reader, world):
    save(reader, world["saved"][:2] + world["tools"][:1])
    ForYouFeedback.objects.create(user=reader, paper=world["tools"][1])
    ids = ranked_ids(reader)
    for paper in (world["tools"][0], world["tools"][1], world["withdrawn"], world["old"]):
        assert paper.pk not in ids
    assert len(ids) == 18


def test_not_interested_hides_the_paper_and_moves_its_neighbours_down(reader, world):
    save(reader, world["saved"][:2])  # one on planning, one on tool use
    before = dict(for_you_ranking(user=reader).ranked)
    dismissed = world["tools"][0]
    ForYouFeedback.objects.create(user=reader, paper=dismissed)
    ranking = for_you_ranking(user=reader)
    after = dict(ranking.ranked)
    ids = [pk for pk, _ in ranking.ranked]
    assert dismissed.pk not in after
    neighbours = [p.pk for p in world["tools"][1:]]
    for pk in neighbours:
        assert after[pk] < before[pk]
    # The planning papers (not near the dismissed one) now come before the tool-use ones.
    planning = [p.pk for p in world["planning"]]
    assert max(ids.index(pk) for pk in planning) < min(ids.index(pk) for pk in neighbours)
    # Farther from the dismissed paper, they lose less.
    drop = {pk: before[pk] - after[pk] for pk in planning + neighbours}
    assert max(drop[pk] for pk in planning) < min(drop[pk] for pk in neighbours)


def test_picks_say_why_close_to_a_saved_paper_or_in_a_followed_topic(reader, world, taxonomy):
    save(reader, world["saved"][:1])
    Follow.objects.create(user=reader, topic=taxonomy["vision"])
    _, picks = for_you_picks(user=reader)
    by_pk = {pick.card.pk: pick for pick in picks}
    agent_pick = by_pk[world["planning"][0].pk]
    assert agent_pick.reasons == ["close to Saved agent paper 0"]
    vision_pick = by_pk[world["vision"][0].pk]
    assert vision_pick.reasons == ["in Vision"]


def test_a_reader_who_only_follows_gets_papers_of_the_followed_topic_first(reader, world, taxonomy):
    Follow.objects.create(user=reader, topic=taxonomy["vision"])
    ids = ranked_ids(reader)
    assert set(ids[:10]) == {p.pk for p in world["vision"]}


def test_a_paper_stored_under_two_ids_is_picked_once(reader, world):
    save(reader, world["saved"][:2])
    copy, original = world["tools"][1], world["tools"][2]
    PaperDuplicate.objects.create(paper=copy, original=original, similarity=0.95)
    ids = ranked_ids(reader)
    assert original.pk in ids and copy.pk not in ids


def test_nothing_saved_or_followed_ranks_nothing(reader, world):
    ranking = for_you_ranking(user=reader)
    assert ranking.ranked == [] and not ranking.has_signal


def test_days_below_one_is_refused(reader):
    with pytest.raises(ValueError, match="days must be at least 1"):
        for_you_ranking(user=reader, days=0)


def test_the_window_is_configurable(reader, world, settings):
    save(reader, world["saved"][:2])
    settings.FOR_YOU_DAYS = 2  # Sep 28 and 29 only
    ids = ranked_ids(reader)
    assert len(ids) == 6


# --- The page and the button ---------------------------------------------------------------


def pick_titles(html):
    return re.findall(r'<h3 class="card-title"><a href="[^"]*">([^<]*)</a></h3>', html)


def test_signed_out_readers_log_in_and_come_back(client):
    response = client.get("/for-you/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/for-you/"


def test_signed_out_not_interested_logs_in_and_comes_back_to_the_page(client, world):
    paper = world["tools"][0]
    response = client.post(f"/for-you/papers/{paper.pk}/not-interested/")
    assert response.status_code == 302
    assert response["Location"] == (
        f"/accounts/login/?next=/for-you/%3Fnot_interested%3D{paper.pk}"
    )
    assert not ForYouFeedback.objects.exists()


def test_after_login_the_page_asks_again_and_one_press_applies_it(client, reader, world):
    """The press made signed out is not lost: the page the login returns to asks again (a GET
    applies nothing); a paper already dismissed, or a bad id, asks nothing."""
    paper = world["tools"][0]
    client.force_login(reader)
    html = client.get(f"/for-you/?not_interested={paper.pk}").content.decode()
    assert 'class="pending-dismissal"' in html and paper.title in html
    assert f'action="/for-you/papers/{paper.pk}/not-interested/"' in html
    assert not ForYouFeedback.objects.exists()

    assert client.post(f"/for-you/papers/{paper.pk}/not-interested/").status_code == 302
    assert ForYouFeedback.objects.filter(user=reader, paper=paper).exists()
    for query in (f"?not_interested={paper.pk}", "?not_interested=x'1", "?not_interested=99999"):
        html = client.get(f"/for-you/{query}").content.decode()
        assert "pending-dismissal" not in html, query


def test_no_live_paper_ranks_nothing(reader, world):
    save(reader, world["saved"][:2])
    Paper.objects.update(withdrawn=True)
    assert for_you_ranking(user=reader).ranked == []


def test_empty_state_tells_how_to_start(reader, world, client):
    client.force_login(reader)
    html = client.get("/for-you/").content.decode()
    assert "Nothing to pick from yet" in html and "Save" in html and "Follow this topic" in html
    assert pick_titles(html) == []


def test_page_lists_picks_with_reasons_and_not_interested_hides_one(reader, world):
    save(reader, world["saved"][:2])
    client = Client(enforce_csrf_checks=True)
    client.force_login(reader)
    html = client.get("/for-you/").content.decode()
    titles = pick_titles(html)
    assert len(titles) == 20 and titles[0].startswith("Agents")
    assert "close to" in html and "Not interested" in html
    first = world["tools"][0] if titles[0] == "Agents calling tools 0" else None
    first = first or next(p for p in world["tools"] + world["planning"] if p.title == titles[0])
    url = f"/for-you/papers/{first.pk}/not-interested/"
    assert client.post(url).status_code == 403  # no CSRF token
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
    response = client.post(url, {"csrfmiddlewaretoken": token})
    assert response.status_code == 302 and response["Location"] == "/for-you/"
    assert ForYouFeedback.objects.filter(user=reader, paper=first).count() == 1
    client.post(url, {"csrfmiddlewaretoken": token})  # twice: still one row
    assert ForYouFeedback.objects.filter(user=reader, paper=first).count() == 1
    assert first.title not in pick_titles(client.get("/for-you/").content.decode())


def test_not_interested_in_an_unknown_paper_is_a_404_naming_it(reader, client):
    client.force_login(reader)
    response = client.post("/for-you/papers/987654/not-interested/")
    assert response.status_code == 404
    assert b"987654" in response.content
    assert client.get("/for-you/papers/987654/not-interested/").status_code == 405
    assert client.post("/for-you/papers/99999999999999999999/not-interested/").status_code == 404


def test_query_count_does_not_grow_with_picks(reader, world, client, settings):
    save(reader, world["saved"][:2])
    client.force_login(reader)
    counts = []
    for days in (1, 14):  # 3 picks, then 20
        settings.FOR_YOU_DAYS = days
        with CaptureQueriesContext(connection) as queries:
            html = client.get("/for-you/").content.decode()
        counts.append((len(pick_titles(html)), len(queries)))
    assert counts[0][0] == 3 and counts[1][0] == 20
    assert counts[0][1] == counts[1][1] <= 30


@pytest.mark.parametrize("damage", ["nan", "cut-short"])
def test_a_damaged_stored_vector_is_left_out_not_a_failure(reader, world, client, damage):
    """A stored vector with NaNs or cut short (a damaged row) counts as none, whether it is a
    saved paper's or a candidate's: the page still answers and ranks the rest."""
    from papers.models import PaperEmbedding

    bad = (
        np.full(DIMENSION, np.nan, dtype="<f4")
        if damage == "nan"
        else np.ones(DIMENSION // 2, dtype="<f4")
    ).tobytes()
    save(reader, world["saved"][:2])
    PaperEmbedding.objects.filter(paper=world["saved"][0]).update(vector=bad)
    PaperEmbedding.objects.filter(paper=world["tools"][0]).update(vector=bad)

    ids = ranked_ids(reader)
    assert world["tools"][0].pk not in ids
    assert {p.pk for p in world["tools"][1:]} <= set(ids[:9])
    client.force_login(reader)
    assert client.get("/for-you/").status_code == 200


def test_every_kind_of_follow_lifts_its_new_papers_as_user_papers_defines_them(
    reader, world, taxonomy, monkeypatch
):
    """The bonus for a candidate one of the reader's follows matches comes from the follows'
    newest papers in the window (one range scan per followed topic and author): it must lift
    exactly the candidates ``user_papers`` holds, for a followed topic's subtree, a followed
    author and a saved search, and no other."""
    save(reader, world["saved"][:2])
    assign(world["vision"][0], taxonomy["tool-use"])  # under the followed "agents"
    Follow.objects.create(user=reader, topic=taxonomy["agents"])
    author = AuthorshipFactory(paper=world["vision"][3], position=0).author
    Follow.objects.create(user=reader, kind=Follow.Kind.AUTHOR, author=author)
    search = Follow.objects.create(user=reader, kind=Follow.Kind.SEARCH, query="vision")
    SearchMatch.objects.create(follow=search, paper=world["vision"][6])
    SearchMatch.objects.create(follow=search, paper=world["old"])  # outside the window
    monkeypatch.setattr(for_you_selectors, "FOLLOWED_BONUS", 100.0)

    ids = ranked_ids(reader)
    followed = set(user_papers(user=reader).filter(pk__in=ids).values_list("pk", flat=True))
    assert followed == {world["vision"][n].pk for n in (0, 3, 6)}
    assert set(ids[: len(followed)]) == followed


def test_topic_newest_paper_ids_after_cuts_every_branch_at_the_date(world, taxonomy):
    """``after`` keeps papers submitted strictly after the date in the topic, author and extra
    branches alike, in the usual order."""
    vision = world["vision"]  # submitted NEWEST - n days
    author = AuthorshipFactory(paper=vision[1], position=0).author
    AuthorshipFactory(paper=world["old"], author=author, position=0)
    after = NEWEST - dt.timedelta(days=3)
    ids = topic_newest_paper_ids(
        topic_ids=[taxonomy["vision"].pk],
        limit=100,
        extra_papers=Paper.objects.filter(pk__in=[world["tools"][4].pk, world["tools"][0].pk]),
        author_ids=Author.objects.filter(pk=author.pk).values("pk"),
        after=after,
    )
    expected = [p.pk for p in [*vision[:3], world["tools"][0]]]
    assert sorted(ids) == sorted(expected)
    assert world["old"].pk not in ids and world["tools"][4].pk not in ids
    submitted = dict(Paper.objects.filter(pk__in=ids).values_list("pk", "submitted"))
    assert ids == sorted(ids, key=lambda pk: (submitted[pk], pk), reverse=True)


def test_the_ranking_runs_on_one_blas_thread(reader, world, monkeypatch):
    """The model and the products are small: a second BLAS thread only doubled the CPU of a
    request (``topicsite.blas``); the limit is lifted after the ranking."""
    from threadpoolctl import threadpool_info, threadpool_limits

    def blas_threads():
        return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}

    seen = []
    scores = for_you_selectors._scores

    def spy(**kwargs):
        seen.append(blas_threads())
        return scores(**kwargs)

    monkeypatch.setattr(for_you_selectors, "_scores", spy)
    save(reader, world["saved"])
    with threadpool_limits(limits=2, user_api="blas"):
        assert ranked_ids(reader)
        assert blas_threads() == {2}
    assert seen == [{1}]


def test_candidate_vectors_come_from_the_index_file_and_rank_the_same(
    reader, world, taxonomy, settings, tmp_path, monkeypatch
):
    """With an index file of the readers' model, the candidates' vectors are read from it (no
    query of their own) and the picks are those PostgreSQL's vectors give, in the same order:
    the file's half-precision copies move a score by a rounding only."""
    from papers.embeddings import index as vector_index

    save(reader, world["saved"][:6])
    Follow.objects.create(user=reader, topic=taxonomy["vision"])
    settings.EMBEDDING_INDEX_DIR = tmp_path / "vectors"
    monkeypatch.setattr(vector_index, "REOPEN_CHECK_SECONDS", 0.0)

    def ranking_and_vector_reads():
        with CaptureQueriesContext(connection) as queries:
            ranked = for_you_ranking(user=reader).ranked
        reads = [q for q in queries if '"papers_paperembedding"."vector"' in q["sql"]]
        return ranked, len(reads)

    from_database, reads_without_file = ranking_and_vector_reads()
    assert vector_index.IndexWriter("test-model", DIMENSION).rebuild() == 28
    from_file, reads_with_file = ranking_and_vector_reads()

    assert reads_without_file == 2 and reads_with_file == 1
    assert [pk for pk, _ in from_file] == [pk for pk, _ in from_database]
    for (_, a), (_, b) in zip(from_file, from_database, strict=True):
        assert a == pytest.approx(b, abs=1e-2)


@pytest.mark.parametrize("positives_max", [3, 50])
def test_the_follows_positives_are_their_newest_papers_window_or_not(
    reader, world, taxonomy, monkeypatch, positives_max
):
    """The follows' newest papers (the weak positives) are :func:`user_newest_paper_ids`'
    whether the window holds enough of them (3: read once, with the window's) or not (50: the
    follows' older papers too, read apart)."""
    from follows.selectors import user_newest_paper_ids

    for paper in world["saved"]:  # August: outside the 14-day window
        assign(paper, taxonomy["vision"])
    Follow.objects.create(user=reader, topic=taxonomy["vision"])
    monkeypatch.setattr(for_you_selectors, "FOLLOWED_POSITIVES_MAX", positives_max)
    calls, asked = [], []
    original = for_you_selectors.user_newest_paper_ids
    monkeypatch.setattr(
        for_you_selectors,
        "user_newest_paper_ids",
        lambda **kwargs: calls.append(kwargs) or original(**kwargs),
    )
    vectors_with_model = for_you_selectors._vectors_with_model
    monkeypatch.setattr(
        for_you_selectors,
        "_vectors_with_model",
        lambda ids: asked.append(list(ids)) or vectors_with_model(ids),
    )

    assert ranked_ids(reader)

    expected = user_newest_paper_ids(user=reader, limit=positives_max)
    assert asked == [expected]
    assert len(expected) == min(positives_max, 16)
    assert len(calls) == (1 if positives_max == 3 else 2)
