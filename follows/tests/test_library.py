"""The reader's library: saving from cards and paper pages (with and without JavaScript),
/library/ with its filters, read marks and notes, the export, and the saved state on cards of
the topic page and the feed in one query per page."""

import csv
import datetime as dt
import io
import re

import bibtexparser
import pytest
import rispy
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from follows.library_services import (
    library_item_mark_read,
    library_item_note,
    library_item_remove,
    library_item_save,
)
from follows.models import Follow, LibraryItem
from papers.tests.factories import AuthorFactory, AuthorshipFactory, PaperFactory
from topics.tests.factories import AssignmentFactory, TopicFactory, UserFactory

pytestmark = pytest.mark.django_db

LIBRARY = "/library/"


def save_url(paper):
    return f"/library/papers/{paper.pk}/save/"


def titles_in(html: str) -> list[str]:
    return re.findall(r'<h3 class="card-title"><a href="[^"]*">([^<]*)</a></h3>', html)


@pytest.fixture
def reader(client):
    user = UserFactory(username="reader")
    client.force_login(user)
    return user


# --- services ------------------------------------------------------------------------------


def test_saving_twice_keeps_one_item_with_its_state(reader):
    paper = PaperFactory()
    first = library_item_save(user=reader, paper=paper)
    library_item_mark_read(item=first, read=True)
    library_item_note(item=first, note="  see section 4  ")

    again = library_item_save(user=reader, paper=paper)

    assert again.pk == first.pk
    assert LibraryItem.objects.count() == 1
    again.refresh_from_db()
    assert again.read_at is not None and again.note == "see section 4"
    assert library_item_remove(user=reader, paper=paper) is True
    assert library_item_remove(user=reader, paper=paper) is False
    assert not LibraryItem.objects.exists()


def test_marking_read_keeps_the_first_read_time_and_unread_clears_it(reader):
    item = library_item_save(user=reader, paper=PaperFactory())
    read_at = library_item_mark_read(item=item, read=True).read_at
    assert library_item_mark_read(item=item, read=True).read_at == read_at
    assert library_item_mark_read(item=item, read=False).read_at is None


# --- saving from a page --------------------------------------------------------------------


def test_save_and_remove_without_javascript_go_back_to_the_page(client, reader):
    paper = PaperFactory()

    response = client.post(save_url(paper), {"action": "save", "next": "/topics/x/?page=2"})
    assert response.status_code == 302 and response["Location"] == "/topics/x/?page=2"
    assert LibraryItem.objects.filter(user=reader, paper=paper).exists()

    response = client.post(save_url(paper), {"action": "save", "next": "https://evil.example/"})
    assert response["Location"] == LIBRARY  # not another site
    assert LibraryItem.objects.filter(user=reader).count() == 1

    client.post(save_url(paper), {"action": "remove"})
    assert not LibraryItem.objects.exists()


def test_save_toggle_answers_json_to_the_script(client, reader):
    paper = PaperFactory()
    headers = {"Accept": "application/json"}
    assert client.post(save_url(paper), headers=headers).json() == {"saved": True}
    assert client.post(save_url(paper), headers=headers).json() == {"saved": False}


def test_anonymous_readers_are_sent_to_log_in_and_back(client):
    paper = PaperFactory()

    response = client.post(save_url(paper), {"next": paper.get_absolute_url()})
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={paper.get_absolute_url()}"
    response = client.post(save_url(paper), headers={"Accept": "application/json"})
    assert response.status_code == 401 and "login_url" in response.json()
    assert client.get(LIBRARY).status_code == 302
    assert not LibraryItem.objects.exists()


