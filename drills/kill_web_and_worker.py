"""Drill: two web servers and two Celery workers on one database and one Redis, under load;
one web server and one worker are SIGKILLed mid-run.

What runs (all real processes on this machine, as on several hosts):

- **two gunicorns** (``topicsite.wsgi``, local settings, DEBUG off), each its own process
  group, on the drill database (``test_<name>_drill`` of ``DATABASE_URL``, as the other drills)
  and the ``REDIS_URL`` Redis (cache and broker);
- **two ``celery -A topicsite worker``** processes (prefork, one pool process each) consuming
  every queue (``harvest``, ``embed``, ``tag``, ``default``), with a visibility timeout of
  ``common.VISIBILITY_TIMEOUT`` s;
- **an arXiv OAI-PMH endpoint**: a local HTTP server (``papers/tests/httpserver.py``) serving
  real recorded ``ListRecords`` records in pages, slowly (as arXiv's 3 s interval would), so
  the harvest spans the kill;
- **readers**: client threads, half with an API token (``/api/v1/me/follows/``,
  ``/api/v1/me/library/``), half with a session they got by logging in through the site's
  log-in page (the follow button and the library's save button, with the CSRF token), each
  following topics and saving papers while reading pages and the API through both servers.

The drill process queues one harvest (``papers.tasks.harvest``, as beat does); each stored
page queues embedding (``embed``), tagging (``tag``), near-duplicate detection and saved-search
matching (``default``) on the workers. Once the harvest has stored half its pages, the worker
running it and one web server are SIGKILLed together (whole process groups, as a host that
dies).

**Failover** is the client's, as a load balancer's: a reader sends to its own server; a
refused or reset connection (or a 502/503/504) marks that server down and the same request
goes to the other one. The writes are idempotent by design (one row per (user, topic) and
(user, paper): saving or following again answers with the existing row), which is what makes
retrying a write whose answer was lost safe: it may have committed on the dead server.

**PASS**: no request failed on both servers; every write a client saw succeed is in the
database exactly once, and no write it never saw succeed is; the harvested papers, their rule
assignments and those assignments' history rows equal an undisturbed in-process harvest of the
same pages; every harvested paper has one vector and is in the vector index file; the tasks
the killed worker held were finished by the surviving one, every queue and kombu's
unacknowledged set are empty and no harvest is left running within ``STUCK_SECONDS`` of the
kill; no harvest lock in Redis and no advisory lock in PostgreSQL is left held; the surviving
web server was never restarted. Emails are not part of this run (``kill_worker_digest.py``).

Run: ``DATABASE_URL=postgres://postgres@127.0.0.1:5432/<db> REDIS_URL=redis://127.0.0.1:6379/<n>
.venv/bin/python drills/kill_web_and_worker.py [--readers 6 --pages 6 --seconds-after 15]
[--smoke]``. ``--smoke`` (CI): 4 readers, 3 pages of 40 records, one gunicorn worker per
server, 6 s after the kill.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from drills import common

# Every task queued before the kill ends within this many seconds of it (the visibility
# timeout, then kombu's restore sweep on the surviving worker, then the work itself).
STUCK_SECONDS = 120
# Seconds the OAI server waits before each page (arXiv asks for 3 s between requests).
PAGE_DELAY = 1.0
RECORDS_PER_PAGE = 40
RULE_TOPICS = (
    ("Theory", "drill-hep-th", "", ("hep-th",)),
    ("Learning", "drill-learning", "learning OR neural", ()),
    ("Quantum", "drill-quantum", "quantum", ()),
)
PASSWORD = "drill-password-4-readers"
# --smoke, what CI and the pytest test run: about 40 s.
SMOKE = {"readers": 4, "pages": 3, "web_workers": 1, "seconds_after": 6, "writes_each": 8}
TASK_LINE = re.compile(r"Task (\S+)\[([0-9a-f-]{36})\] (received|succeeded|failed|retry)")


# --- the site's data ------------------------------------------------------------------------


def site_setup() -> None:
    """Categories, the reference topic page (topics and 30 papers to read and save) and three
    rule topics that place harvested papers."""
    from django.core.management import call_command

    from papers.models import Category
    from topics.services import topic_create

    call_command("load_categories", verbosity=0)
    call_command("import_reference_page", verbosity=0)
    for name, slug, query, categories in RULE_TOPICS:
        topic_create(
            name=name,
            slug=slug,
            rule_query=query,
            rule_categories=list(Category.objects.filter(code__in=categories)),
        )


def oai_handler(pages: list[bytes], delay: float):
    """A handler serving ``pages`` as one OAI list, each after ``delay`` seconds."""
    from papers.tests.httpserver import Reply, oai_token

    by_token = {None: 0} | {oai_token(body): index + 1 for index, body in enumerate(pages[:-1])}

    def handler(request):
        return Reply(body=pages[by_token[request.query.get("resumptionToken")]], delay=delay)

    return handler


def oai_params(url: str) -> dict:
    return {"base_url": url, "sets": ["cs"], "from": "2008-01-25"}


def harvest_state() -> dict:
    """What a harvest leaves that must not be lost or doubled: the papers (with versions and
    authorships counted), the rule assignments of the harvested papers and their history rows.
    Ids and timestamps are left out (they differ between runs)."""
    from django.db.models import Count

    from papers.models import Paper
    from topics.models import Assignment

    harvested = Paper.objects.filter(arxiv_id__gt="")
    rules = Assignment.objects.filter(paper__in=harvested, source="rule")
    return {
        "papers": sorted(
            harvested.annotate(
                versions_n=Count("versions", distinct=True),
                authorships_n=Count("authorships", distinct=True),
            ).values_list("arxiv_id", "latest_version", "title", "versions_n", "authorships_n"),
            key=str,
        ),
        "rule assignments": sorted(
            rules.values_list("paper__arxiv_id", "topic__slug", "source", "state", "score")
        ),
        "rule history rows": Assignment.history.filter(
            source="rule", paper_id__in=harvested.values("pk")
        ).count(),
    }


def reference_run(pages: list[bytes]) -> dict:
    """The undisturbed harvest of ``pages``, in this process (tasks eager, no embedding: the
    model is pointed at a missing directory so the reference costs no encoding), then the
    database emptied and set up again. Returns :func:`harvest_state`."""
    from django.core.management import call_command
    from django.test import override_settings

    from papers.harvest import harvest_run
    from papers.models import HarvestRun
    from papers.tests.httpserver import LocalHttpServer

    with LocalHttpServer(oai_handler(pages, 0.0)) as server, tempfile.TemporaryDirectory() as tmp:
        with override_settings(
            EMBEDDING_MODEL_PATH=str(Path(tmp) / "no-model"),
            EMBEDDING_INDEX_DIR=tmp,
            ARXIV_REQUEST_INTERVAL_MS=5,
        ):
            summary = harvest_run(kind="oai", params=oai_params(server.url))
    assert summary.status == HarvestRun.Status.SUCCEEDED, summary
    state = harvest_state()
    call_command("flush", interactive=False, verbosity=0)
    site_setup()
    return state


@dataclass
class Reader:
    """A signed-in reader: ``auth`` is ``token`` (API) or ``session`` (pages); ``writes`` the
    (kind, target) pairs it will make, ``acknowledged`` those a server answered with success."""

    number: int
    auth: str
    email: str
    user_id: int
    home: int  # index of the server it sends to first
    token: str = ""
    writes: list[tuple[str, object]] = field(default_factory=list)
    acknowledged: set[tuple[str, object]] = field(default_factory=set)


def readers_create(count: int, writes_each: int) -> list[Reader]:
    """``count`` users with verified addresses (half with an API token), each given a share of
    topics to follow and papers to save."""
    from allauth.account.models import EmailAddress
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import PBKDF2PasswordHasher

    from api.services import token_create
    from papers.models import Paper
    from topics.models import Topic

    topics = list(
        Topic.objects.active().exclude(slug__startswith="drill-").values_list("slug", flat=True)
    )
    papers = list(Paper.objects.filter(arxiv_id=None).values_list("pk", flat=True))
    # PBKDF2 (what the servers check) with few iterations: the log-in upgrades it, as it would.
    password = PBKDF2PasswordHasher().encode(PASSWORD, "drillsalt", iterations=1000)
    readers = []
    for number in range(count):
        email = f"reader{number}@drill.example"
        user = get_user_model().objects.create(username=f"reader{number}", email=email)
        user.password = password
        user.save(update_fields=["password"])
        EmailAddress.objects.create(user=user, email=email, verified=True, primary=True)
        reader = Reader(number, "token" if number % 2 == 0 else "session", email, user.pk, 0)
        reader.home = number % 2 if count > 1 else 0
        if reader.auth == "token":
            reader.token = token_create(user=user, name="drill").key
        for i in range(writes_each):
            if i % 2 == 0:
                reader.writes.append(("follow", topics[(number * 7 + i) % len(topics)]))
            else:
                reader.writes.append(("save", papers[(number * 5 + i) % len(papers)]))
        reader.writes = list(dict.fromkeys(reader.writes))
        readers.append(reader)
    return readers


def written_rows(readers: list[Reader]) -> dict[int, list[tuple[str, object]]]:
    """Per user id, every follow of a topic and every saved paper in the database (a pair
    twice if it were stored twice)."""
    from follows.models import Follow, LibraryItem

    ids = [reader.user_id for reader in readers]
    rows: dict[int, list] = {user_id: [] for user_id in ids}
    for user_id, slug in Follow.objects.filter(user_id__in=ids, kind="topic").values_list(
        "user_id", "topic__slug"
    ):
        rows[user_id].append(("follow", slug))
    for user_id, paper_id in LibraryItem.objects.filter(user_id__in=ids).values_list(
        "user_id", "paper_id"
    ):
        rows[user_id].append(("save", paper_id))
    return rows


# --- the clients: a load balancer's failover in each -----------------------------------------


class Balancer:
    """Which servers are up, as a load balancer's health checks would know: a server is marked
    down at its first refused or reset connection (or a 502/503/504) and never tried again."""

    def __init__(self, bases: list[str]):
        self.bases = bases
        self.down: set[int] = set()
        self.lock = threading.Lock()

    def order(self, home: int) -> list[int]:
        with self.lock:
            first = [home] if home not in self.down else []
            return first + [i for i in range(len(self.bases)) if i != home and i not in self.down]

    def mark_down(self, index: int) -> None:
        with self.lock:
            self.down.add(index)


@dataclass
class Outcome:
    at: float  # time.monotonic() when the answer (or the last failure) came
    reader: int
    path: str
    server: int | None  # the server that answered, None when none did
    status: int | None
    failed_attempts: list[tuple[int, str]]  # (server, error) before the answer
    write: tuple[str, object] | None = None


def client_session(reader: Reader, balancer: Balancer):
    """A ``requests.Session`` for ``reader``: its token header, or a session cookie got by
    logging in through the site's log-in form (on its home server, the other if that fails)."""
    import requests

    http = requests.Session()
    if reader.auth == "token":
        http.headers["Authorization"] = f"Bearer {reader.token}"
        return http
    for index in balancer.order(reader.home):
        base = balancer.bases[index]
        http.get(f"{base}/accounts/login/", timeout=30)
        answer = http.post(
            f"{base}/accounts/login/",
            data={
                "login": reader.email,
                "password": PASSWORD,
                "csrfmiddlewaretoken": http.cookies["csrftoken"],
            },
            allow_redirects=False,
            timeout=30,
        )
        if answer.status_code == 302 and "sessionid" in http.cookies:
            return http
    raise SystemExit(f"reader {reader.number} could not log in: {answer.status_code}")


