"""The topic page as signed-in readers share it (topicsite/pagecache.py with ``signed_in``,
topicsite/holes.py): rendered once with holes, filled per reader. No reader ever sees another
reader's name, CSRF token, follow state or saved papers; data changes show on the next
request; the filled page is the page rendered for that reader alone."""

from __future__ import annotations

import contextlib
import datetime as dt
import re
from types import SimpleNamespace

import pytest
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.messages import constants
from django.contrib.messages.storage.base import Message
from django.contrib.messages.storage.fallback import FallbackStorage
from django.contrib.messages.storage.session import SessionStorage
from django.core.cache import cache, caches
from django.middleware.csrf import _unmask_cipher_token
from django.test import Client

from follows.library_services import library_item_save
from follows.services import follow_create
from topics.assignments import assignment_decide, assignment_report
from topics.caches import topic_caches_invalidate_on_commit
from topics.models import Assignment
from topics.tests.factories import TopicFactory, UserFactory
from topics.tests.test_views_topic import card_paper
from topicsite import pagecache
from topicsite.holes import HOLE, holes_fill
from topicsite.pagecache import CACHE_HEADER

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("_reader_cache_on")]

TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


@pytest.fixture
def _reader_cache_on(settings):
    settings.PAGE_CACHE_SECONDS = 60
    settings.READER_PAGE_CACHE_SECONDS = 60


def reader(email: str) -> Client:
    client = Client()
    client.force_login(UserFactory(email=email))
    return client


def page(client, url) -> tuple[str, str]:
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return response[CACHE_HEADER], response.content.decode()


def follow_label(html: str) -> str:
    return re.search(r'<button type="submit" aria-pressed="\w+">(\w+) this topic', html).group(1)


def saved_ids(html: str) -> set[str]:
    """The papers whose Save button says "Saved"."""
    forms = [form.split("</form>")[0] for form in html.split("<form")[1:]]
    return {
        re.search(r'action="/library/papers/(\d+)/save/"', form).group(1)
        for form in forms
        if "/save/" in form and 'aria-pressed="true"' in form
    }


def test_two_readers_share_the_page_but_each_sees_only_their_own_parts():
    topic = TopicFactory(name="Graph learning")
    papers = [card_paper(topics=[topic], title=f"Paper number {n}") for n in range(3)]
    alice, bob = reader("alice@example.org"), reader("bob@example.org")
    alice_user = get_user_model().objects.get(pk=alice.session["_auth_user_id"])
    follow_create(user=alice_user, topic=topic)
    library_item_save(user=alice_user, paper=papers[1])
    url = topic.get_absolute_url()

    state_a, html_a = page(alice, url)
    state_b, html_b = page(bob, url)

    assert (state_a, state_b) == ("miss", "hit")
    assert "alice@example.org" in html_a and "bob@example.org" not in html_a
    assert "bob@example.org" in html_b and "alice@example.org" not in html_b
    assert follow_label(html_a) == "Unfollow" and follow_label(html_b) == "Follow"
    assert saved_ids(html_a) == {str(papers[1].pk)} and saved_ids(html_b) == set()
    assert "1 follower" in html_a and "1 follower" in html_b
    # Each page carries its reader's CSRF token (the log-out, follow and save forms), never
    # the other's: tokens are masked per request, so compare the secrets behind them.
    secrets_a = {_unmask_cipher_token(t) for t in TOKEN.findall(html_a)}
    secrets_b = {_unmask_cipher_token(t) for t in TOKEN.findall(html_b)}
    assert len(secrets_a) == 1 and len(secrets_b) == 1 and secrets_a != secrets_b
    assert secrets_b == {bob.cookies["csrftoken"].value}
    assert not HOLE.search(html_a) and not HOLE.search(html_b)  # every hole filled


