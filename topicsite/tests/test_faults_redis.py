"""Redis stopped: a redis-server of the test's own (a free port, no persistence) serves as the
cache and the broker, and is killed half-way. Pages and the API keep answering from
PostgreSQL (django-redis skips the dead cache), rate limits fail open as the settings say,
a task that cannot be queued is logged with the command that queues it again and the write
stays, and once Redis is back the command queues it. The shared Redis on 6379 is never touched.
"""

from __future__ import annotations

import logging
import shutil
import signal
import subprocess
import time
from unittest import mock

import pytest
import redis
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse
from redis.connection import AbstractConnection

from accounts.tests.factories import PASSWORD, UserFactory
from follows.models import Follow
from papers.models import Paper
from papers.tests.factories import PaperFactory
from topics.models import Assignment
from topics.services import topic_create
from topics.tests.factories import AssignmentFactory, TopicFactory
from topicsite import cache as topicsite_cache
from topicsite.celery import app
from topicsite.tests.smtp import free_port

pytestmark = pytest.mark.django_db

TOO_MANY = "Too many failed login attempts. Try again later."
REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


class OwnRedis:
    """``redis-server`` on a free local port, no RDB or AOF files; :meth:`stop` kills it,
    :meth:`start` brings a new, empty one up on the same port."""

    def __init__(self, tmp_path):
        self.port = free_port()
        self.dir = tmp_path
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process = None

    def start(self):
        self.process = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
            + ["--appendonly", "no", "--dir", str(self.dir)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis.from_url(self.url)
        for _ in range(100):
            try:
                if client.ping():
                    return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise AssertionError(f"redis-server on port {self.port} did not start")

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def client(self):
        return redis.Redis.from_url(self.url)

    def pause(self):
        """Hang it (SIGSTOP): connections are still accepted by the kernel, nothing answers."""
        self.process.send_signal(signal.SIGSTOP)

    def resume(self):
        self.process.send_signal(signal.SIGCONT)


@pytest.fixture
def own_redis(settings, tmp_path):
    """The cache (the project's django-redis settings, pointed at our server) and the Celery
    broker on our own redis-server; tasks go to it instead of running eagerly."""
    server = OwnRedis(tmp_path)
    server.start()
    cache = dict(settings.CACHES["default"])
    assert cache["BACKEND"] == "topicsite.cache.RedisCache"
    assert cache["OPTIONS"]["IGNORE_EXCEPTIONS"] is True
    # The deployed timeouts (the test settings wait longer on the shared, busy Redis).
    options = settings.REDIS_CACHE_DEPLOYED_OPTIONS
    assert options["SOCKET_TIMEOUT"] < 1
    settings.CACHES = {"default": {**cache, "LOCATION": server.url, "OPTIONS": options}}
    saved = {key: app.conf[key] for key in ("task_always_eager", "broker_url")}
    app.conf.task_always_eager = False
    app.conf.broker_url = server.url
    settings.CELERY_TASK_ALWAYS_EAGER = False
    forget_publisher_pools()
    # Each test's server is new: no breaker state or fallback counts from an earlier one.
    topicsite_cache.reset()
    try:
        yield server
    finally:
        server.stop()
        topicsite_cache.reset()
        app.conf.update(saved)
        forget_publisher_pools()


def forget_publisher_pools():
    """Celery keeps its connection and producer pools for the broker URL it first used; drop
    them so that publishing follows ``broker_url`` (each test has its own server)."""
    # kombu keeps its pools in a registry keyed by broker URL: closing one there without
    # clearing the registry would hand the closed pool to every later test on that URL.
    from kombu import pools

    pools.reset()
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture
def site_data():
    topic = TopicFactory(name="Agents", slug="agents")
    paper = PaperFactory(title="Agents that plan with language models")
    AssignmentFactory(paper=paper, topic=topic)
    return topic, paper


def reader_urls(topic, paper) -> list[str]:
    return [
        reverse("topics:index"),
        topic.get_absolute_url(),
        reverse("papers:detail", kwargs={"arxiv_id": paper.arxiv_id}),
        reverse("ask:topic", kwargs={"slug": topic.slug}) + "?q=planning+agents",
        "/api/v1/papers/",
        f"/api/v1/topics/{topic.slug}/",
        "/api/v1/search/?q=agents",
    ]


def test_pages_and_api_answer_with_redis_stopped(own_redis, site_data, client, caplog):
    topic, paper = site_data
    urls = reader_urls(topic, paper)
    with_redis = {url: client.get(url).status_code for url in urls}
    assert set(with_redis.values()) == {200}, with_redis
    # The cache really is our server: the pages filled it.
    assert own_redis.client().dbsize() > 0

    own_redis.stop()
    caplog.set_level(logging.ERROR, logger="django_redis.cache")
    without_redis = {url: client.get(url) for url in urls}

    assert {url: r.status_code for url, r in without_redis.items()} == with_redis
    assert paper.title in without_redis[topic.get_absolute_url()].content.decode()
    assert without_redis["/api/v1/papers/"].json()["results"][0]["title"] == paper.title
    # Each skipped cache call was logged (DJANGO_REDIS_LOG_IGNORED_EXCEPTIONS).
    assert any(r.message == "Exception ignored" for r in caplog.records)


def test_rate_limits_count_with_redis_and_as_documented_without(own_redis, site_data, settings):
    from django.test import Client

    topic, _ = site_data
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"anon": "2/min", "user": "2/min", "write": "2/min"},
    }
    settings.ASK_RATE_LIMIT_PER_MINUTE = 1
    user = UserFactory()
    ask = reverse("ask:topic", kwargs={"slug": topic.slug}) + "?q=agents"
    login = reverse("account_login")
    wrong = {"login": user.email, "password": "not " + PASSWORD}

    def statuses(client):
        return {
            "api": [client.get("/api/v1/papers/").status_code for _ in range(3)],
            "ask": [client.get(ask).status_code for _ in range(2)],
            "login": [login_answer(client.post(login, wrong)) for _ in range(7)],
        }

    def login_answer(response) -> str:
        """allauth answers a refused log-in with the form and an error (status 200); a 429 is
        the rate limit failing closed (its lock could not be taken)."""
        assert response.status_code == 200, response.status_code
        return "refused" if TOO_MANY in response.content.decode() else "wrong"

    counted = statuses(Client())
    assert counted["api"] == [200, 200, 429]
    assert counted["ask"] == [200, 429]
    # allauth: 5 failed log-ins per email address in 5 minutes, then refused.
    assert counted["login"] == ["wrong"] * 5 + ["refused"] * 2

    own_redis.stop()
    # The API throttles and ask's limit fail open (the settings' deliberate choice); allauth's
    # limits count in this process's memory, so guessing is still refused after 5 failures.
    assert statuses(Client()) == {
        "api": [200] * 3,
        "ask": [200] * 2,
        "login": ["wrong"] * 5 + ["refused"] * 2,
    }