def write_request(reader: Reader, kind: str, target) -> tuple[str, dict, dict]:
    """(path, form or JSON body, extra headers) of one write, through the API with a token or
    through the site's own buttons with a session (JSON answers asked for)."""
    if reader.auth == "token":
        if kind == "follow":
            return "/api/v1/me/follows/", {"json": {"topic": target}}, {}
        return "/api/v1/me/library/", {"json": {"paper": f"local:{target}"}}, {}
    headers = {"Accept": "application/json"}
    if kind == "follow":
        return f"/follows/topics/{target}/", {"data": {"action": "follow"}}, headers
    return f"/library/papers/{target}/save/", {"data": {"action": "save"}}, headers


def send(http, balancer: Balancer, reader: Reader, method: str, path: str, **kwargs) -> Outcome:
    """One request with failover: to the reader's home server, on a connection failure (or a
    502/503/504) to the next one up. ``Outcome.server`` is None when none answered."""
    import requests

    failed: list[tuple[int, str]] = []
    for index in balancer.order(reader.home):
        headers = dict(kwargs.pop("headers", {}))
        if method == "POST" and "csrftoken" in http.cookies:
            headers["X-CSRFToken"] = http.cookies["csrftoken"]
        try:
            answer = http.request(
                method, balancer.bases[index] + path, headers=headers, timeout=30, **kwargs
            )
        except (requests.ConnectionError, requests.Timeout) as error:
            failed.append((index, type(error).__name__))
            balancer.mark_down(index)
            continue
        if answer.status_code in (502, 503, 504):
            failed.append((index, str(answer.status_code)))
            balancer.mark_down(index)
            continue
        return Outcome(time.monotonic(), reader.number, path, index, answer.status_code, failed)
    return Outcome(time.monotonic(), reader.number, path, None, None, failed)