def test_bad_input_is_named(client, reader):
    paper = PaperFactory()
    assert client.post("/library/papers/999999/save/").status_code == 404
    response = client.post(save_url(paper), {"action": "delete-all"})
    assert response.status_code == 400 and b"'save' or 'remove'" in response.content
    response = client.post(f"/library/papers/{paper.pk}/read/", {"action": "read"})
    assert response.status_code == 404 and b"not in your library" in response.content
    assert client.get(save_url(paper)).status_code == 405

    library_item_save(user=reader, paper=paper)
    response = client.post(f"/library/papers/{paper.pk}/read/", {"action": "maybe"})
    assert response.status_code == 400
    response = client.post(f"/library/papers/{paper.pk}/note/", {"note": "x" * 5001})
    assert response.status_code == 400 and b"at most 5000 characters" in response.content
    assert LibraryItem.objects.get().note == ""
    response = client.get(LIBRARY, {"status": "<script>"})
    assert response.status_code == 400 and b"all, unread, read" in response.content
    assert b"<script>" not in response.content or response["Content-Type"].startswith("text/plain")
    assert client.get(LIBRARY, {"page": "nope"}).status_code == 200


def test_readers_touch_only_their_own_library(client, reader):
    other = UserFactory(username="other")
    paper = PaperFactory(title="Someone else's paper")
    library_item_save(user=other, paper=paper)

    assert "Someone else" not in client.get(LIBRARY).content.decode()
    assert client.post(f"/library/papers/{paper.pk}/read/", {"action": "read"}).status_code == 404
    assert client.post(f"/library/papers/{paper.pk}/note/", {"note": "mine"}).status_code == 404
    assert LibraryItem.objects.get(user=other).read_at is None


# --- the library page ----------------------------------------------------------------------


def test_library_lists_newest_saved_first_with_read_filters_and_notes(client, reader):
    old, new, read = (PaperFactory(title=t) for t in ("Old save", "New save", "Read one"))
    for paper in (old, read, new):
        library_item_save(user=reader, paper=paper)
    library_item_mark_read(item=LibraryItem.objects.get(paper=read), read=True)
    client.post(f"/library/papers/{old.pk}/note/", {"note": "Compare with <b>BERT</b>"})

    page = client.get(LIBRARY).content.decode()
    assert titles_in(page) == ["New save", "Read one", "Old save"]
    assert "Compare with &lt;b&gt;BERT&lt;/b&gt;</textarea>" in page
    assert page.count('aria-pressed="true"') == 3  # every card's toggle says Saved
    assert titles_in(client.get(LIBRARY, {"status": "unread"}).content.decode()) == [
        "New save",
        "Old save",
    ]
    assert titles_in(client.get(LIBRARY, {"status": "read"}).content.decode()) == ["Read one"]


def test_library_page_queries_do_not_grow_with_its_items(client, reader):
    def count():
        with CaptureQueriesContext(connection) as queries:
            assert client.get(LIBRARY).status_code == 200
        return len(queries)

    for _ in range(2):
        library_item_save(user=reader, paper=PaperFactory(author_count=5))
    few = count()
    for _ in range(25):
        library_item_save(user=reader, paper=PaperFactory(author_count=5))
    assert count() == few


# --- export --------------------------------------------------------------------------------


def library_of(reader):
    papers = []
    for i, title in enumerate(["SrTiO$_3$ interfaces", "=HYPERLINK(evil)"]):
        paper = PaperFactory(title=title, author_count=2)
        for position in range(2):
            AuthorshipFactory(
                paper=paper, author=AuthorFactory(name=f"Ann{i}{position} Lee"), position=position
            )
        item = library_item_save(user=reader, paper=paper)
        papers.append(paper)
    library_item_mark_read(item=item, read=True)
    library_item_note(item=item, note="re-read")
    return papers


def test_export_bibtex_uses_the_cite_entries(client, reader):
    papers = library_of(reader)

    response = client.get("/library/export.bib")

    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="library.bib"'
    entries = bibtexparser.parse_string(response.content.decode()).entries
    assert [entry.key for entry in entries] == [f"arXiv_{p.arxiv_id}" for p in reversed(papers)]
    assert entries[1]["title"] == "{SrTiO$_3$ interfaces}"
    assert entries[1]["author"] == "Lee, Ann00 and Lee, Ann01"
    unread = client.get("/library/export.bib", {"status": "unread"}).content.decode()
    assert [e.key for e in bibtexparser.parse_string(unread).entries] == [
        f"arXiv_{papers[0].arxiv_id}"
    ]