def test_a_filled_page_masks_its_csrf_token_once_and_a_rotated_secret_gets_a_new_one(rf):
    """Every form a page's holes fill carries one token (masking it afresh per form drew 32
    random characters each: thirty Save buttons, thirty draws); a secret rotated during the
    request (a log-in) gets a token of the new secret, never the old one."""
    from django.middleware.csrf import rotate_token

    from topicsite.holes import csrf_token

    topic = TopicFactory()
    for n in range(5):
        card_paper(topics=[topic], title=f"Token paper {n}")
    erin = reader("erin@example.org")
    page(reader("warm@example.org"), topic.get_absolute_url())
    state, html = page(erin, topic.get_absolute_url())
    tokens = TOKEN.findall(html)
    assert state == "hit" and len(tokens) >= 7  # log-out, follow, five saves
    assert len(set(tokens)) == 1
    assert _unmask_cipher_token(tokens[0]) == erin.cookies["csrftoken"].value

    request = rf.get("/")
    first = csrf_token(request)
    assert csrf_token(request) == first
    rotate_token(request)
    rotated = csrf_token(request)
    assert _unmask_cipher_token(rotated) == request.META["CSRF_COOKIE"]
    assert _unmask_cipher_token(rotated) != _unmask_cipher_token(first)


def test_the_filled_shared_page_is_the_page_rendered_for_the_reader_alone(settings):
    topic = TopicFactory()
    for n in range(4):
        card_paper(topics=[topic], title=f"Shared paper {n}")
    carol = reader("carol@example.org")
    url = topic.get_absolute_url()
    page(reader("someone@example.org"), url)  # someone else fills the shared copy

    state, shared = page(carol, url)
    settings.READER_PAGE_CACHE_SECONDS = 0
    bypass, alone = page(carol, url)

    assert (state, bypass) == ("hit", "bypass")

    def unmasked(html):
        return TOKEN.sub("TOKEN", html)

    assert unmasked(shared) == unmasked(alone)


def test_a_hit_costs_the_same_few_queries_whatever_the_number_of_cards(
    django_assert_num_queries,
):
    small, large = TopicFactory(), TopicFactory()
    card_paper(topics=[small])
    for _ in range(12):
        card_paper(topics=[large])
    dave = reader("dave@example.org")
    page(reader("warm@example.org"), small.get_absolute_url())
    page(reader("warm@example.org"), large.get_absolute_url())

    # The user, the follow button and the saved states in one statement: none for the page
    # itself, nor for the session (its cached copy, topicsite.sessions).
    with django_assert_num_queries(1):
        assert page(dave, small.get_absolute_url())[0] == "hit"
    with django_assert_num_queries(1):
        assert page(dave, large.get_absolute_url())[0] == "hit"


def test_following_saving_and_a_flash_message_show_on_the_next_shared_page(client):
    topic = TopicFactory()
    paper = card_paper(topics=[topic])
    erin = reader("erin@example.org")
    url = topic.get_absolute_url()
    assert page(erin, url)[0] == "miss"

    response = erin.post(f"/follows/topics/{topic.slug}/", {"action": "follow"})
    assert response.status_code in (200, 302)
    erin.post(f"/library/papers/{paper.pk}/save/", {"action": "save", "next": url})
    state, html = page(erin, url)
    assert state == "hit"
    assert follow_label(html) == "Unfollow" and saved_ids(html) == {str(paper.pk)}
    assert 'class="messages"' in html  # the messages the two posts left, shown once
    assert 'class="messages"' not in page(erin, url)[1]


def test_a_curator_decision_and_a_new_paper_show_on_the_next_request(
    django_capture_on_commit_callbacks,
):
    topic = TopicFactory()
    wrong = card_paper(topics=[topic], title="Wrongly tagged paper")
    frank = reader("frank@example.org")
    url = topic.get_absolute_url()
    page(frank, url)
    assert page(frank, url)[0] == "hit"

    with django_capture_on_commit_callbacks(execute=True):
        assignment_decide(
            assignment=Assignment.objects.get(paper=wrong, topic=topic),
            state="rejected",
            user=UserFactory(),
        )
    state, html = page(frank, url)
    assert state == "miss" and "Wrongly tagged paper" not in html

    with django_capture_on_commit_callbacks(execute=True):
        card_paper(topics=[topic], title="Arrived just now")
        topic_caches_invalidate_on_commit([topic.pk])  # as the tagging services do
    state, html = page(frank, url)
    assert state == "miss" and "Arrived just now" in html


def test_anonymous_and_signed_in_copies_never_mix(client):
    topic = TopicFactory()
    card_paper(topics=[topic])
    url = topic.get_absolute_url()
    grace = reader("grace@example.org")

    assert page(client, url)[0] == "miss"
    assert page(grace, url)[0] == "miss"
    state, anonymous = page(client, url)
    assert state == "hit"
    assert "grace@example.org" not in anonymous and "csrfmiddlewaretoken" not in anonymous
    assert "Log in" in anonymous and "<!--follow-topic" not in anonymous
    state, mine = page(grace, url)
    assert state == "hit" and "grace@example.org" in mine and "Log out" in mine