def read_paths(reader: Reader, paper_path: str) -> list[str]:
    common_paths = ["/topics/llm-agent-training/", "/topics/", paper_path, "/api/v1/papers/"]
    if reader.auth == "token":
        return common_paths + ["/api/v1/me/library/", "/api/v1/me/follows/"]
    return common_paths + ["/library/", "/feed/"]


def client_loop(reader, http, balancer, paper_path, write_every, stop, outcomes, lock) -> None:
    """Read without pause; one write of ``reader.writes`` every ``write_every`` seconds."""
    paths = read_paths(reader, paper_path)
    started = time.monotonic()
    writes = list(reader.writes)
    i = reader.number
    while not stop.is_set() or writes:
        done = len(reader.writes) - len(writes)
        if writes and time.monotonic() - started >= write_every * done:
            kind, target = writes.pop(0)
            path, body, headers = write_request(reader, kind, target)
            outcome = send(http, balancer, reader, "POST", path, headers=headers, **body)
            outcome.write = (kind, target)
            if outcome.status in (200, 201):
                reader.acknowledged.add((kind, target))
        else:
            outcome = send(http, balancer, reader, "GET", paths[i % len(paths)])
            i += 1
        with lock:
            outcomes.append(outcome)
        if outcome.server is None and stop.is_set():
            break  # nothing answers any more: the checks report it
        time.sleep(0.02)


