"""The author page (topics.authors, topics.author_views): stable address, redirects, what it
shows, bad input, and a query count that does not grow with the author's papers."""

import datetime as dt

import pytest
from django.contrib.auth import get_user_model

from papers.author_services import authors_merge
from papers.models import Affiliation, Author, PaperAffiliation
from papers.tests.factories import AuthorFactory, AuthorshipFactory, CategoryFactory, PaperFactory
from topics.authors import AUTHOR_PAPERS_PER_PAGE, author_momentum
from topics.services import topic_create
from topics.tests.factories import AssignmentFactory

pytestmark = pytest.mark.django_db

NEWEST = dt.date(2026, 9, 29)


@pytest.fixture
def topics():
    parent = topic_create(name="Large Language Model", slug="llm", short_name="LLM")
    agents = topic_create(name="Agent Training", slug="agent-training", parent=parent)
    vision = topic_create(name="Vision", slug="vision")
    return {"llm": parent, "agents": agents, "vision": vision}


def authored(author, *, submitted=NEWEST, position=0, coauthors=(), affiliations=(), topics=()):
    """A paper by ``author`` at ``position`` with ``coauthors`` after it."""
    paper = PaperFactory(submitted=submitted, primary_category=CategoryFactory(code="cs.CL"))
    mine = AuthorshipFactory(paper=paper, author=author, position=position)
    for name in affiliations:
        mine.affiliations.add(Affiliation.objects.get_or_create(name=name)[0])
    for offset, coauthor in enumerate(coauthors, start=1):
        AuthorshipFactory(paper=paper, author=coauthor, position=position + offset)
    paper.author_count = 1 + len(coauthors)
    paper.save()
    for topic in topics:
        AssignmentFactory(paper=paper, topic=topic)
    return paper


def fill(author, topics, *, papers, start=NEWEST):
    alice = AuthorFactory(name="Alice Liddell")
    bob = AuthorFactory(name="Bob Ross")
    for n in range(papers):
        authored(
            author,
            submitted=start - dt.timedelta(days=n),
            coauthors=[alice] + ([bob] if n % 2 else []),
            affiliations=["MIT"] if n % 3 else ["MIT", "Tsinghua"],
            topics=[topics["agents"]] if n % 2 else [topics["agents"], topics["vision"]],
        )


def test_page_shows_papers_coauthors_affiliations_topics_and_momentum(client, topics):
    author = AuthorFactory(name="Zoë Quantum")
    fill(author, topics, papers=6)
    response = client.get(author.get_absolute_url())
    assert response.status_code == 200
    page = response.content.decode()
    assert "Zoë Quantum" in page
    # Co-authors, most shared papers first, linked to their pages.
    alice = Author.objects.get(name="Alice Liddell")
    bob = Author.objects.get(name="Bob Ross")
    assert page.index(alice.get_absolute_url()) < page.index(bob.get_absolute_url())
    coauthors = {c.name: c.papers for c in response.context["data"].coauthors}
    assert coauthors == {"Alice Liddell": 6, "Bob Ross": 3}
    affiliations = {a.name: a.papers for a in response.context["data"].affiliations}
    assert affiliations == {"MIT": 6, "Tsinghua": 2}
    topic_counts = {t.name: t.papers for t in response.context["data"].topics}
    assert topic_counts == {"Agent Training": 6, "Vision": 3}
    assert 'href="/topics/agent-training/"' in page
    assert "6 papers in the last four weeks" in page
    assert 'class="sparkline"' in page
    assert "Follow this author" in page


def test_topics_coauthors_and_affiliations_count_the_newest_papers_only(
    client, topics, monkeypatch
):
    """Counted on the author's ``COUNTED_PAPERS`` newest papers (an author of thousands, or
    a collaboration's member, costs no more than one of a thousand), and the page says so
    when the author has more; the API counts the same."""
    from papers import author_selectors
    from topics import author_views

    for module in (author_selectors, author_views):
        monkeypatch.setattr(module, "COUNTED_PAPERS", 4)
    author = AuthorFactory(name="Zoë Quantum")
    fill(author, topics, papers=6)  # the four newest: n = 0, 1, 2, 3
    response = client.get(author.get_absolute_url())
    data = response.context["data"]
    assert {c.name: c.papers for c in data.coauthors} == {"Alice Liddell": 4, "Bob Ross": 2}
    assert {a.name: a.papers for a in data.affiliations} == {"MIT": 4, "Tsinghua": 2}
    assert {t.name: t.papers for t in data.topics} == {"Agent Training": 4, "Vision": 2}
    assert data.page.paper_count == 6
    assert "counted on this author's newest 4 papers" in response.content.decode()
    api = client.get(f"/api/v1/authors/{author.pk}/").json()
    assert {c["name"]: c["papers"] for c in api["coauthors"]} == {
        "Alice Liddell": 4,
        "Bob Ross": 2,
    }
    assert api["paper_count"] == 6

    few = AuthorFactory(name="Few Papers")
    fill(few, topics, papers=3)
    assert "counted on this author" not in client.get(few.get_absolute_url()).content.decode()