def test_log_in_sign_up_and_password_pages_work_with_redis_stopped(own_redis, client):
    """Every form allauth rate-limits answers as with Redis up, and quickly (it used to wait
    1 s for a cache lock and answer 429)."""
    from django.core import mail

    user = UserFactory()
    own_redis.stop()
    timings = {}

    def post(name, url, data):
        started = time.monotonic()
        response = client.post(url, data)
        timings[name] = time.monotonic() - started
        assert response.status_code in (200, 302), (name, response.status_code)
        return response

    response = post("login", reverse("account_login"), {"login": user.email, "password": PASSWORD})
    assert response.status_code == 302
    assert client.session.get("_auth_user_id") == str(user.pk)

    new_password = "a brand new passphrase"
    response = post(
        "change_password",
        reverse("account_change_password"),
        {"oldpassword": PASSWORD, "password1": new_password, "password2": new_password},
    )
    assert response.status_code == 302
    user.refresh_from_db()
    assert user.check_password(new_password)

    client.logout()
    post("reset_password", reverse("account_reset_password"), {"email": user.email})
    assert any(user.email in message.to for message in mail.outbox)
    response = post(
        "signup",
        reverse("account_signup"),
        {"email": "newcomer@example.org", "password1": new_password, "password2": new_password},
    )
    assert response.status_code == 302
    assert get_user_model().objects.filter(email="newcomer@example.org").exists()
    # Only the first cache call waits (the socket connect is refused at once here); none
    # waits for allauth's one-second lock.
    assert max(timings.values()) < 0.9, timings


def test_a_saved_search_is_kept_when_its_task_cannot_be_queued(
    own_redis, client, caplog, django_capture_on_commit_callbacks
):
    user = UserFactory()
    client.force_login(user)
    own_redis.stop()
    caplog.set_level(logging.ERROR, logger="topicsite.publish")

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = client.post(
            reverse("follows:search-create"),
            {
                "query": "planning agents",
                "topics": "",
                "categories": "",
                "digest_frequency": "daily",
            },
        )

    # The backfill was to be queued on commit; the request still redirects as after a save.
    assert len(callbacks) == 1
    assert response.status_code == 302
    follow = Follow.objects.get(user=user, kind=Follow.Kind.SEARCH)
    assert follow.query == "planning agents"
    (record,) = [r for r in caplog.records if r.name == "topicsite.publish"]
    assert "follows.tasks.saved_search_backfill" in record.getMessage()
    assert f"saved_search_backfill.delay(*[{follow.pk}])" in record.getMessage()