# --- workers and the kill --------------------------------------------------------------------


def task_events(worker: common.Worker) -> dict[str, dict[str, str]]:
    """Per task id in the worker's log: ``{"name": ..., "<event>": "1"}`` for each of received,
    succeeded, failed, retry."""
    events: dict[str, dict[str, str]] = {}
    for name, task_id, event in TASK_LINE.findall(worker.log()):
        events.setdefault(task_id, {"name": name})[event] = "1"
    return events


def held_tasks(worker_names: list[str]) -> dict[str, dict[str, str]]:
    """Per worker name, the tasks it holds now, ``{task id: task name}``: running or reserved,
    as the workers themselves answer Celery's remote control (``inspect active`` and
    ``reserved``, 2 s to answer)."""
    import socket

    from topicsite.celery import app

    hosts = {f"{name}@{socket.gethostname()}": name for name in worker_names}
    inspect = app.control.inspect(destination=list(hosts), timeout=2.0)
    held: dict[str, dict[str, str]] = {name: {} for name in worker_names}
    for answer in (inspect.active() or {}, inspect.reserved() or {}):
        for host, tasks in answer.items():
            for task in tasks:
                held[hosts[host]][task["id"]] = task["name"]
    return held


def queues_empty() -> bool:
    redis = common.broker_redis()
    return not redis.hlen("unacked") and not any(
        redis.llen(queue) for queue in common.QUEUES.split(",")
    )


