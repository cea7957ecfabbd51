"""The whole-page cache for anonymous readers (topicsite/pagecache.py), with the real Redis
cache: what is shared and with whom, what moves it on (ingestion, tagging, curation, edits),
the one-rebuild-at-a-time rule, and pages that must never be shared."""

from __future__ import annotations

import dataclasses
import datetime as dt
import time

import pytest
from django.core.cache import cache, caches
from django.http import HttpResponse
from django.middleware.csrf import get_token
from django.test import RequestFactory, override_settings

from papers.ingest import papers_upsert
from papers.models import Paper
from papers.parsers.atom import parse_atom_feed
from papers.tests.conftest import ATOM_DIR
from topics.assignments import assignment_decide
from topics.caches import topic_caches_invalidate_on_commit
from topics.models import Assignment
from topics.services import topic_rename
from topics.tests.factories import AssignmentFactory, TopicFactory, UserFactory
from topics.tests.test_views_topic import card_paper
from topicsite import pagecache
from topicsite.pagecache import CACHE_HEADER, cache_anonymous_page

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("_page_cache_on")]


@pytest.fixture
def _page_cache_on(settings):
    settings.PAGE_CACHE_SECONDS = 60


def get(client, url, **extra):
    response = client.get(url, **extra)
    assert response.status_code == 200, (url, response.status_code)
    return response


def test_a_second_anonymous_reader_gets_the_page_from_the_cache_with_no_query(
    client, django_assert_num_queries
):
    topic = TopicFactory(name="Graph learning")
    card_paper(topics=[topic], title="Message passing at scale")

    first = get(client, topic.get_absolute_url())
    with django_assert_num_queries(0):
        second = get(client, topic.get_absolute_url())

    assert first[CACHE_HEADER] == "miss" and second[CACHE_HEADER] == "hit"
    assert second.content == first.content
    assert "Message passing at scale" in second.content.decode()
    # The middleware still runs on a cached page: the same security headers and an ETag.
    for header in ("Content-Security-Policy", "X-Frame-Options", "ETag"):
        assert second[header] == first[header]
    assert "Cookie" in second["Vary"]
    revalidated = client.get(topic.get_absolute_url(), HTTP_IF_NONE_MATCH=first["ETag"])
    assert revalidated.status_code == 304


def test_signed_in_readers_never_get_or_leave_a_shared_page(client):
    topic = TopicFactory()
    user = UserFactory(email="reader@example.org")
    get(client, topic.get_absolute_url())  # an anonymous copy is cached

    client.force_login(user)
    mine = get(client, topic.get_absolute_url())
    assert mine[CACHE_HEADER] == "bypass"
    page = mine.content.decode()
    assert "reader@example.org" in page and 'method="post"' in page  # their own follow form

    client.logout()
    client.cookies.clear()
    shared = get(client, topic.get_absolute_url())
    assert shared[CACHE_HEADER] == "hit"
    assert "reader@example.org" not in shared.content.decode()


def test_pages_are_kept_per_page_number_and_odd_query_strings_bypass_the_cache(client):
    topic = TopicFactory()
    for day in range(31):
        card_paper(topics=[topic], submitted=dt.date(2026, 9, 1) + dt.timedelta(days=day))
    url = topic.get_absolute_url()

    assert get(client, url)[CACHE_HEADER] == "miss"
    assert get(client, url + "?page=2")[CACHE_HEADER] == "miss"
    assert get(client, url + "?page=2")[CACHE_HEADER] == "hit"
    assert "Page 2 of 2" in get(client, url + "?page=2").content.decode()
    assert "Page 1 of 2" in get(client, url).content.decode()
    # Anything a client could vary without end renders the page as usual.
    for query in ("?utm_source=x", "?page=2&page=3", "?page=" + "9" * 40, "?page=2&x=1"):
        assert get(client, url + query)[CACHE_HEADER] == "bypass", query