def test_the_shared_copy_holds_no_reader_data(django_capture_on_commit_callbacks):
    topic = TopicFactory()
    card_paper(topics=[topic])
    heidi = reader("heidi@example.org")
    page(heidi, topic.get_absolute_url())

    stored = [
        value
        for key in cache.keys(f"{pagecache._PREFIX}:reader:*")  # django-redis
        if not key.endswith(":lock")
        for value in [cache.get(key)]
    ]
    assert len(stored) == 1
    shared = stored[0][2]
    assert "heidi" not in shared and "csrfmiddlewaretoken" not in shared
    assert f"<!--follow-topic:{topic.pk}-->" in shared and "<!--user-menu:-->" in shared


def test_a_topic_gone_gives_a_404_page_with_no_holes(django_capture_on_commit_callbacks):
    topic = TopicFactory()
    ivan = reader("ivan@example.org")
    url = topic.get_absolute_url()
    page(ivan, url)
    topic.active = False
    with django_capture_on_commit_callbacks(execute=True):
        topic.save()
    response = ivan.get(url)
    assert response.status_code == 404
    html = response.content.decode()
    assert "<!--user-menu" not in html and "ivan@example.org" in html


def test_turned_off_with_zero_seconds(settings):
    settings.READER_PAGE_CACHE_SECONDS = 0
    topic = TopicFactory()
    judy = reader("judy@example.org")
    assert page(judy, topic.get_absolute_url())[0] == "bypass"
    assert page(judy, topic.get_absolute_url())[0] == "bypass"


def test_personal_responses_are_private():
    topic = TopicFactory()
    response = reader("kim@example.org").get(topic.get_absolute_url())
    assert "private" in response["Cache-Control"] and "Cookie" in response["Vary"]


def test_a_message_added_before_a_hit_is_shown(rf):
    # The messages hole reads the reader's storage on every request, hit or miss.
    topic = TopicFactory()
    card_paper(topics=[topic])
    url = topic.get_absolute_url()
    page(reader("warm2@example.org"), url)
    request = rf.get(url)
    request.user = UserFactory()
    request.session = {}
    request._messages = FallbackStorage(request)
    messages.info(request, "Saved <b>for later</b>")
    html = holes_fill(request, "<!--messages:-->")
    assert html.startswith('<ul class="messages"') and "&lt;b&gt;for later" in html


def test_paper_page_readers_share_it_with_their_own_save_button_and_report_forms(
    django_assert_num_queries,
):
    first, second = TopicFactory(name="First topic"), TopicFactory(name="Second topic")
    paper = card_paper(topics=[first, second], title="A paper two readers open")
    lena, mike = reader("lena@example.org"), reader("mike@example.org")
    lena_user = get_user_model().objects.get(pk=lena.session["_auth_user_id"])
    library_item_save(user=lena_user, paper=paper)
    assignment_report(
        assignment=Assignment.objects.get(paper=paper, topic=first), user=lena_user, note=""
    )
    url = paper.get_absolute_url()

    state_l, html_l = page(lena, url)
    # The user, the Save button's state and the report forms' states in one statement; the
    # session is read from its cached copy.
    with django_assert_num_queries(1):
        state_m, html_m = page(mike, url)

    assert (state_l, state_m) == ("miss", "hit")
    assert "lena@example.org" in html_l and "lena@example.org" not in html_m
    assert saved_ids(html_l) == {str(paper.pk)} and saved_ids(html_m) == set()
    assert html_l.count("You reported this topic as wrong") == 1
    assert html_l.count("Report to the curators") == 1
    assert "You reported" not in html_m and html_m.count("Report to the curators") == 2
    assert not HOLE.search(html_l) and not HOLE.search(html_m)
    anonymous_state, anonymous = page(Client(), url)
    assert "Report to the curators" not in anonymous and "csrfmiddlewaretoken" not in anonymous