def harvest_done() -> bool:
    from papers.models import HarvestRun

    runs = list(HarvestRun.objects.values_list("status", flat=True))
    return runs == [HarvestRun.Status.SUCCEEDED]


def leftover_locks() -> dict:
    """Locks a dead process could have left: the harvest lock keys in the cache, advisory locks
    in PostgreSQL (the index writer's) and any backend waiting for a lock."""
    from django.core.cache import cache
    from django.db import connection

    from papers.models import HarvestRun

    keys = [f"papers:harvest-lock:{kind}" for kind in HarvestRun.Kind.values]
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")
        advisory = cursor.fetchone()[0]
    return {
        "harvest lock keys": [key for key in keys if cache.get(key) is not None],
        "advisory locks": advisory,
        "backends waiting for a lock": len(common.backends_waiting_for_a_lock(0)),
    }


def index_missing(index_dir: Path) -> int | None:
    """How many stored vectors are not in the index file under ``index_dir`` (None: no file)."""
    from django.test import override_settings
    from usearch.index import Index

    from papers.embeddings.index import index_path
    from papers.models import PaperEmbedding

    rows = list(PaperEmbedding.objects.values_list("model", "paper_id"))
    if not rows:
        return None
    with override_settings(EMBEDDING_INDEX_DIR=index_dir):
        path = index_path(rows[0][0])
    if not path.exists():
        return None
    index = Index.restore(str(path), view=True)
    return sum(1 for _, paper_id in rows if not index.contains(paper_id))


def gunicorn_kill(process) -> None:
    """SIGKILL a gunicorn's whole process group (master and workers), as a dead host."""
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


def gunicorn_stop(process) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


# --- the drill -------------------------------------------------------------------------------