def test_a_curator_decision_shows_at_once(client, django_capture_on_commit_callbacks):
    topic = TopicFactory()
    paper = card_paper(topics=[topic], title="Wrongly tagged paper")
    url = topic.get_absolute_url()
    assert "Wrongly tagged paper" in get(client, url).content.decode()
    assert get(client, url)[CACHE_HEADER] == "hit"

    assignment = Assignment.objects.get(paper=paper, topic=topic)
    with django_capture_on_commit_callbacks(execute=True):
        assignment_decide(assignment=assignment, state="rejected", user=UserFactory())

    after = get(client, url)
    assert after[CACHE_HEADER] == "miss"
    assert "Wrongly tagged paper" not in after.content.decode()


def test_a_topic_rename_shows_at_once(client, django_capture_on_commit_callbacks):
    topic = TopicFactory(name="Old name", slug="old-name")
    get(client, topic.get_absolute_url())
    with django_capture_on_commit_callbacks(execute=True):
        topic_rename(topic=topic, name="New name", slug="old-name", user=UserFactory())
    page = get(client, topic.get_absolute_url())
    assert page[CACHE_HEADER] == "miss" and "New name" in page.content.decode()


def test_an_ingested_new_version_shows_at_once_on_the_paper_page(
    client, django_capture_on_commit_callbacks
):
    feed = next(ATOM_DIR.glob("id_1605.08386_*.xml"))  # one recorded paper
    record = parse_atom_feed(feed.read_bytes(), source="atom").records[0]
    with django_capture_on_commit_callbacks(execute=True):
        papers_upsert(records=[record], source="test")
    paper = Paper.objects.get(arxiv_id=record.arxiv_id)
    assert get(client, paper.get_absolute_url())[CACHE_HEADER] == "miss"
    assert get(client, paper.get_absolute_url())[CACHE_HEADER] == "hit"

    retitled = dataclasses.replace(  # a new version with a corrected title
        record,
        title="A corrected title for the cache test",
        latest_version=record.latest_version + 1,
        updated=record.updated + dt.timedelta(days=1),
    )
    with django_capture_on_commit_callbacks(execute=True):
        result = papers_upsert(records=[retitled], source="test")
    assert result.updated == 1

    page = get(client, paper.get_absolute_url())
    assert page[CACHE_HEADER] == "miss"
    assert "A corrected title for the cache test" in page.content.decode()


def test_after_a_change_one_request_rebuilds_while_the_others_get_the_previous_page(
    client, django_capture_on_commit_callbacks
):
    topic = TopicFactory()
    url = topic.get_absolute_url()
    before = get(client, url).content
    with django_capture_on_commit_callbacks(execute=True):
        card_paper(topics=[topic], title="Arrived during the burst")
        topic_caches_invalidate_on_commit([topic.pk])  # as the tagging services do

    # Another request holds the rebuild: this one is served the previous page.
    key = pagecache._cache_key(RequestFactory().get(url), ("page",))
    assert cache.add(f"{key}:lock", 1, timeout=30)
    stale = get(client, url)
    assert stale[CACHE_HEADER] == "hit" and stale.content == before

    cache.delete(f"{key}:lock")
    fresh = get(client, url)
    assert fresh[CACHE_HEADER] == "miss"
    assert "Arrived during the burst" in fresh.content.decode()
    assert cache.get(f"{key}:lock") is None  # the rebuilder let go of the lock
    assert get(client, url)[CACHE_HEADER] == "hit"


def test_a_page_that_renders_a_csrf_token_or_sets_a_cookie_is_never_shared():
    factory = RequestFactory()

    @cache_anonymous_page()
    def with_form(request):
        return HttpResponse(f"<form>{get_token(request)}</form>")

    @cache_anonymous_page()
    def with_cookie(request):
        response = HttpResponse("hello")
        response.set_cookie("flavour", "oat")
        return response

    for view in (with_form, with_cookie):
        assert view(factory.get("/x/"))[CACHE_HEADER] == "miss"
        assert view(factory.get("/x/"))[CACHE_HEADER] == "miss"


