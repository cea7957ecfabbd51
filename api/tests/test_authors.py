"""``authors/{id}/``: an author's summary from the author page's selectors, a merged name's id
answering its survivor, a bad id a 404 in the API's error shape, and queries that do not grow
with the author's papers."""

import pytest

from papers.models import Author, Paper
from papers.tests.factories import (
    AffiliationFactory,
    AuthorFactory,
    AuthorshipFactory,
    PaperFactory,
)
from topics.tests.factories import AssignmentFactory, TopicFactory

from .conftest import assert_error

pytestmark = pytest.mark.django_db


def _author_with_papers(n: int):
    author = AuthorFactory(name="Ada Lovelace")
    coauthor = AuthorFactory(name="Charles Babbage")
    topic = TopicFactory(name="Engines")
    place = AffiliationFactory(name="Analytical Society")
    for _ in range(n):
        paper = PaperFactory()
        AuthorshipFactory(paper=paper, author=author, position=0).affiliations.add(place)
        AuthorshipFactory(paper=paper, author=coauthor, position=1)
        AssignmentFactory(paper=paper, topic=topic)
    return author, coauthor


@pytest.mark.parametrize("n", [1, 6])
def test_an_author_summary_in_bounded_queries(api_client, n, django_assert_max_num_queries):
    author, coauthor = _author_with_papers(n)
    with django_assert_max_num_queries(8):
        response = api_client.get(f"/api/v1/authors/{author.pk}/")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["id"] == author.pk
    assert body["name"] == "Ada Lovelace"
    assert body["paper_count"] == n
    assert body["html_url"].endswith(author.get_absolute_url())
    assert body["affiliations"] == [
        {"id": None, "name": "Analytical Society", "papers": n, "url": ""}
    ]
    assert [(c["id"], c["papers"]) for c in body["coauthors"]] == [(coauthor.pk, n)]
    assert [(t["name"], t["papers"]) for t in body["topics"]] == [("Engines", n)]


def test_a_merged_name_answers_its_survivor_and_a_bad_id_is_a_404(api_client):
    survivor, _ = _author_with_papers(1)
    variant = AuthorFactory(name="A. Lovelace")
    Author.objects.filter(pk=variant.pk).update(merged_into=survivor)
    body = api_client.get(f"/api/v1/authors/{variant.pk}/").json()
    assert (body["id"], body["name"]) == (survivor.pk, "Ada Lovelace")
    assert_error(api_client.get("/api/v1/authors/999999999/"), 404)
    assert_error(api_client.get("/api/v1/authors/99999999999999999999/"), 404)


def test_an_authors_papers_list_filters_and_a_bad_id_is_a_404(api_client):
    author, _ = _author_with_papers(2)
    PaperFactory()  # not theirs
    body = api_client.get(f"/api/v1/authors/{author.pk}/papers/").json()
    assert len(body["results"]) == 2
    body = api_client.get(f"/api/v1/authors/{author.pk}/papers/?submitted_after=2100-01-01")
    assert body.status_code == 200 and body.json()["results"] == []
    assert_error(api_client.get("/api/v1/authors/999999999/papers/"), 404)


def test_an_authors_coauthors_and_topics_lists(api_client):
    author, coauthor = _author_with_papers(2)
    coauthors = api_client.get(f"/api/v1/authors/{author.pk}/coauthors/").json()
    assert [(c["id"], c["name"], c["papers"]) for c in coauthors] == [
        (coauthor.pk, "Charles Babbage", 2)
    ]
    topics = api_client.get(f"/api/v1/authors/{author.pk}/topics/").json()
    assert [(t["name"], t["papers"]) for t in topics] == [("Engines", 2)]
    assert_error(api_client.get("/api/v1/authors/999999999/topics/"), 404)


def _walk(api_client, url: str, key: str) -> list[int]:
    ids = []
    while url:
        body = api_client.get(url).json()
        ids += [paper["id"] for paper in body["results"]]
        url = body[key]
    return ids