def test_papers_are_newest_first_and_paged(client, topics):
    author = AuthorFactory(name="Prolific Person")
    fill(author, topics, papers=AUTHOR_PAPERS_PER_PAGE + 2)
    first = client.get(author.get_absolute_url())
    cards = first.context["data"].page.papers
    assert len(cards) == AUTHOR_PAPERS_PER_PAGE
    assert [c.submitted for c in cards] == sorted((c.submitted for c in cards), reverse=True)
    assert 'rel="next" href="?page=2"' in first.content.decode()
    second = client.get(author.get_absolute_url() + "?page=2")
    assert len(second.context["data"].page.papers) == 2
    past = client.get(author.get_absolute_url() + "?page=99")
    assert past.context["data"].page.number == 2


@pytest.mark.parametrize("raw", ["x", "0", "-1", "1.5", "1234567", "%C2%B2"])
def test_a_bad_page_number_is_a_400_naming_page(client, raw):
    author = AuthorFactory(name="Someone")
    response = client.get(f"{author.get_absolute_url()}?page={raw}")
    assert response.status_code == 400
    assert "page must be a positive whole number" in response.content.decode()


def test_wrong_or_missing_slug_redirects_permanently_keeping_the_page(client):
    author = AuthorFactory(name="Naoum C. Bacalis")
    assert author.get_absolute_url() == f"/authors/{author.pk}-naoum-c-bacalis/"
    response = client.get(f"/authors/{author.pk}-someone-else/?page=2")
    assert response.status_code == 301
    assert response["Location"] == f"/authors/{author.pk}-naoum-c-bacalis/?page=2"
    assert client.get(f"/authors/{author.pk}/")["Location"] == author.get_absolute_url()


def test_a_name_without_latin_letters_gets_a_placeholder_slug(client):
    author = AuthorFactory(name="王伟")
    assert author.get_absolute_url() == f"/authors/{author.pk}-author/"
    assert client.get(author.get_absolute_url()).status_code == 200


def test_a_merged_authors_old_id_redirects_to_the_survivor(client):
    curator = get_user_model().objects.create_user("cur", "cur@example.org", "pw")
    survivor = AuthorFactory(name="John Smith")
    variant = AuthorFactory(name="J. Smith")
    authors_merge(authors=[variant], survivor=survivor, user=curator)
    response = client.get(f"/authors/{variant.pk}-j-smith/")
    assert response.status_code == 301
    assert response["Location"] == survivor.get_absolute_url()


@pytest.mark.parametrize(
    "path", ["/authors/987654-nobody/", "/authors/99999999999999999999999-x/", "/authors/x-y/"]
)
def test_unknown_authors_are_404(client, path):
    response = client.get(path)
    assert response.status_code == 404


def test_unknown_author_404_names_the_id(client, settings):
    settings.DEBUG = False
    response = client.get("/authors/987654-nobody/")
    assert response.status_code == 404
    assert "No author has the id 987654." in response.content.decode()


def test_withdrawn_papers_are_left_out(client, topics):
    author = AuthorFactory(name="Careful Author")
    authored(author, topics=[topics["agents"]])
    withdrawn = authored(author, topics=[topics["agents"]])
    withdrawn.withdrawn = True
    withdrawn.save()
    data = client.get(author.get_absolute_url()).context["data"]
    assert data.page.paper_count == 1
    assert [t.papers for t in data.topics] == [1]


def test_momentum_counts_four_week_windows_and_twelve_weeks(topics):
    author = AuthorFactory(name="Rising Star")
    for days_ago in (0, 3, 10, 30):  # three in the last four weeks, one in the four before
        authored(author, submitted=NEWEST - dt.timedelta(days=days_ago))
    momentum = author_momentum(author=author, as_of=NEWEST)
    assert (momentum.momentum.recent, momentum.momentum.before) == (3, 1)
    assert momentum.sentence == "3 papers in the last four weeks, up 200% on the four weeks before."
    assert len(momentum.weekly_counts) == 12 and sum(momentum.weekly_counts) == 4
    assert momentum.sparkline_label.startswith("12-week papers: ")