def test_errors_and_redirects_are_not_cached(client):
    topic = TopicFactory(slug="kept")
    assert client.get("/topics/no-such-topic/").status_code == 404
    assert client.get("/topics/no-such-topic/").status_code == 404
    AssignmentFactory(topic=topic)
    assert get(client, "/topics/kept/")[CACHE_HEADER] == "miss"


def test_a_reader_with_a_flash_message_gets_their_own_page(client):
    topic = TopicFactory()
    get(client, topic.get_absolute_url())
    client.cookies["messages"] = "anything"
    assert get(client, topic.get_absolute_url())[CACHE_HEADER] == "bypass"


def test_turned_off_with_zero_seconds(client, settings):
    settings.PAGE_CACHE_SECONDS = 0
    topic = TopicFactory()
    assert get(client, topic.get_absolute_url())[CACHE_HEADER] == "bypass"
    assert get(client, topic.get_absolute_url())[CACHE_HEADER] == "bypass"


def test_with_redis_down_every_request_renders_the_page(client):
    topic = TopicFactory()
    card_paper(topics=[topic], title="Still readable")
    dead = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",  # nothing listens on port 1
            "OPTIONS": {"IGNORE_EXCEPTIONS": True, "SOCKET_CONNECT_TIMEOUT": 1},
        }
    }
    with override_settings(CACHES=dead):
        caches["default"].close()
        for _ in range(2):
            response = get(client, topic.get_absolute_url())
            assert response[CACHE_HEADER] == "miss"
            assert "Still readable" in response.content.decode()


def test_the_index_and_paper_pages_are_shared_too(client):
    topic = TopicFactory()
    paper = card_paper(topics=[topic])
    for url in ("/topics/", "/topics/?sort=size", paper.get_absolute_url()):
        assert get(client, url)[CACHE_HEADER] == "miss", url
        assert get(client, url)[CACHE_HEADER] == "hit", url
    assert get(client, "/topics/?q=graph")[CACHE_HEADER] == "bypass"


def test_each_host_and_scheme_has_its_own_copy(client, settings):
    settings.ALLOWED_HOSTS = ["testserver", "mirror.example.org"]
    topic = TopicFactory()
    url = topic.get_absolute_url()
    assert get(client, url)[CACHE_HEADER] == "miss"
    assert get(client, url, HTTP_HOST="mirror.example.org")[CACHE_HEADER] == "miss"
    assert get(client, url, secure=True)[CACHE_HEADER] == "miss"
    assert get(client, url, HTTP_HOST="mirror.example.org")[CACHE_HEADER] == "hit"


def test_a_page_that_went_away_is_not_served_from_its_old_copy(
    client, django_capture_on_commit_callbacks
):
    topic = TopicFactory(slug="retiring")
    url = topic.get_absolute_url()
    assert get(client, url)[CACHE_HEADER] == "miss"
    with django_capture_on_commit_callbacks(execute=True):
        topic.active = False
        topic.save()  # as the admin does: the version moves on after the commit

    assert client.get(url).status_code == 404
    # Even while another request would hold the rebuild, the stale copy is gone.
    key = pagecache._cache_key(RequestFactory().get(url), ("page",))
    assert cache.get(key) is None
    assert cache.add(f"{key}:lock", 1, timeout=30)
    assert client.get(url).status_code == 404