def test_export_ris_and_csv(client, reader):
    papers = library_of(reader)

    references = rispy.loads(client.get("/library/export.ris").content.decode())
    assert [r["accession_number"] for r in references] == [p.arxiv_id for p in reversed(papers)]

    response = client.get("/library/export.csv")
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [row["id"] for row in rows] == [p.arxiv_id for p in reversed(papers)]
    assert rows[0]["title"] == "'=HYPERLINK(evil)"  # not run as a formula
    assert rows[0]["note"] == "re-read" and rows[0]["read_at"]
    assert rows[1]["read_at"] == ""
    assert rows[1]["authors"] == "Ann00 Lee; Ann01 Lee"


def test_export_of_an_unknown_status_is_400(client, reader):
    assert client.get("/library/export.csv", {"status": "x"}).status_code == 400


# --- cards on the topic page and the feed --------------------------------------------------


def topic_papers(topic, count, start=0):
    return [
        AssignmentFactory(
            topic=topic,
            paper=PaperFactory(
                title=f"Card {start + i}", submitted=dt.date(2026, 9, 1) + dt.timedelta(days=i)
            ),
        ).paper
        for i in range(count)
    ]


def test_topic_page_cards_show_the_saved_state_in_one_query(client, reader):
    small, large = TopicFactory(slug="small"), TopicFactory(slug="large")
    library_item_save(user=reader, paper=topic_papers(small, 3)[0])
    for paper in topic_papers(large, 30, start=3)[:10]:
        library_item_save(user=reader, paper=paper)
    for url in ("/topics/small/", "/topics/large/"):  # stats and momentum stored once
        client.get(url)
    cache.clear()
    client.session.load()  # the session's cached copy back (topicsite.sessions), for both

    with CaptureQueriesContext(connection) as few:
        page = client.get("/topics/small/").content.decode()
    assert page.count('class="save-button" aria-pressed="true"') == 1
    assert page.count('class="save-button" aria-pressed="false"') == 2
    assert page.count("/static/js/library.js") == 1

    with CaptureQueriesContext(connection) as many:
        page = client.get("/topics/large/").content.decode()
    assert page.count('class="save-button" aria-pressed="true"') == 10
    assert page.count('<article class="card">') == 30
    assert len(many) == len(few)


def test_anonymous_topic_page_has_save_links_and_no_form(client):
    topic = TopicFactory(slug="agents")
    topic_papers(topic, 2)
    page = client.get("/topics/agents/").content.decode()
    assert page.count('class="button-link save-button"') == 2
    assert "<!--card-actions:" not in page
    assert "csrfmiddlewaretoken" not in page.split('<section class="papers"')[1]


def test_feed_marks_read_papers_and_queries_do_not_grow(client, reader):
    topic = TopicFactory()
    Follow.objects.create(user=reader, topic=topic)
    client.get("/feed/")
    papers = topic_papers(topic, 2)
    library_item_mark_read(item=library_item_save(user=reader, paper=papers[0]), read=True)

    with CaptureQueriesContext(connection) as few:
        page = client.get("/feed/").content.decode()
    assert page.count('class="feed-item read"') == 1
    assert page.count('<span class="read-badge" title="Marked read in your library">') == 1

    for paper in topic_papers(topic, 20, start=2)[:5]:
        library_item_mark_read(item=library_item_save(user=reader, paper=paper), read=True)
    with CaptureQueriesContext(connection) as many:
        page = client.get("/feed/").content.decode()
    assert page.count('class="feed-item read"') == 6
    assert page.count('class="save-button" aria-pressed="true"') == 6
    assert len(many) == len(few)