def run(
    *,
    readers: int = 6,
    pages: int = 6,
    web_workers: int = 2,
    seconds_after: float = 15,
    writes_each: int = 12,
    log_dir: Path = common.LOG_DIR,
) -> tuple[bool, dict]:
    """The drill on the current (emptied) database; returns (passed, figures)."""
    from django.core.cache import cache

    from drills.restart_postgres import gunicorn_pids
    from papers.models import HarvestRun, Paper, PaperEmbedding
    from papers.sources.recorded import DEFAULT_RECORDED_DIR
    from papers.tasks import harvest
    from papers.tests.httpserver import LocalHttpServer, oai_pages

    started = time.monotonic()
    big_page = DEFAULT_RECORDED_DIR / "oai" / "listrecords_arXivRaw_token_496549-46001.xml"
    oai = oai_pages(big_page, [RECORDS_PER_PAGE] * pages)
    site_setup()
    expected = reference_run(oai)
    people = readers_create(readers, writes_each)
    paper_path = Paper.objects.filter(arxiv_id=None).order_by("pk").first().get_absolute_url()
    cache.clear()  # the drill's Redis database: no lock or page of an earlier run
    common.use_broker()

    index_dir = Path(tempfile.mkdtemp(prefix="topicsite-drill-vectors-"))
    server = LocalHttpServer(oai_handler(oai, PAGE_DELAY)).start()
    env = common.worker_env(
        DJANGO_SETTINGS_MODULE="topicsite.settings.local",
        DJANGO_DEBUG="false",
        EMBEDDING_INDEX_DIR=str(index_dir),
        # Each of the four processes that may encode shares two cores with everything else.
        EMBEDDING_THREADS="1",
        ARXIV_REQUEST_INTERVAL_MS="5",
        ARXIV_HTTP_BACKOFF_SECONDS="0",
        # The load comes from one address: the API's per-address limits must not answer it.
        API_THROTTLE_ANON="1000000/min",
        API_THROTTLE_USER="1000000/min",
        API_THROTTLE_WRITE="1000000/min",
    )
    webs: list = []
    workers: list[common.Worker] = []
    stop = threading.Event()
    threads: list[threading.Thread] = []
    outcomes: list[Outcome] = []
    try:
        for _ in range(2):
            webs.append(
                common.gunicorn_start(env=env, workers=web_workers, first_path="/api/v1/topics/")
            )
        workers = [common.Worker(f"scale-worker-{n}", env, log_dir) for n in (1, 2)]
        for worker in workers:
            worker.wait_ready()
        balancer = Balancer([base for _, base in webs])
        survivor_pids = gunicorn_pids(webs[1][0].pid)
        sessions = {reader.number: client_session(reader, balancer) for reader in people}

        lock = threading.Lock()
        # Writes spread over the run: about as long as the harvest and the time after the kill.
        write_every = (pages * PAGE_DELAY + 4 + seconds_after) / writes_each
        for reader in people:
            thread = threading.Thread(
                target=client_loop,
                args=(reader, sessions[reader.number], balancer, paper_path, write_every)
                + (stop, outcomes, lock),
            )
            thread.start()
            threads.append(thread)
        load_began = time.monotonic()
        harvest_task = harvest.delay("oai", oai_params(server.url))

        # The kill: once the harvest has stored half its pages (one at least), its worker and
        # web server 0 together.
        def harvest_mid_run():
            run_ = HarvestRun.objects.first()
            return bool(run_ and run_.pages_done >= max(1, pages // 2) and run_.status == "running")

        common.wait_until(harvest_mid_run, "the harvest stores its first page", 120, workers[0])
        held = held_tasks(["scale-worker-1", "scale-worker-2"])
        victim_name = next((n for n, tasks in held.items() if harvest_task.id in tasks), None)
        if victim_name is None:
            raise AssertionError(f"no worker says it runs the harvest task: {held}")
        victim = workers[int(victim_name[-1]) - 1]
        survivor = workers[1 - workers.index(victim)]
        held_at_kill = held[victim_name]
        pages_at_kill = HarvestRun.objects.first().pages_done
        gunicorn_kill(webs[0][0])
        victim.kill()
        killed_at = time.monotonic()

        time.sleep(seconds_after)
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
        load_ended = time.monotonic()

        # A task runs with its message unacknowledged (acks_late): empty queues and an empty
        # unacknowledged set mean nothing is waiting and nothing is running.
        def drained():
            return harvest_done() and queues_empty()

        try:
            common.wait_until(drained, "every task finished", STUCK_SECONDS, survivor)
            drained_after = round(time.monotonic() - killed_at, 1)
        except AssertionError:
            drained_after = None
        survivor_events = task_events(survivor)
        # The workers' settings log no per-task success lines (local settings keep
        # celery.app.trace at WARNING): a held task counts as finished when the survivor
        # received it and, the queues drained, nothing is left unacknowledged.
        held_finished = {
            task_id: drained_after is not None and "received" in survivor_events.get(task_id, {})
            for task_id in held_at_kill
        }
        survivor_web_unchanged = (
            webs[1][0].poll() is None and gunicorn_pids(webs[1][0].pid) == survivor_pids
        )
        locks = leftover_locks()
        end = harvest_state()
        rows = written_rows(people)
        harvested = Paper.objects.filter(arxiv_id__gt="")
        vectors = PaperEmbedding.objects.filter(paper__in=harvested).count()
        missing_from_index = index_missing(index_dir)
        runs = list(HarvestRun.objects.values_list("status", "attempt"))
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
        for process, _ in webs:
            gunicorn_stop(process)
        for worker in workers:
            worker.stop()
        server.close()
        shutil.rmtree(index_dir, ignore_errors=True)

    # --- figures and checks ---
    before = [o for o in outcomes if o.at < killed_at]
    window = [o for o in outcomes if killed_at <= o.at < killed_at + 1]
    after = [o for o in outcomes if o.at >= killed_at]
    unanswered = [o for o in outcomes if o.server is None]
    failovers = [o for o in outcomes if o.failed_attempts and o.server is not None]
    bad_status = sorted(
        {
            (o.status, o.path)
            for o in outcomes
            if o.server is not None and o.status not in (200, 201)
        }
    )
    # Recovery: per reader whose server died, from the kill to its first answer by the other.
    recovery = [
        min((o.at for o in after if o.reader == reader.number and o.server == 1), default=None)
        for reader in people
        if reader.home == 0
    ]
    recovery_seconds = (
        round(max(t - killed_at for t in recovery), 3)
        if recovery and None not in recovery
        else None
    )
    retried_writes = [o for o in failovers if o.write]
    write_checks = {
        reader.number: sorted(rows[reader.user_id], key=str) == sorted(reader.acknowledged, key=str)
        for reader in people
    }
    writes_acknowledged = sum(len(reader.acknowledged) for reader in people)
    writes_planned = sum(len(reader.writes) for reader in people)
    harvested_n = len(end["papers"])
    checks = {
        "every request answered by one server or the other": not unanswered,
        "every answer 200/201": not bad_status,
        "clients failed over to the surviving server": recovery_seconds is not None,
        "acknowledged writes stored exactly once, nothing else": all(write_checks.values())
        and writes_acknowledged == writes_planned,
        "harvest equals the undisturbed run": end == expected,
        "every harvested paper has a vector, in the index file": vectors == harvested_n
        and missing_from_index == 0,
        "tasks the killed worker held finished on the survivor": bool(held_finished)
        and all(held_finished.values()),
        f"nothing stuck: all done within {STUCK_SECONDS} s of the kill": drained_after is not None,
        "no lock left held": locks
        == {"harvest lock keys": [], "advisory locks": 0, "backends waiting for a lock": 0},
        "surviving web server never restarted": survivor_web_unchanged,
    }
    figures = {
        "readers (token / session) / gunicorn workers per server": (
            f"{sum(r.auth == 'token' for r in people)} / "
            f"{sum(r.auth == 'session' for r in people)} / {web_workers}"
        ),
        "requests in all / before the kill / first second after / after": (
            f"{len(outcomes)} / {len(before)} / {len(window)} / {len(after)}"
        ),
        "load seconds (kill at)": (
            f"{round(load_ended - load_began, 1)} ({round(killed_at - load_began, 1)})"
        ),
        "attempts refused or reset by the killed server (then sent to the other)": sum(
            len(o.failed_attempts) for o in outcomes
        ),
        "requests answered by neither server": len(unanswered),
        "answers other than 200/201": bad_status or "none",
        "recovery: kill to first answer by the other server, worst reader, s": recovery_seconds,
        "writes planned / acknowledged / stored": (
            f"{writes_planned} / {writes_acknowledged} / {sum(len(r) for r in rows.values())}"
        ),
        "writes retried on the other server (answer lost)": len(retried_writes),
        "harvest pages / papers / stored when killed (pages)": (
            f"{pages} / {harvested_n} / {pages_at_kill}"
        ),
        "harvest runs (status, attempt)": runs,
        "rule assignments expected / at the end": (
            f"{len(expected['rule assignments'])} / {len(end['rule assignments'])}"
        ),
        "rule history rows expected / at the end": (
            f"{expected['rule history rows']} / {end['rule history rows']}"
        ),
        "vectors / missing from the index file": f"{vectors} / {missing_from_index}",
        "tasks held by the killed worker": sorted(set(held_at_kill.values())),
        "held tasks finished by the survivor": (
            f"{sum(held_finished.values())} / {len(held_finished)}"
        ),
        "all tasks done, s after the kill": drained_after,
        "visibility timeout, s": common.VISIBILITY_TIMEOUT,
        "locks left": locks,
        "checks": checks,
        "drill seconds": round(time.monotonic() - started, 1),
    }
    return all(checks.values()), figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--readers", type=int, default=6)
    parser.add_argument("--pages", type=int, default=6, help=f"OAI pages of {RECORDS_PER_PAGE}")
    parser.add_argument("--web-workers", type=int, default=2, help="gunicorn workers a server")
    parser.add_argument("--seconds-after", type=float, default=15)
    parser.add_argument("--writes", type=int, default=12, help="writes per reader")
    parser.add_argument("--smoke", action="store_true", help="a short run (CI)")
    args = parser.parse_args()
    size = {
        "readers": args.readers,
        "pages": args.pages,
        "web_workers": args.web_workers,
        "seconds_after": args.seconds_after,
        "writes_each": args.writes,
    }
    return common.main("kill_web_and_worker", lambda: run(**(SMOKE if args.smoke else size)))


if __name__ == "__main__":
    sys.exit(main())