def test_query_count_does_not_grow_with_papers(client, topics, django_assert_max_num_queries):
    small = AuthorFactory(name="Small Author")
    fill(small, topics, papers=2)
    big = AuthorFactory(name="Big Author")
    fill(big, topics, papers=40)

    def count(author):
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as queries:
            assert client.get(author.get_absolute_url()).status_code == 200
        return len(queries)

    assert count(small) == count(big)
    with django_assert_max_num_queries(12):
        client.get(big.get_absolute_url())


def test_paper_page_links_every_author_to_their_page(client):
    paper = PaperFactory(title="Linked names", primary_category=CategoryFactory(code="cs.CL"))
    authors = [AuthorFactory(name=f"Writer {n}") for n in range(4)]
    for position, author in enumerate(authors):
        AuthorshipFactory(paper=paper, author=author, position=position)
    page = client.get(paper.get_absolute_url()).content.decode()
    for author in authors:
        assert f'<a href="{author.get_absolute_url()}">{author.name}</a>' in page


def test_no_affiliation_of_their_own_says_the_papers_affiliations_are_the_papers(client, topics):
    """An author with no affiliation by name, on a paper whose affiliations were recorded for
    the paper as a whole: the card lists them, so the empty section must not read as if no
    affiliation were known anywhere."""
    author = AuthorFactory(name="Plain Author")
    paper = authored(author, topics=[topics["agents"]])
    PaperAffiliation.objects.create(
        paper=paper, affiliation=Affiliation.objects.create(name="Somewhere U"), position=0
    )
    html = client.get(author.get_absolute_url()).content.decode()
    assert "No affiliation is recorded for this author by name" in html
    assert "recorded for the paper as a whole" in html
    assert "No affiliation given for this author on their papers" not in html


def test_page_ids_and_days_read_from_authorships_match_the_papers_definition(topics):
    """The page's ids and the momentum's days come from the author's authorships (their
    index, newest first); they must be ``author_papers``' papers in its order at every
    offset: withdrawn and deleted papers out, a paper credited twice once, a paper whose
    submitted date moved in its new place."""
    from django.utils import timezone

    from papers.author_selectors import (
        author_newest_live_paper_ids,
        author_paper_count_capped,
        author_paper_ids,
        author_papers,
        author_papers_per_day,
    )

    author = AuthorFactory(name="Prolific Author")
    papers = [authored(author, submitted=NEWEST - dt.timedelta(days=n % 9)) for n in range(14)]
    papers[2].withdrawn = True
    papers[2].save()
    papers[5].deleted_at = timezone.now()
    papers[5].save()
    AuthorshipFactory(paper=papers[7], author=author, position=5)  # credited twice
    papers[9].submitted = NEWEST + dt.timedelta(days=1)  # moved to the top
    papers[9].save()

    expected = list(author_papers(author=author).values_list("pk", flat=True))
    assert len(expected) == 12 and expected[0] == papers[9].pk
    for offset in (0, 1, 5, 11, 12):
        assert (
            author_paper_ids(author=author, limit=4, offset=offset) == expected[offset : offset + 4]
        )
    # The API's pages (after a cursor's position) and capped counts, from the same walk.
    submitted = dict(author_papers(author=author).values_list("pk", "submitted"))
    assert author_newest_live_paper_ids(author=author, limit=5) == expected[:5]
    for position in (0, 3, 10, 11):
        before = (submitted[expected[position]], expected[position])
        assert (
            author_newest_live_paper_ids(author=author, limit=4, before=before)
            == expected[position + 1 : position + 5]
        )
    assert [author_paper_count_capped(author=author, cap=cap) for cap in (0, 5, 12, 100)] == [
        0,
        5,
        12,
        12,
    ]
    days = dict(
        author_papers_per_day(author=author, since=NEWEST - dt.timedelta(days=30), until=NEWEST)
    )
    by_day: dict[dt.date, int] = {}
    for paper in author_papers(author=author).filter(submitted__lte=NEWEST):
        by_day[paper.submitted] = by_day.get(paper.submitted, 0) + 1
    assert days == by_day