def test_the_filled_shared_paper_page_is_the_page_rendered_for_the_reader_alone(settings):
    topic = TopicFactory(name="Only topic")
    paper = card_paper(topics=[topic], title="A paper page to compare")
    nina = reader("nina@example.org")
    nina_user = get_user_model().objects.get(pk=nina.session["_auth_user_id"])
    library_item_save(user=nina_user, paper=paper)
    admin = UserFactory(email="admin@example.org", is_staff=True, is_superuser=True)
    staff = Client()
    staff.force_login(admin)
    url = paper.get_absolute_url()
    page(staff, url)  # a member of staff fills the shared copy

    state, shared = page(nina, url)
    settings.READER_PAGE_CACHE_SECONDS = 0
    bypass, alone = page(nina, url)

    assert (state, bypass) == ("hit", "bypass")
    assert TOKEN.sub("TOKEN", shared) == TOKEN.sub("TOKEN", alone)
    assert "admin@example.org" not in shared


def test_a_readers_etag_comes_from_the_shared_copy_and_the_fillings_without_hashing_the_page(
    monkeypatch,
):
    """A hit's ``ETag`` is the shared copy's kept tag with this reader's fillings: pages that
    differ (another reader, another follow state, another version) never share one, and the
    conditional-GET middleware does not hash the 80 KB page per request."""
    import hashlib

    topic = TopicFactory()
    card_paper(topics=[topic])
    url = topic.get_absolute_url()
    alice, bob = reader("alice@example.org"), reader("bob@example.org")
    assert page(alice, url)[0] == "miss"

    hashed = []
    real_md5 = hashlib.md5
    monkeypatch.setattr(
        "django.utils.cache.md5", lambda *a, **k: hashed.append(1) or real_md5(*a, **k)
    )
    first, again, other = alice.get(url), alice.get(url), bob.get(url)
    assert [r[CACHE_HEADER] for r in (first, again, other)] == ["hit"] * 3 and not hashed
    tags = [r["ETag"] for r in (first, again, other)]
    bodies = [r.content for r in (first, again, other)]
    assert all(tag.startswith('"') for tag in tags)
    # Each body is its own (a fresh CSRF mask per request), and so is each tag.
    assert len(set(bodies)) == 3 and len(set(tags)) == 3

    follow_create(user=get_user_model().objects.get(email="bob@example.org"), topic=topic)
    assert bob.get(url)["ETag"] not in tags


def test_equal_fillings_of_equal_copies_give_equal_tags(rf):
    """The fillings' tag is a function of what was filled: the same holes filled the same
    way give the same tag, any difference another."""
    from django.contrib.auth.models import AnonymousUser

    from topicsite.holes import holes_fill_tagged

    request = rf.get("/")
    request.user = AnonymousUser()
    html = "<p>a</p><!--user-menu:--><p>b</p>"
    assert holes_fill_tagged(request, html) == holes_fill_tagged(request, html)
    assert holes_fill_tagged(request, "<p>no holes</p>") == ("<p>no holes</p>", "")


# The early path (PageCacheMiddleware._reader_hit): a signed-in reader's page from this
# process's copy, before URL resolution and the rest of the stack.


def _through_full_stack(response) -> bool:
    """Whether the request went down the whole stack (allauth's middleware, below the page
    cache's, gives every such request its ``allauth`` namespace)."""
    return hasattr(response.wsgi_request, "allauth")


def _comparable_headers(response) -> dict:
    """The headers, with what differs between two answers to one reader anyway: the ETag
    (the fillings hold a CSRF token masked afresh each time) and the CSRF cookie's expiry."""
    headers = dict(response.headers)
    headers.pop("ETag")
    return headers


def _csrf_cookie(response) -> tuple:
    morsel = response.cookies["csrftoken"]
    return morsel.value, morsel["path"], morsel["samesite"], morsel["max-age"]


