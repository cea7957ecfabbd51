"""Trying to break the anonymous page cache (topicsite/pagecache.py) and the Jinja2 paper cards:
personal content leaking to another reader, address variants that fill the cache, pages that
must never be shared (errors, redirects, invalid sessions), data changes that must show once
they commit, and data that must never be evaluated as template code.

The page cache is on (as in production) with the real Redis cache; data changes run their
``on_commit`` callbacks through ``django_capture_on_commit_callbacks(execute=True)``.
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.cache import cache
from django.test import Client

from follows.services import follow_create
from papers.models import Author
from papers.tests.factories import (
    AffiliationFactory,
    AuthorFactory,
    AuthorshipFactory,
    PaperAffiliationFactory,
)
from topics import selectors
from topics.models import Assignment
from topics.services import topic_rename
from topics.tests.factories import TopicFactory, UserFactory
from topics.tests.test_views_topic import card_paper
from topicsite import pagecache
from topicsite.pagecache import CACHE_HEADER

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("_page_cache_on")]

EMAIL = "private.reader@example.org"


@pytest.fixture
def _page_cache_on(settings):
    settings.PAGE_CACHE_SECONDS = 60


def page_entries() -> set[str]:
    """The keys of the whole pages now cached (locks left out)."""
    return {
        key for key in cache.keys(f"{pagecache._PREFIX}:page:*") if not str(key).endswith(":lock")
    }


def body(response) -> str:
    return response.content.decode()


def assert_nothing_personal(response):
    """No trace of a signed-in reader in a page an anonymous reader got."""
    page = body(response)
    for personal in (EMAIL, "csrfmiddlewaretoken", "Unfollow this topic", 'method="post"'):
        assert personal not in page, personal


# --- who gets what ----------------------------------------------------------------------------


def test_log_in_log_out_sequences_never_hand_a_personal_page_to_an_anonymous_reader(
    client, django_capture_on_commit_callbacks
):
    topic = TopicFactory(name="Shared topic")
    user = UserFactory(email=EMAIL)
    with django_capture_on_commit_callbacks(execute=True):
        follow_create(user=user, topic=topic)
    url = topic.get_absolute_url()
    stranger = Client()

    # The signed-in reader is first: their page (email, follow state, CSRF token) is theirs.
    client.force_login(user)
    mine = client.get(url)
    assert mine[CACHE_HEADER] == "bypass"
    assert EMAIL in body(mine) and "Unfollow this topic" in body(mine)
    assert "csrfmiddlewaretoken" in body(mine)
    for response in (stranger.get(url), stranger.get(url)):
        assert response.status_code == 200
        assert_nothing_personal(response)

    # They log out for real (allauth's POST): whatever they get next, a stranger's copy stays
    # clean, and so does theirs once the log-out message is shown.
    client.get(url)
    logout = client.post(
        "/accounts/logout/", {"csrfmiddlewaretoken": client.cookies["csrftoken"].value}
    )
    assert logout.status_code in (200, 302)
    after = client.get(url)
    assert after.status_code == 200
    assert_nothing_personal(after)
    assert_nothing_personal(stranger.get(url))
    # ...and signing in again after an anonymous copy was cached still shows their own page.
    client.force_login(user)
    again = client.get(url)
    assert again[CACHE_HEADER] == "bypass" and "Unfollow this topic" in body(again)


def test_an_invalid_or_expired_session_cookie_renders_its_own_page_and_caches_nothing(client):
    topic = TopicFactory()
    url = topic.get_absolute_url()
    client.cookies["sessionid"] = "not-a-session-this-site-made"
    response = client.get(url)
    assert response.status_code == 200
    assert response[CACHE_HEADER] == "bypass"
    assert "csrfmiddlewaretoken" not in body(response)
    assert page_entries() == set()
    # A reader without the cookie is the first to store the page.
    assert Client().get(url)[CACHE_HEADER] == "miss"


def test_a_head_request_stores_the_whole_page_for_the_next_get(client):
    topic = TopicFactory()
    card_paper(topics=[topic], title="Seen after a HEAD")
    url = topic.get_absolute_url()
    head = client.head(url)
    assert head.status_code == 200 and head[CACHE_HEADER] == "miss"
    assert head.content == b""
    got = client.get(url)
    assert got[CACHE_HEADER] == "hit"
    assert "Seen after a HEAD" in body(got) and "</html>" in body(got)
    # A HEAD on a cached page is served from it, without the body.
    again = client.head(url)
    assert again[CACHE_HEADER] == "hit" and again.content == b""


def test_a_stale_etag_gets_the_new_page_after_a_change(client, django_capture_on_commit_callbacks):
    topic = TopicFactory()
    url = topic.get_absolute_url()
    first = client.get(url)
    with django_capture_on_commit_callbacks(execute=True):
        topic_rename(topic=topic, name="Renamed for the ETag", slug=topic.slug, user=UserFactory())
    response = client.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert response.status_code == 200
    assert "Renamed for the ETag" in body(response)


@pytest.mark.parametrize(
    "query",
    [
        "?page=%22%3E%3Csvg%2Fonload%3D1%3E",  # "><svg/onload=1>, short enough to be a key
        "?page=%3Cscript%3Ealert(1)%3C%2Fscript%3E",
        "?page={{7*7}}",
        "?page=%00",
        "?page=%E2%80%AE1",
        "?page=" + "9" * 5000,
    ],
)
def test_hostile_query_values_are_never_echoed_raw_cached_or_not(client, query):
    topic = TopicFactory()
    url = topic.get_absolute_url() + query
    for response in (client.get(url), client.get(url)):
        assert response.status_code == 200
        page = body(response)
        for raw in ("<svg/onload", "<script>alert", "{{7*7}}"):
            assert raw not in page


def test_a_host_the_site_does_not_serve_is_refused_and_caches_nothing(client, settings):
    settings.ALLOWED_HOSTS = ["testserver"]
    topic = TopicFactory()
    response = client.get(topic.get_absolute_url(), HTTP_HOST="evil.example.com")
    assert response.status_code == 400
    assert page_entries() == set()


def test_forwarded_headers_do_not_choose_the_cached_copy_or_its_links(client):
    """X-Forwarded-Host / -Proto are not trusted in these settings: a page fetched with forged
    ones is the same page, under the same entry."""
    topic = TopicFactory()
    url = topic.get_absolute_url()
    forged = client.get(
        url, HTTP_X_FORWARDED_HOST="evil.example.com", HTTP_X_FORWARDED_PROTO="https"
    )
    assert forged[CACHE_HEADER] == "miss"
    assert "evil.example.com" not in body(forged)
    assert client.get(url)[CACHE_HEADER] == "hit"


# --- the cache cannot be filled with variants of one address ------------------------------------


def test_spellings_of_a_page_number_do_not_each_store_a_copy(client):
    """The module says a client cannot fill the cache with address variants; every spelling of
    ``?page=`` below renders page 1 or the last page of a two-page topic, so at most those
    copies (and the bare address's) may be stored."""
    topic = TopicFactory()
    for day in range(31):
        card_paper(topics=[topic], submitted=dt.date(2026, 9, 1) + dt.timedelta(days=day))
    url = topic.get_absolute_url()
    for canonical in ("", "?page=1", "?page=2"):
        assert client.get(url + canonical).status_code == 200
    stored = len(page_entries())
    assert stored <= 3

    variants = ["0", "-1", "1e3", "01", "001", "+1", " 1", "1.0", "abc", "", "\u0661", "3"]
    variants += [str(n) for n in range(4, 40)]  # past the last page: the last page
    for value in variants:
        response = client.get(url, {"page": value})
        assert response.status_code == 200, value
    assert len(page_entries()) <= stored, "each spelling of a page number stored its own copy"


def test_spellings_of_an_author_page_number_do_not_each_store_a_copy(client):
    """Found by a breaker: the author page stored ``?page=01``, ``?page=0001`` and every
    number past its last page as copies of their own."""
    paper = card_paper(topics=[TopicFactory()])
    url = paper.authorships.first().author.get_absolute_url()
    for canonical in ("", "?page=1"):
        assert client.get(url + canonical).status_code == 200
    stored = len(page_entries())
    for value in ["01", "001", "0001", "000001", "2", "3", "999999"]:
        assert client.get(url, {"page": value}).status_code == 200, value
    assert len(page_entries()) <= stored, "each spelling of a page number stored its own copy"


def test_a_shared_paper_page_names_the_sites_address_not_the_requests_host(client, settings):
    """Found by a breaker: Host spellings share one copy, ports included, so the paper page's
    absolute address (``citation_abstract_html_url``) is the site's (``SITE_URL``): a
    client's ``Host: testserver:6666`` once reached every later reader."""
    settings.SITE_URL = "https://papers.example.org"
    paper = card_paper(topics=[TopicFactory()])
    url = paper.get_absolute_url()
    poisoned = client.get(url, HTTP_HOST="testserver:6666")
    assert poisoned[CACHE_HEADER] == "miss"
    victim = Client().get(url)
    assert victim[CACHE_HEADER] == "hit"
    assert "6666" not in body(victim)
    assert f'content="https://papers.example.org{url}"' in body(victim)


def test_the_early_path_leaves_long_query_strings_and_bad_csrf_cookies_to_the_stack(client):
    """Found by a breaker: the early path parsed every anonymous query string (1,001
    parameters: a 400 on pages that read none) and skipped the CSRF middleware's renewal of
    a malformed cookie."""
    topic = TopicFactory()
    card_paper(topics=[topic])
    url = topic.get_absolute_url()
    pagecache.page_cache_invalidate()
    assert client.get(url)[CACHE_HEADER] == "miss"
    assert client.get(url)[CACHE_HEADER] == "hit"
    many = "&".join(f"a{n}=1" for n in range(1001))
    assert client.get("/robots.txt?" + many).status_code == 200
    client.cookies["csrftoken"] = "short"
    renewed = client.get(url)
    assert renewed[CACHE_HEADER] == "hit" and "csrftoken" in renewed.cookies
    assert hasattr(renewed.wsgi_request, "user")  # the whole stack answered


def test_unknown_sort_names_do_not_each_store_a_copy_of_the_index(client):
    TopicFactory()
    for canonical in ("", "?sort=name", "?sort=size", "?sort=rising"):
        assert client.get("/topics/" + canonical).status_code == 200
    stored = len(page_entries())
    for n in range(30):
        assert client.get("/topics/", {"sort": f"junk{n}"}).status_code == 200
    assert len(page_entries()) <= stored, "each unknown ?sort= value stored its own copy"


def test_host_header_spellings_of_one_site_do_not_each_store_a_copy(client):
    topic = TopicFactory()
    url = topic.get_absolute_url()
    assert client.get(url).status_code == 200
    stored = len(page_entries())
    hosts = ["TESTSERVER", "TestServer", "testserver.", "testserver:80"]
    hosts += [f"testserver:{port}" for port in range(8000, 8030)]
    for host in hosts:
        assert client.get(url, HTTP_HOST=host).status_code == 200, host
    assert len(page_entries()) <= stored + 1, "each Host spelling stored its own copy"


# --- pages that are never shared ----------------------------------------------------------------


def test_an_old_slug_redirect_and_a_404_are_never_stored(
    client, django_capture_on_commit_callbacks
):
    topic = TopicFactory(name="Before", slug="before")
    with django_capture_on_commit_callbacks(execute=True):
        topic_rename(topic=topic, name="After", slug="after", user=UserFactory())
    for _ in range(2):
        moved = client.get("/topics/before/?page=2")
        assert moved.status_code == 301 and moved["Location"] == "/topics/after/?page=2"
        assert client.get("/topics/nowhere/").status_code == 404
        assert client.get("/papers/local/999999999/").status_code == 404
        assert client.get("/papers/not-an-id/").status_code == 404
    assert page_entries() == set()


def test_a_500_is_never_stored_and_the_next_reader_gets_the_page(client, monkeypatch):
    topic = TopicFactory()
    card_paper(topics=[topic], title="Back after the error")
    url = topic.get_absolute_url()
    real = selectors.topic_lineage

    def broken(**kwargs):
        raise RuntimeError("database hiccup")

    monkeypatch.setattr(selectors, "topic_lineage", broken)
    failing = Client(raise_request_exception=False)
    assert failing.get(url).status_code == 500
    assert page_entries() == set()
    monkeypatch.setattr(selectors, "topic_lineage", real)
    response = client.get(url)
    assert response.status_code == 200 and response[CACHE_HEADER] == "miss"
    assert "Back after the error" in body(response)


def test_a_topic_deactivated_in_the_admin_is_a_404_at_once(
    client, django_capture_on_commit_callbacks
):
    topic = TopicFactory()
    url = topic.get_absolute_url()
    assert client.get(url).status_code == 200
    assert client.get(url)[CACHE_HEADER] == "hit"
    with django_capture_on_commit_callbacks(execute=True):
        topic.active = False
        topic.save()  # what ModelAdmin.save_model does for a plain field
    assert client.get(url).status_code == 404


# --- data changes made in the admin show once they commit ---------------------------------------


@pytest.fixture
def staff_client(db):
    user = UserFactory(is_staff=True, is_superuser=True)
    admin_client = Client()
    admin_client.force_login(user)
    return admin_client


def test_an_assignment_rejected_in_the_admin_leaves_the_anonymous_page_at_once(
    client, staff_client, django_capture_on_commit_callbacks
):
    topic = TopicFactory()
    paper = card_paper(topics=[topic], title="Rejected through the admin")
    url = topic.get_absolute_url()
    assert "Rejected through the admin" in body(client.get(url))
    assert client.get(url)[CACHE_HEADER] == "hit"

    assignment = Assignment.objects.get(paper=paper, topic=topic)
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(
            f"/admin/topics/assignment/{assignment.pk}/change/", {"state": "rejected"}
        )
    assert response.status_code == 302, body(response)
    assignment.refresh_from_db()
    assert assignment.state == "rejected"
    assert "Rejected through the admin" not in body(client.get(url))


def test_a_paper_retitled_in_the_admin_shows_on_the_topic_page_at_once(
    client, django_capture_on_commit_callbacks
):
    """A paper edit (post_save, the admin's path) moves the page cache on; the topic page must
    then show the new title, not the rendered cards cached under the topic's unchanged stats
    generation."""
    topic = TopicFactory()
    paper = card_paper(topics=[topic], title="Title before the edit")
    url = topic.get_absolute_url()
    assert "Title before the edit" in body(client.get(url))

    with django_capture_on_commit_callbacks(execute=True):
        paper.title = "Title after the edit"
        paper.save()

    assert "Title after the edit" in body(client.get(paper.get_absolute_url()))
    page = body(client.get(url))
    assert "Title after the edit" in page and "Title before the edit" not in page


def test_a_topic_rename_shows_on_the_chips_of_another_topics_page_at_once(
    client, django_capture_on_commit_callbacks
):
    """A paper in topics A and B carries an "A" chip on B's page; renaming A must show there."""
    renamed, other = TopicFactory(name="Chip before"), TopicFactory(name="Other topic")
    card_paper(topics=[renamed, other], title="Paper in both topics")
    url = other.get_absolute_url()
    assert "Chip before" in body(client.get(url))

    with django_capture_on_commit_callbacks(execute=True):
        topic_rename(topic=renamed, name="Chip after", slug="chip-after", user=UserFactory())

    page = body(client.get(url))
    assert "Chip after" in page and "Chip before" not in page


def test_an_author_renamed_in_the_admin_shows_on_the_paper_and_topic_pages_at_once(
    client, staff_client, django_capture_on_commit_callbacks
):
    topic = TopicFactory()
    paper = card_paper(topics=[topic], authors=0, affiliations=0)
    author = AuthorFactory(name="Ada Before")
    AuthorshipFactory(paper=paper, author=author, position=0)
    urls = (paper.get_absolute_url(), topic.get_absolute_url())
    for url in urls:
        assert "Ada Before" in body(client.get(url))

    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(
            f"/admin/papers/author/{author.pk}/change/", {"name": "Ada After"}
        )
    assert response.status_code == 302, body(response)
    assert Author.objects.get(pk=author.pk).name == "Ada After"
    for url in urls:
        page = body(client.get(url))
        assert "Ada After" in page and "Ada Before" not in page, url


# --- data is never template code ----------------------------------------------------------------

TEMPLATE_CODE = "{{ 7*7 }}|{% if true %}EVALUATED{% endif %}|{# gone #}|${7*7}"
MARKUP = "<script>alert('x')</script>\"'><b>bold</b>"
HOSTILE = f"{TEMPLATE_CODE} {MARKUP}"


@pytest.fixture
def hostile_topic(db):
    topic = TopicFactory(name=f"Topic {HOSTILE}")
    paper = card_paper(topics=[topic], title=f"Title {HOSTILE}", authors=0, affiliations=0)
    paper.abstract = f"Abstract {HOSTILE}\n\nSecond paragraph {HOSTILE}"
    paper.save()
    AuthorshipFactory(paper=paper, author=AuthorFactory(name=f"Author {HOSTILE}"), position=0)
    PaperAffiliationFactory(
        paper=paper, affiliation=AffiliationFactory(name=f"Affiliation {HOSTILE}"), position=0
    )
    return topic


def assert_shown_as_text(page: str, *, labels=("Title", "Author", "Affiliation", "Topic")):
    """The hostile text is on the page as text: template code verbatim (never evaluated),
    markup escaped (never raw)."""
    assert "EVALUATED" not in page.replace("{% if true %}EVALUATED{% endif %}", "")
    assert "<script>alert" not in page and "<b>bold</b>" not in page
    assert "&lt;script&gt;alert(" in page
    for label in labels:
        assert (
            f"{label} {{{{ 7*7 }}}}|{{% if true %}}EVALUATED{{% endif %}}|{{# gone #}}|" in page
        ), label


def test_hostile_text_in_the_cards_is_text_on_a_miss_and_on_a_hit(client, hostile_topic):
    url = hostile_topic.get_absolute_url()
    miss, hit = client.get(url), client.get(url)
    assert (miss[CACHE_HEADER], hit[CACHE_HEADER]) == ("miss", "hit")
    for response in (miss, hit):
        page = body(response)
        assert_shown_as_text(page)
        assert "Abstract {{ 7*7 }}" in page and "Second paragraph {{ 7*7 }}" in page


def test_hostile_text_in_the_feed_cards_is_text(hostile_topic, django_capture_on_commit_callbacks):
    user = UserFactory()
    with django_capture_on_commit_callbacks(execute=True):
        follow_create(user=user, topic=hostile_topic)
    reader = Client()
    reader.force_login(user)
    response = reader.get("/feed/")
    assert response.status_code == 200
    assert_shown_as_text(body(response), labels=("Title", "Author", "Affiliation"))


def test_hostile_text_on_the_paper_page_and_index_is_text(client, hostile_topic):
    paper = Assignment.objects.get(topic=hostile_topic).paper
    for url in (paper.get_absolute_url(), "/topics/", "/topics/?sort=size"):
        for response in (client.get(url), client.get(url)):
            assert response.status_code == 200, url
            page = body(response)
            assert "<script>alert" not in page and "<b>bold</b>" not in page, url
            assert "{{ 7*7 }}" in page, url