def test_a_hit_carries_the_kept_etag_and_hashes_nothing(client, monkeypatch):
    """The kept copy keeps its ETag (Django's, of the same body), so a hit is not hashed again
    by the conditional-GET middleware; a copy kept before ETags were (three fields) is still
    served, with an ETag the middleware computes."""
    import hashlib

    from django.utils.cache import quote_etag

    topic = TopicFactory(name="Graph learning")
    card_paper(topics=[topic], title="Message passing at scale")
    url = topic.get_absolute_url()
    first = get(client, url)
    assert first["ETag"] == quote_etag(hashlib.md5(first.content).hexdigest())

    hashed = []
    real_md5 = hashlib.md5
    monkeypatch.setattr(
        "django.utils.cache.md5", lambda *a, **k: hashed.append(1) or real_md5(*a, **k)
    )
    second = get(client, url)
    assert second[CACHE_HEADER] == "hit" and second["ETag"] == first["ETag"] and not hashed
    assert client.get(url, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304

    # An entry of the three fields kept before: served, its ETag computed by the middleware.
    key = pagecache._cache_key(RequestFactory().get(url), ())
    entry = cache.get(key)
    assert len(entry) == 5
    cache.set(key, entry[:3], timeout=60)
    caches["pages"].clear()  # and no copy of this process's
    third = get(client, url)
    assert third[CACHE_HEADER] == "hit" and third.content == first.content
    assert third["ETag"] == first["ETag"] and hashed


def test_a_process_serves_its_own_copy_while_the_version_holds(
    client, django_capture_on_commit_callbacks, monkeypatch
):
    """The web process keeps the copies it served (the ``pages`` cache): a hit reads the
    version from Redis and nothing else, and a change still shows at once."""

    assert "pages" in caches.settings  # Redis configured: the process keeps copies too
    topic = TopicFactory()
    paper = card_paper(topics=[topic], title="Kept in the process")
    url = topic.get_absolute_url()
    pagecache.page_cache_invalidate()  # a site-wide version, as any write leaves
    first = get(client, url)
    assert first[CACHE_HEADER] == "miss"
    read = []
    redis = caches["default"]
    real_get, real_get_many = redis.get, redis.get_many
    monkeypatch.setattr(redis, "get", lambda key, *a, **k: read.append(key) or real_get(key))
    monkeypatch.setattr(redis, "get_many", lambda keys: read.extend(keys) or real_get_many(keys))
    second = get(client, url)
    assert second[CACHE_HEADER] == "hit" and second.content == first.content
    assert second["ETag"] == first["ETag"]
    assert read == [pagecache.VERSION_KEY]  # the page itself did not come from Redis

    # Gone from Redis (evicted): the version still holds, so the process's copy is good.
    cache.delete(pagecache._cache_key(RequestFactory().get(url), ("page",)))
    assert get(client, url).content == first.content

    assignment = Assignment.objects.get(paper=paper, topic=topic)
    with django_capture_on_commit_callbacks(execute=True):
        assignment_decide(assignment=assignment, state="rejected", user=UserFactory())
    after = get(client, url)
    assert after[CACHE_HEADER] == "miss"
    assert "Kept in the process" not in after.content.decode()


def test_a_process_copy_lives_no_longer_than_the_shared_one(client, settings, monkeypatch):
    """Found by a breaker: a copy a process took late in the shared copy's life was kept a
    whole lifetime more, serving what nothing reports (a follower count) past the bound."""

    settings.PAGE_CACHE_SECONDS = 60
    topic = TopicFactory()
    card_paper(topics=[topic])
    url = topic.get_absolute_url()
    pagecache.page_cache_invalidate()
    assert get(client, url)[CACHE_HEADER] == "miss"  # another process rendered it at t0
    caches["pages"].clear()  # this process has no copy yet
    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now + 55)  # it takes the copy at t0 + 55
    assert get(client, url)[CACHE_HEADER] == "hit"
    key = pagecache._cache_key(RequestFactory().get(url), ("page",))
    assert caches["pages"].get(key) is not None
    monkeypatch.setattr(time, "time", lambda: now + 61)  # past the shared copy's lifetime
    assert caches["pages"].get(key) is None


def test_without_a_version_the_process_copy_is_not_served(client):
    """Redis down (or flushed) says nothing about the process's copy being current: the page
    is rendered."""

    topic = TopicFactory()
    card_paper(topics=[topic], title="Rendered again")
    url = topic.get_absolute_url()
    pagecache.page_cache_invalidate()
    get(client, url)
    assert get(client, url)[CACHE_HEADER] == "hit"
    assert len(caches["pages"]._cache) == 1  # the process keeps its copy
    dead = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",  # nothing listens on port 1
            "OPTIONS": {"IGNORE_EXCEPTIONS": True, "SOCKET_CONNECT_TIMEOUT": 1},
        },
        "pages": caches.settings["pages"],
    }
    with override_settings(CACHES=dead):
        caches["default"].close()
        assert get(client, url)[CACHE_HEADER] == "miss"