def test_a_signed_in_readers_hit_is_served_before_the_stack_as_the_full_stack_serves_it(
    django_assert_num_queries,
):
    """With the shared copy in this process, a signed-in reader's page is answered before the
    URL resolver and the rest of the stack: the same body (but for the per-request masking
    of the CSRF token) and headers as the full stack's, the CSRF cookie renewed as the CSRF
    middleware renews it; one statement (the user, the follow button, the saved states),
    none for the page nor the session (read with the site-wide version)."""
    topic = TopicFactory()
    papers = [card_paper(topics=[topic], title=f"Early paper {n}") for n in range(3)]
    grace = reader("grace@example.org")
    grace_user = get_user_model().objects.get(email="grace@example.org")
    follow_create(user=grace_user, topic=topic)
    library_item_save(user=grace_user, paper=papers[2])
    url = topic.get_absolute_url()
    assert page(grace, url)[0] == "miss"
    caches["pages"].clear()  # another process rendered it: this one has only Redis's copy
    through_stack = grace.get(url)
    assert through_stack[CACHE_HEADER] == "hit" and _through_full_stack(through_stack)
    with django_assert_num_queries(1):
        early = grace.get(url)
    assert early[CACHE_HEADER] == "hit" and not _through_full_stack(early)

    assert TOKEN.sub("T", early.content.decode()) == TOKEN.sub("T", through_stack.content.decode())
    assert _comparable_headers(early) == _comparable_headers(through_stack)
    assert _csrf_cookie(early) == _csrf_cookie(through_stack)
    assert early["Cache-Control"] == "private" and "Cookie" in early["Vary"]
    html = early.content.decode()
    assert "grace@example.org" in html and follow_label(html) == "Unfollow"
    assert saved_ids(html) == {str(papers[2].pk)}
    assert {_unmask_cipher_token(t) for t in TOKEN.findall(html)} == {
        grace.cookies["csrftoken"].value
    }
    assert not _through_full_stack(grace.head(url))


def _warm_topic_page() -> str:
    """The address of a new topic page of one card whose shared copy another reader had
    rendered and kept in this process."""
    topic = TopicFactory()
    card_paper(topics=[topic])
    url = topic.get_absolute_url()
    warm = reader(f"warm{topic.pk}@example.org")
    page(warm, url)
    assert page(warm, url)[0] == "hit"
    return url


def test_a_changed_password_or_a_deactivated_reader_goes_down_the_stack_and_is_signed_out():
    """The early path accepts only sessions Django's authentication accepts as they are: a
    password changed elsewhere (the session's hash no longer matches) or a reader made
    inactive goes down the stack, where Django signs them out, as before."""
    url = _warm_topic_page()
    henry, ivy = reader("henry@example.org"), reader("ivy@example.org")
    assert not _through_full_stack(henry.get(url)) and not _through_full_stack(ivy.get(url))

    user = get_user_model().objects.get(email="henry@example.org")
    user.set_password("a new password elsewhere")
    user.save()
    response = henry.get(url)
    assert _through_full_stack(response) and not response.wsgi_request.user.is_authenticated
    assert "henry@example.org" not in response.content.decode()

    get_user_model().objects.filter(email="ivy@example.org").update(is_active=False)
    response = ivy.get(url)
    assert _through_full_stack(response) and not response.wsgi_request.user.is_authenticated
    assert "ivy@example.org" not in response.content.decode()


def test_sessions_the_early_path_cannot_judge_alone_go_down_the_stack(settings):
    """A flash message waiting in the session or in a cookie, a session of a backend no
    longer configured, one of a deleted user, an expired one, another address spelling, a
    ``POST`` and an outdated copy all take the full stack."""
    from django.contrib.sessions.models import Session

    url = _warm_topic_page()

    # Flash messages kept in the session (a site's MESSAGE_STORAGE; Django's default keeps
    # them in a cookie, and in the session only after a cookie that says so).
    settings.MESSAGE_STORAGE = "django.contrib.messages.storage.session.SessionStorage"
    jack = reader("jack@example.org")
    session = jack.session
    storage = SessionStorage(SimpleNamespace(session=session))
    storage._store([Message(constants.INFO, "Waiting for you")], response=None)
    session.save()
    response = jack.get(url)
    assert _through_full_stack(response) and "Waiting for you" in response.content.decode()
    assert not _through_full_stack(jack.get(url))  # shown once, then early again

    jack.cookies["messages"] = "x"
    assert _through_full_stack(jack.get(url))
    del jack.cookies["messages"]
    assert _through_full_stack(jack.get(url + "?utm_source=mail"))
    assert _through_full_stack(jack.post(url))

    pagecache.page_cache_invalidate()
    assert _through_full_stack(jack.get(url))  # the copy here is outdated: rebuilt below
    assert not _through_full_stack(jack.get(url))

    kate = reader("kate@example.org")
    session = kate.session
    session["_auth_user_backend"] = "some.removed.Backend"
    session.save()
    response = kate.get(url)
    assert _through_full_stack(response) and not response.wsgi_request.user.is_authenticated

    leo = reader("leo@example.org")
    get_user_model().objects.filter(email="leo@example.org").delete()
    response = leo.get(url)
    assert _through_full_stack(response) and not response.wsgi_request.user.is_authenticated

    mia = reader("mia@example.org")
    key = mia.session.session_key
    Session.objects.filter(session_key=key).update(
        expire_date=Session.objects.get(session_key=key).expire_date - dt.timedelta(days=400)
    )
    cache.delete(mia.session.cache_key)  # its cached copy expires with it
    response = mia.get(url)
    assert _through_full_stack(response) and not response.wsgi_request.user.is_authenticated


