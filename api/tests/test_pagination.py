"""``api/pagination.py``: paper lists page by a keyset position (the ordering field and id),
so a walk along ``next`` (or back along ``previous``) sees every paper exactly once however
many papers share a date, and a deep page runs the same query as the first."""

from __future__ import annotations

import base64
import datetime as dt
from urllib.parse import parse_qs, urlsplit

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from api.services import token_create
from papers.models import Paper
from topics.models import Assignment
from topics.tests.factories import TopicFactory, UserFactory

from .conftest import assert_error, ids, make_category, token_client

pytestmark = pytest.mark.django_db

CROWDED_DAY = dt.date(2026, 9, 22)
# More papers on one date than DRF's offset cap (1,000) plus a page.
ON_ONE_DAY = 1105


@pytest.fixture
def crowded(db):
    """``ON_ONE_DAY`` papers submitted on ``CROWDED_DAY`` and one on each side of it, all in
    topic ``crowded``; their arXiv identifiers, newest first as the API lists them."""
    category = make_category("cs.AI")
    topic = TopicFactory(slug="crowded")
    dates = [CROWDED_DAY + dt.timedelta(days=1)] + [CROWDED_DAY] * ON_ONE_DAY
    dates.append(CROWDED_DAY - dt.timedelta(days=1))
    papers = Paper.objects.bulk_create(
        Paper(
            arxiv_id=f"2609.{n:05d}",
            title=f"Paper {n}",
            primary_category=category,
            submitted=submitted,
        )
        for n, submitted in enumerate(dates)
    )
    Assignment.objects.bulk_create(
        Assignment(
            paper=paper,
            topic=topic,
            source=Assignment.Source.RULE,
            state=Assignment.State.ACCEPTED,
            score=1.0,
        )
        for paper in papers
    )
    newest_first = sorted(papers, key=lambda p: (p.submitted, p.pk), reverse=True)
    return [p.arxiv_id for p in newest_first]


@pytest.fixture
def reader(db):
    """A client with a token: a walk takes more requests a minute than anonymous readers get."""
    return token_client(token_create(user=UserFactory(), name="walker").key)


def walk(client, url: str, link: str) -> tuple[list[list[str]], str]:
    """The ids of every page from ``url`` following ``link`` (``next`` or ``previous``) until
    it is null, page by page, and the last URL requested."""
    pages = []
    while url:
        assert len(pages) < 100, "the walk does not end"
        response = client.get(url)
        pages.append(ids(response))
        last, url = url, response.json()[link]
    return pages, last


def flat(pages: list[list[str]]) -> list[str]:
    return [paper_id for page in pages for paper_id in page]


@pytest.mark.parametrize("listing", ["/api/v1/papers/", "/api/v1/topics/crowded/papers/"])
def test_next_walks_every_paper_of_a_crowded_date_exactly_once(reader, crowded, listing):
    pages, last = walk(reader, f"{listing}?page_size=100", "next")

    assert len(flat(pages)) == len(set(flat(pages))) == len(crowded)
    assert flat(pages) == crowded

    # and back from the last page along previous: every paper once more, in the same order
    back, _ = walk(reader, last, "previous")
    assert flat(reversed(back)) == crowded
    assert all(len(page) == 100 for page in back[1:])


@pytest.mark.parametrize("ordering", ["submitted", "-updated", "updated", "id", "-id"])
def test_every_ordering_walks_a_crowded_date_exactly_once(reader, crowded, ordering):
    pages, _ = walk(reader, f"/api/v1/papers/?page_size=100&ordering={ordering}", "next")

    assert len(flat(pages)) == len(set(flat(pages))) == len(crowded)


def test_a_deep_page_runs_the_first_pages_query_with_a_position_not_an_offset(reader, crowded):
    url = "/api/v1/papers/?page_size=50"
    for _ in range(20):  # 1,000 papers in: DRF's offset cap, inside the crowded date
        url = reader.get(url).json()["next"]
    with CaptureQueriesContext(connection) as queries:
        deep = reader.get(url)

    assert len(ids(deep)) == 50
    assert not [q["sql"] for q in queries if "OFFSET" in q["sql"].upper()]


def test_a_cursor_of_the_old_date_and_offset_kind_is_a_400_naming_cursor(reader, crowded):
    """Cursors handed out before the keyset (a date and an offset) cannot be honoured."""
    stale = base64.b64encode(f"o=3&p={CROWDED_DAY}".encode()).decode()

    response = reader.get("/api/v1/papers/", {"cursor": stale})

    assert_error(response, 400, code="invalid_parameter", param="cursor")


def test_a_cursor_holds_the_date_and_the_id_of_the_last_paper_of_the_page(reader, crowded):
    body = reader.get("/api/v1/papers/?page_size=3").json()
    cursor = parse_qs(urlsplit(body["next"]).query)["cursor"][0]
    last = Paper.objects.get(arxiv_id=body["results"][-1]["id"])

    assert parse_qs(base64.b64decode(cursor).decode()) == {
        "p": [last.submitted.isoformat(), str(last.pk)]
    }


def test_a_page_emptied_since_its_link_was_handed_out_links_back_to_the_last_page(reader, crowded):
    first = reader.get("/api/v1/papers/?page_size=100").json()
    beyond = [paper["id"] for paper in first["results"]]
    Paper.objects.exclude(arxiv_id__in=beyond).delete()

    emptied = reader.get(first["next"]).json()

    assert emptied["results"] == [] and emptied["next"] is None
    assert ids(reader.get(emptied["previous"])) == beyond


def test_a_previous_page_emptied_since_links_forward_to_the_first_page(reader, crowded):
    second = reader.get(reader.get("/api/v1/papers/?page_size=100").json()["next"]).json()
    kept = [paper["id"] for paper in second["results"]]
    Paper.objects.exclude(arxiv_id__in=kept).delete()

    emptied = reader.get(second["previous"]).json()

    assert emptied["results"] == [] and emptied["previous"] is None
    assert ids(reader.get(emptied["next"])) == kept


def test_an_unpadded_date_in_a_cursor_is_read_as_the_check_read_it(api_client):
    """Found by a breaker: the cursor's check took ``2024-1-1`` (``parse_date``) where the
    newest-first walks (``author=``, an author's papers, a topic's papers) read it with
    ``date.fromisoformat``: a 500. Both read it alike now: the papers after that position."""
    from papers.tests.factories import AuthorFactory, AuthorshipFactory, PaperFactory

    author = AuthorFactory(name="Walker")
    topic = TopicFactory(slug="walked")
    for day in (dt.date(2023, 12, 31), dt.date(2024, 1, 1)):
        paper = PaperFactory(submitted=day)
        AuthorshipFactory(paper=paper, author=author)
        Assignment.objects.create(paper=paper, topic=topic, state="accepted", source="rule")
    # After (2024-01-01, a larger id than any): that day's paper, then the older one.
    expected = list(Paper.objects.order_by("-submitted", "-id").values_list("arxiv_id", flat=True))
    cursor = base64.b64encode(b"p=2024-1-1&p=999999999").decode()
    for url in (
        "/api/v1/papers/?author=Walker",
        f"/api/v1/authors/{author.pk}/papers/",
        "/api/v1/topics/walked/papers/",
    ):
        response = api_client.get(url, {"cursor": cursor})
        assert response.status_code == 200, (url, response.content)
        assert ids(response) == expected, url