def _served_by_the_whole_stack(response) -> bool:
    """Whether the request went through the middleware below the page cache's (the
    authentication middleware gives every such request its ``user``)."""
    return hasattr(response.wsgi_request, "user")


@pytest.mark.parametrize("page", ["topic", "index", "paper", "author"])
def test_a_process_copy_is_served_before_the_rest_of_the_stack_with_the_same_headers(
    client, django_assert_num_queries, page
):
    """``PageCacheMiddleware`` answers from the process's copy before sessions, CSRF,
    authentication and the URL resolver run, and its hit is the one the whole stack gives:
    the same body and headers (security, CSP, frame options, ETag, Vary, length), a 304 to
    a client holding the ETag."""

    topic = TopicFactory()
    paper = card_paper(topics=[topic], title="Served early")
    url = {
        "topic": topic.get_absolute_url(),
        "index": "/topics/",
        "paper": paper.get_absolute_url(),
        "author": paper.authorships.first().author.get_absolute_url(),
    }[page]
    pagecache.page_cache_invalidate()
    first = get(client, url)
    assert first[CACHE_HEADER] == "miss"
    caches["pages"].clear()  # another process rendered it: this one has only Redis's copy
    through_stack = get(client, url)
    assert through_stack[CACHE_HEADER] == "hit" and _served_by_the_whole_stack(through_stack)
    with django_assert_num_queries(0):
        early = get(client, url)
    assert early[CACHE_HEADER] == "hit" and not _served_by_the_whole_stack(early)
    assert early.content == through_stack.content == first.content
    assert dict(early.headers) == dict(through_stack.headers)
    assert early["X-Frame-Options"] == "DENY" and "Content-Security-Policy" in early
    head = client.head(url)
    assert head.status_code == 200 and not _served_by_the_whole_stack(head)
    assert client.get(url, HTTP_IF_NONE_MATCH=early["ETag"]).status_code == 304


def test_what_the_early_path_must_not_answer_goes_down_the_stack(client):
    """A signed-in reader, another spelling of the address, a flash-message cookie or a
    ``POST`` never gets the process's copy from the early path."""
    topic = TopicFactory()
    card_paper(topics=[topic])
    url = topic.get_absolute_url()
    pagecache.page_cache_invalidate()
    get(client, url)
    assert not _served_by_the_whole_stack(get(client, url))  # the copy is here

    odd = get(client, url + "?utm_source=feed")
    assert odd[CACHE_HEADER] == "bypass" and _served_by_the_whole_stack(odd)
    client.cookies["messages"] = "x"
    assert _served_by_the_whole_stack(get(client, url))
    del client.cookies["messages"]
    assert _served_by_the_whole_stack(client.post(url))
    client.force_login(UserFactory())
    signed_in = get(client, url)
    assert signed_in[CACHE_HEADER] == "bypass" and _served_by_the_whole_stack(signed_in)


def test_after_redis_lost_its_keys_a_version_is_started_and_copies_are_kept_again(client):
    """Redis keeps nothing across a restart: the first page rendered after it starts a
    site-wide version (one for every process, ``cache.add``), so copies carry one and each
    process may keep them again; before, no process kept any until the next data change."""
    topic = TopicFactory()
    card_paper(topics=[topic])
    url = topic.get_absolute_url()
    cache.clear()  # a Redis restarted empty
    caches["pages"].clear()
    assert get(client, url)[CACHE_HEADER] == "miss"
    version = cache.get(pagecache.VERSION_KEY)
    assert version is not None
    early = get(client, url)
    assert early[CACHE_HEADER] == "hit" and not _served_by_the_whole_stack(early)
    pagecache.page_cache_invalidate()  # a change moves it on as always
    assert get(client, url)[CACHE_HEADER] == "miss"
    assert cache.get(pagecache.VERSION_KEY) != version