def test_the_early_path_is_off_where_the_reader_cache_is(settings):
    url = _warm_topic_page()
    nina = reader("nina@example.org")
    assert not _through_full_stack(nina.get(url))
    settings.READER_PAGE_CACHE_SECONDS = 0
    response = nina.get(url)
    assert _through_full_stack(response) and response[CACHE_HEADER] == "bypass"


class RecordingStorage(FallbackStorage):
    """A message storage of the site's own (not one Django ships): counts its requests."""

    made = 0

    def __init__(self, request, *args, **kwargs):
        type(self).made += 1
        super().__init__(request, *args, **kwargs)


def test_a_message_storage_of_the_sites_own_gets_its_middleware_hooks_on_the_early_path(
    settings,
):
    """With Django's own message storages the early path skips the messages middleware's
    hooks (no message cookie, none in the session: nothing to show or write); another storage
    gets them, as on the full stack."""
    url = _warm_topic_page()
    olga = reader("olga@example.org")
    settings.MESSAGE_STORAGE = f"{__name__}.RecordingStorage"
    RecordingStorage.made = 0
    response = olga.get(url)
    assert not _through_full_stack(response) and response.status_code == 200
    assert RecordingStorage.made == 1


def test_a_session_copy_that_outlived_its_row_is_refused_and_deleted_by_the_early_path():
    """A log-out whose delete Redis did not get (slow, or skipped by the breaker) leaves the
    session's copy in the cache without its row: the early path confirms the row in its one
    statement, deletes the copy and goes down the stack, where the reader is signed out."""
    from django.contrib.sessions.models import Session

    url = _warm_topic_page()
    pia = reader("pia@example.org")
    assert "pia@example.org" in pia.get(url).content.decode()
    session = pia.session
    assert cache.get(session.cache_key) is not None
    Session.objects.filter(session_key=session.session_key).delete()  # the row alone

    response = pia.get(url)
    assert _through_full_stack(response) and not response.wsgi_request.user.is_authenticated
    assert "pia@example.org" not in response.content.decode()
    assert cache.get(session.cache_key) is None
    assert not pia.get("/library/").wsgi_request.user.is_authenticated


@pytest.mark.django_db(transaction=True)
def test_a_user_read_survives_a_migration_that_changes_a_columns_type():
    """The user and the holes are read by one statement prepared once per connection whose
    result is JSON: a migration run elsewhere that changes a column's type (a longer first
    name, a longer slug) leaves signed-in pages working on connections that prepared it
    before (a prepared statement whose result type changed fails: "cached plan must not
    change result type")."""
    url = _warm_topic_page()
    quinn = reader("quinn@example.org")
    assert not _through_full_stack(quinn.get(url))
    with (
        _migration("auth_user", "first_name", 200, 150),
        _migration("topics_topic", "slug", 300, 200),
    ):
        response = quinn.get(url)
    assert response.status_code == 200 and not _through_full_stack(response)
    assert "quinn@example.org" in response.content.decode()


@contextlib.contextmanager
def _migration(table: str, column: str, length: int, back: int):
    """``column`` of ``table`` made ``varchar(length)`` by another connection (as a
    migration would), and made ``varchar(back)`` again at the end."""
    import psycopg
    from django.db import connection

    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    with psycopg.connect(**params, autocommit=True) as other:
        other.execute(f"ALTER TABLE {table} ALTER COLUMN {column} TYPE varchar({length})")
        try:
            yield
        finally:
            other.execute(f"ALTER TABLE {table} ALTER COLUMN {column} TYPE varchar({back})")