def test_an_authors_papers_walked_newest_first_both_ways_and_counted(
    api_client, monkeypatch, django_assert_max_num_queries
):
    """The unfiltered list reads the author's authorships newest first: every live paper
    once, in the list's order (ties on the date by id), withdrawn and deleted papers left out,
    a paper the author is credited on twice once; ``previous`` walks back the same pages;
    the count is exact up to the limit, then the author's credits marked as an estimate."""
    import datetime as dt

    from django.utils import timezone

    from api import facets
    from papers.author_selectors import author_papers

    author = AuthorFactory(name="Emmy Noether")
    days = [dt.date(2024, 1, 1), dt.date(2024, 1, 1), dt.date(2024, 1, 2), dt.date(2023, 5, 5)]
    papers = [PaperFactory(submitted=day) for day in days * 2]
    papers[1].withdrawn = True
    papers[1].save()
    papers[2].deleted_at = timezone.now()
    papers[2].save()
    for paper in papers:
        AuthorshipFactory(paper=paper, author=author, position=0)
    AuthorshipFactory(paper=papers[3], author=author, position=1)  # credited twice
    AuthorshipFactory(paper=PaperFactory(), position=0)  # someone else's
    expected = list(author_papers(author=author).values_list("arxiv_id", flat=True))
    assert len(expected) == 6

    url = f"/api/v1/authors/{author.pk}/papers/?page_size=2"
    with django_assert_max_num_queries(6):
        first = api_client.get(url).json()
    assert first["meta"] == {**first["meta"], "count": 6, "count_exact": True}
    forwards = _walk(api_client, url, "next")
    assert forwards == expected
    last_page = api_client.get(url)
    while (body := last_page.json())["next"]:
        last_page = api_client.get(body["next"])
    backwards_pages = _walk(api_client, last_page.json()["previous"], "previous")
    assert sorted(backwards_pages) == sorted(expected[:4])
    # Filtered or in another order: the /papers/ filters, same answers.
    oldest = api_client.get(f"{url}&ordering=submitted").json()["results"]
    oldest_first = Paper.objects.filter(arxiv_id__in=expected).order_by("submitted", "id")
    assert [paper["id"] for paper in oldest] == [p.arxiv_id for p in oldest_first[:2]]

    monkeypatch.setattr(facets, "EXACT_COUNT_LIMIT", 3)
    meta = api_client.get(url).json()["meta"]
    assert (meta["count"], meta["count_exact"]) == (9, False)  # its 9 credits


def _author_with_papers_that_do_not_count(name: str):
    """An author of five papers, the first withdrawn and the second deleted."""
    from django.utils import timezone

    author = AuthorFactory(name=name)
    papers = [PaperFactory() for _ in range(5)]
    papers[0].withdrawn = True
    papers[0].save()
    papers[1].deleted_at = timezone.now()
    papers[1].save()
    for paper in papers:
        AuthorshipFactory(paper=paper, author=author, position=0)
    return author, papers


def test_an_authors_live_papers_are_counted_without_reading_their_rows(api_client):
    """The count tests each authorship against the few papers that do not count
    (``paper_not_live_idx``, papers 0020), an anti-join, not a join reading every paper's row
    (1,050 pages, 12-20 ms uncached for an 850-paper author at a million papers)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    author, _papers = _author_with_papers_that_do_not_count("Sophie Germain")
    with CaptureQueriesContext(connection) as captured:
        body = api_client.get(f"/api/v1/authors/{author.pk}/papers/").json()
    assert body["meta"] == {"count": 3, "count_exact": True}
    (count_sql,) = [q["sql"] for q in captured if q["sql"].startswith("SELECT COUNT(*)")]
    assert "NOT EXISTS" in count_sql and "JOIN" not in count_sql, count_sql
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute("SET LOCAL enable_bitmapscan = off")
            cursor.execute("EXPLAIN " + count_sql)
            plan = "\n".join(row[0] for row in cursor.fetchall())
        assert "paper_not_live_idx" in plan and "papers_paper_pkey" not in plan, plan


def test_an_authors_summary_counts_live_papers_once_from_their_authorships(api_client):
    """``paper_count``: each paper that counts once (an author credited twice on a paper as a
    merge can leave it), withdrawn and deleted papers left out, counted from the
    authorships and the papers that do not count, not from each paper's row."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from papers.author_selectors import author_paper_count, author_papers

    author, papers = _author_with_papers_that_do_not_count("Emmy Noether")
    AuthorshipFactory(paper=papers[4], author=author, position=1)  # credited twice
    with CaptureQueriesContext(connection) as captured:
        assert author_paper_count(author=author) == 3 == author_papers(author=author).count()
    assert "NOT EXISTS" in captured[0]["sql"] and "JOIN" not in captured[0]["sql"]
    assert api_client.get(f"/api/v1/authors/{author.pk}/").json()["paper_count"] == 3