@pytest.mark.django_db(transaction=True)
def test_stored_papers_stay_and_are_tagged_once_redis_is_back(own_redis, caplog, capsys):
    from papers.categories import category_sync
    from papers.ingest import papers_upsert
    from papers.parsers.snapshot import iter_snapshot
    from papers.sources.recorded import DEFAULT_RECORDED_DIR

    category_sync()
    topic_create(name="Physics", slug="physics", rule_query="field OR quantum OR energy")
    path = DEFAULT_RECORDED_DIR / "snapshot" / "arxiv-metadata-oai-snapshot_head200.jsonl"
    with path.open("rb") as stream:
        records = list(iter_snapshot(stream, source=str(path), on_error=lambda error: None))
    own_redis.stop()
    caplog.set_level(logging.ERROR, logger="topicsite.publish")

    # Ingestion (as a harvest's worker does it) while the broker is down.
    result = papers_upsert(records=records, batch_size=50, source=str(path))

    # Every paper is stored; none is tagged (the broker was down); each batch's failure is
    # logged with the command that tags exactly its papers.
    assert result.created == Paper.objects.count() == 200
    assert not Assignment.objects.exists()
    logged_commands = [
        r.getMessage().rsplit(": ", 1)[1] for r in caplog.records if r.name == "topicsite.publish"
    ]
    # Each batch also queues embedding and near-duplicate detection: logged the same way.
    commands = [c for c in logged_commands if c.startswith("manage.py tag --ids ")]
    assert len(commands) == 4
    assert sum(c.startswith("manage.py detect_duplicates --ids ") for c in logged_commands) == 4
    assert sum(c.startswith("manage.py embed") for c in logged_commands) == 4
    assert len(logged_commands) == 12
    logged = {int(i) for c in commands for i in c.removeprefix("manage.py tag --ids ").split(",")}
    assert logged == set(Paper.objects.values_list("pk", flat=True))

    # Redis back (empty, as after a restart without persistence): the operator's command
    # queues the tagging; the broker holds it for the tag workers, who tag every paper.
    own_redis.start()
    call_command("tag", "--ids", commands[0].removeprefix("manage.py tag --ids "))
    assert "Queued tagging of 50 papers in 1 chunks" in capsys.readouterr().out
    (message,) = own_redis.client().lrange("tag", 0, -1)
    assert b"topics.tasks.tag_papers" in message


def test_a_hung_redis_costs_one_short_wait_then_is_skipped(own_redis, site_data, client, settings):
    """SIGSTOP, not a refused connection: every cache call would wait for its socket timeout.
    The first failure opens the breaker; pages then answer without waiting, and once the
    breaker's time is up a Redis that answers again is used again."""
    from django.core.cache import cache

    cache_settings = settings.CACHES["default"]
    settings.CACHES = {
        "default": {
            **cache_settings,
            "OPTIONS": {**cache_settings["OPTIONS"], "BREAKER_SECONDS": 2},
        }
    }
    topic, paper = site_data
    urls = reader_urls(topic, paper)
    assert {client.get(url).status_code for url in urls} == {200}

    own_redis.pause()
    # Every command the pages send to Redis ends in reading its reply: count those reads
    # (a hung Redis times each out after SOCKET_TIMEOUT) instead of timing pages, which a
    # loaded machine slows whatever the cache does.
    reads = mock.patch.object(
        AbstractConnection,
        "read_response",
        autospec=True,
        side_effect=AbstractConnection.read_response,
    )
    started = time.monotonic()
    with reads as read_response:
        for url in urls:
            assert client.get(url).status_code == 200, url
    elapsed = time.monotonic() - started

    # One wait for the hung Redis, on the first page, then one more per breaker period the
    # pages outlasted; without the breaker each page's several cache calls would each wait.
    assert 1 <= read_response.call_count <= 1 + int(elapsed // 2), (
        read_response.call_count,
        elapsed,
    )

    own_redis.resume()
    time.sleep(2.1)
    cache.set("after-the-hang", "back", timeout=60)
    assert own_redis.client().exists(cache.make_key("after-the-hang")) == 1
