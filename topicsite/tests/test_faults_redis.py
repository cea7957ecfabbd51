"""Redis stopped: a redis-server of the test's own (a free port, no persistence) serves as the
cache and the broker, and is killed half-way. Pages and the API keep answering from
PostgreSQL (django-redis skips the dead cache), rate limits fail open as the settings say,
a task that cannot be queued is logged with the command that queues it again and the write
stays, and once Redis is back the command queues it. The shared Redis on 6379 is never touched.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import time

import pytest
import redis
from django.core.management import call_command
from django.urls import reverse

from accounts.tests.factories import PASSWORD, UserFactory
from follows.models import Follow
from papers.models import Paper
from papers.tests.factories import PaperFactory
from topics.models import Assignment
from topics.services import topic_create
from topics.tests.factories import AssignmentFactory, TopicFactory
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


@pytest.fixture
def own_redis(settings, tmp_path):
    """The cache (the project's django-redis settings, pointed at our server) and the Celery
    broker on our own redis-server; tasks go to it instead of running eagerly."""
    server = OwnRedis(tmp_path)
    server.start()
    cache = dict(settings.CACHES["default"])
    assert cache["BACKEND"] == "django_redis.cache.RedisCache"
    assert cache["OPTIONS"]["IGNORE_EXCEPTIONS"] is True
    settings.CACHES = {"default": {**cache, "LOCATION": server.url}}
    saved = {key: app.conf[key] for key in ("task_always_eager", "broker_url")}
    app.conf.task_always_eager = False
    app.conf.broker_url = server.url
    settings.CELERY_TASK_ALWAYS_EAGER = False
    forget_publisher_pools()
    try:
        yield server
    finally:
        server.stop()
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


def test_rate_limits_count_with_redis_and_fail_open_without(own_redis, site_data, settings):
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
            "login": [refused(client.post(login, wrong)) for _ in range(7)],
        }

    def refused(response) -> bool:
        """allauth answers a refused log-in with the form and this error (status 200)."""
        return TOO_MANY in response.content.decode()

    counted = statuses(Client())
    assert counted["api"] == [200, 200, 429]
    assert counted["ask"] == [200, 429]
    # allauth: 5 failed log-ins per email address in 5 minutes, then refused.
    assert counted["login"] == [False] * 5 + [True] * 2

    own_redis.stop()
    # Fail open (the settings' deliberate choice): nothing is counted, everything answers.
    assert statuses(Client()) == {"api": [200] * 3, "ask": [200] * 2, "login": [False] * 7}


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
    commands = [
        r.getMessage().rsplit(": ", 1)[1] for r in caplog.records if r.name == "topicsite.publish"
    ]
    assert len(commands) == 4 and all(c.startswith("manage.py tag --ids ") for c in commands)
    logged = {int(i) for c in commands for i in c.removeprefix("manage.py tag --ids ").split(",")}
    assert logged == set(Paper.objects.values_list("pk", flat=True))

    # Redis back (empty, as after a restart without persistence): the operator's command
    # queues the tagging; the broker holds it for the tag workers, who tag every paper.
    own_redis.start()
    call_command("tag", "--ids", commands[0].removeprefix("manage.py tag --ids "))
    assert "Queued tagging of 50 papers in 1 chunks" in capsys.readouterr().out
    (message,) = own_redis.client().lrange("tag", 0, -1)
    assert b"topics.tasks.tag_papers" in message
