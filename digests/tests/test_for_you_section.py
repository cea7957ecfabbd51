"""The digest's "For you" section, abstracts trimmed in both parts, papers ranked by relevance
within a follow's section, and a paper stored under two ids sent once across both sections.

Vectors are written straight into ``PaperEmbedding`` (a made-up model): no encoder loads."""

import datetime as dt

import numpy as np
import pytest

from digests.models import DigestItem
from digests.services import digest_send
from follows.models import LibraryItem
from follows.services import follow_create
from papers.models import PaperDuplicate
from papers.tests.factories import PaperFactory, embedding_near

from .conftest import TopicFactory, UserFactory, paper_in, parts

pytestmark = pytest.mark.django_db

DAY = dt.date(2026, 11, 30)
SUBMITTED = dt.date(2026, 11, 27)
DIMENSION = 8
AGENTS, VISION, POETRY = np.eye(DIMENSION)[:3]
LONG_ABSTRACT = " ".join(f"word{n:03d}" for n in range(200))  # 1,599 characters


def embed(paper, direction, rng):
    return embedding_near(paper, direction, rng)


@pytest.fixture
def reader_world():
    """A reader who follows "Agents" daily and saved two agent papers; new papers: three in
    the followed topic, seven agent papers outside it and four vision papers."""
    rng = np.random.default_rng(3)
    user = UserFactory()
    agents = TopicFactory(name="Agents")
    follow_create(user=user, topic=agents, digest_frequency="daily")
    for n in range(2):
        saved = embed(
            PaperFactory(title=f"Saved agents {n}", submitted=dt.date(2026, 10, 1)), AGENTS, rng
        )
        LibraryItem.objects.create(user=user, paper=saved)
    followed = [
        embed(
            paper_in(agents, title=f"Followed agents {n}", submitted=SUBMITTED, abstract="Short."),
            AGENTS if n else POETRY,
            rng,
        )
        for n in range(3)
    ]
    unfollowed = [
        embed(
            PaperFactory(
                title=f"Unfollowed agents {n}", submitted=SUBMITTED, abstract=LONG_ABSTRACT
            ),
            AGENTS,
            rng,
        )
        for n in range(7)
    ]
    vision = [
        embed(PaperFactory(title=f"Vision {n}", submitted=SUBMITTED), VISION, rng) for n in range(4)
    ]
    return {"user": user, "followed": followed, "unfollowed": unfollowed, "vision": vision}


def test_for_you_section_has_five_picks_in_text_and_html_never_a_listed_paper(
    smtp_server, reader_world
):
    user = reader_world["user"]
    digest = digest_send(user=user, period="daily", period_end=DAY)

    picks = list(
        DigestItem.objects.filter(digest=digest, for_you=True).values_list("paper_id", flat=True)
    )
    listed = set(
        DigestItem.objects.filter(digest=digest, for_you=False).values_list("paper_id", flat=True)
    )
    assert listed == {p.pk for p in reader_world["followed"]}
    assert len(picks) == 5 and not listed & set(picks)
    assert set(picks) <= {p.pk for p in reader_world["unfollowed"]}
    assert digest.paper_count == 3 and digest.follow_count == 1

    text, html = parts(smtp_server.messages[0])
    assert "== For you" in text and ">For you</a>" in html
    for_you_text = text.split("== For you", 1)[1]
    assert for_you_text.count("* Unfollowed agents") == 5
    assert "Followed agents" not in for_you_text and "Vision" not in for_you_text
    assert html.count("Unfollowed agents") == 5
    assert "https://topics.example.org/for-you/" in html


def test_each_pick_says_why_in_text_and_html(smtp_server, reader_world):
    """Every pick lies along the saved papers' direction: each says which saved paper it is
    close to, in both parts; a followed topic's papers are listed above, not picked."""
    digest_send(user=reader_world["user"], period="daily", period_end=DAY)
    text, html = parts(smtp_server.messages[0])
    for_you_text = text.split("== For you", 1)[1]
    for_you_html = html.split(">For you</a>", 1)[1]
    whys = [line.strip() for line in for_you_text.splitlines() if line.strip().startswith("Why:")]
    assert len(whys) == 5, for_you_text
    assert all(why.startswith("Why: close to Saved agents ") for why in whys), whys
    assert for_you_html.count("Why: close to") == 5
    assert "in Agents" not in for_you_text


def test_abstracts_are_trimmed_on_a_word_boundary_in_both_parts(smtp_server, reader_world):
    digest_send(user=reader_world["user"], period="daily", period_end=DAY)
    text, html = parts(smtp_server.messages[0])
    excerpt = LONG_ABSTRACT[: LONG_ABSTRACT.rfind(" ", 0, 300)] + "…"
    assert len(excerpt) <= 301 and excerpt.endswith("word036…")
    assert text.count(excerpt) == 5 and html.count(excerpt) == 5
    assert "word199" not in text and "word199" not in html
    assert "Short." in text and "Short." in html  # short abstracts whole


def test_papers_of_a_section_come_most_relevant_first(smtp_server, reader_world):
    digest_send(user=reader_world["user"], period="daily", period_end=DAY)
    text, _ = parts(smtp_server.messages[0])
    followed = text.split("== Agents", 1)[1].split("== For you", 1)[0]
    # "Followed agents 0" is far from the saved papers (and the newest id of the three would
    # come first by date): it comes last.
    order = [followed.index(f"* Followed agents {n}") for n in range(3)]
    assert order[0] > max(order[1:])


def test_a_pick_whose_twin_the_digest_lists_is_left_out(smtp_server, reader_world):
    listed = reader_world["followed"][1]
    twin = reader_world["unfollowed"][0]
    PaperDuplicate.objects.create(paper=twin, original=listed, similarity=0.93)
    digest = digest_send(user=reader_world["user"], period="daily", period_end=DAY)
    picks = set(
        DigestItem.objects.filter(digest=digest, for_you=True).values_list("paper_id", flat=True)
    )
    assert twin.pk not in picks and len(picks) == 5


def test_picks_are_not_sent_again_in_the_next_digest(smtp_server, reader_world, settings):
    user = reader_world["user"]
    first = digest_send(user=user, period="daily", period_end=DAY)
    sent = set(
        DigestItem.objects.filter(digest=first, for_you=True).values_list("paper_id", flat=True)
    )
    paper_in(user.follows.get().topic, title="Followed agents next", submitted=SUBMITTED)
    second = digest_send(user=user, period="daily", period_end=DAY + dt.timedelta(days=1))
    again = set(
        DigestItem.objects.filter(digest=second, for_you=True).values_list("paper_id", flat=True)
    )
    assert again and not again & sent


def test_no_for_you_section_when_turned_off(smtp_server, reader_world, settings):
    settings.DIGESTS_FOR_YOU_PICKS = 0
    digest = digest_send(user=reader_world["user"], period="daily", period_end=DAY)
    assert not DigestItem.objects.filter(digest=digest, for_you=True).exists()
    text, html = parts(smtp_server.messages[0])
    assert "For you" not in text and "For you" not in html
