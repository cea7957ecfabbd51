"""What the fault drills share: Django set up on a drill database, real ``celery -A topicsite
worker`` processes that can be SIGKILLed, and a second PostgreSQL connection that holds a lock
so that a worker stops at a known point in the middle of a task.

Scripts run as ``.venv/bin/python drills/<drill>.py`` with ``DATABASE_URL`` and ``REDIS_URL``
set; the drill works in its own database ``test_<name>_drill`` (created and migrated on first
use, kept afterwards, emptied by each drill), never in the database ``DATABASE_URL`` names. The
pytest tests (``topicsite/tests/test_faults_workers.py``) call the same drill functions on
pytest's test database.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOG_DIR = ROOT / "var" / "drills"
# Seconds an unacknowledged message waits before kombu gives it to another worker (the drill's
# workers only; production keeps CELERY_VISIBILITY_TIMEOUT's default of an hour).
VISIBILITY_TIMEOUT = 3
QUEUES = "harvest,embed,tag,default"
# Where kombu's Redis transport keeps messages delivered and not yet acknowledged.
KOMBU_UNACKED_KEYS = ("unacked", "unacked_index", "unacked_mutex")


def django_setup() -> None:
    """Set Django up with the test settings on the drill database (created with migrations if
    missing). Exits with a message when ``DATABASE_URL`` or ``REDIS_URL`` is unset."""
    missing = [name for name in ("DATABASE_URL", "REDIS_URL") if not os.environ.get(name)]
    if missing:
        sys.exit(f"Set {' and '.join(missing)} (the drill uses test_<name>_drill and that Redis).")
    sys.path.insert(0, str(ROOT))
    os.environ["DJANGO_SETTINGS_MODULE"] = "topicsite.settings.test"
    import django

    django.setup()
    from django.db import connection

    name = connection.settings_dict["NAME"]
    connection.settings_dict["TEST"]["NAME"] = f"test_{name}_drill"
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=True)


def database_url() -> str:
    """The URL of the database Django is using now (the drill or pytest's test database)."""
    from django.db import connection

    db = connection.settings_dict
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def worker_env(**extra: str) -> dict[str, str]:
    """The environment of a drill worker: this database and Redis, a short visibility timeout."""
    from django.conf import settings

    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "topicsite.settings.test",
        "DATABASE_URL": database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT),
        # A busy machine (a test run beside the drill) must not open the worker's Redis
        # breaker, which would make its locks fail closed: the drills are about killed
        # workers, not a slow Redis (drills/redis_hang.py).
        "REDIS_SOCKET_TIMEOUT_MS": "5000",
        "PYTHONPATH": str(ROOT),
        **extra,
    }


def use_broker() -> None:
    """Send tasks from this process to Redis (not eagerly) and empty the queues and the
    unacknowledged set, so that nothing from an earlier run is delivered."""
    from django.conf import settings

    from topicsite.celery import app

    app.conf.task_always_eager = False
    app.conf.broker_url = settings.REDIS_URL
    app.control.purge()
    broker_redis().delete(*KOMBU_UNACKED_KEYS)


def broker_redis():
    import redis
    from django.conf import settings

    return redis.Redis.from_url(settings.REDIS_URL)


class Worker:
    """``celery -A topicsite worker`` (prefork, one pool process) in its own process group."""

    def __init__(self, name: str, env: dict[str, str], log_dir: Path = LOG_DIR):
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = log_dir / f"{name}.log"
        self.log_path.write_bytes(b"")
        self._log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "topicsite", "worker", "--queues", QUEUES]
            + ["--pool", "prefork", "--concurrency", "1", "--without-gossip", "--without-mingle"]
            + ["--without-heartbeat", "--hostname", f"{name}@%h", "--loglevel", "INFO"],
            cwd=ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, seconds: float = 90) -> None:
        wait_until(lambda: " ready." in self.log(), "the worker is ready", seconds, self)

    def kill(self) -> None:
        """SIGKILL the whole worker, main process and pool, as a crashed host would."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)
        self._log.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)
        self._log.close()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def gunicorn_start(*, env: dict[str, str], workers: int, first_path: str):
    """Start ``gunicorn topicsite.wsgi`` with ``workers`` on a free loopback port in its own
    session (so a drill can signal the whole group), wait until ``first_path`` answers (30 s at
    most), and return ``(process, base_url)``. Raises ``SystemExit`` when it never answers."""
    import http.client
    import urllib.request

    port = free_port()
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "topicsite.wsgi", "--workers"]
        + [str(workers), "--bind", f"127.0.0.1:{port}", "--log-level", "warning"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(base + first_path, timeout=30)
            return process, base
        except (OSError, http.client.HTTPException):
            time.sleep(0.1)
    raise SystemExit("gunicorn did not answer")


def wait_until(condition, what: str, seconds: float = 90, worker: Worker | None = None) -> float:
    """Poll ``condition`` every 0.1 s; return the seconds waited, or raise AssertionError naming
    ``what`` (with the end of the worker's log) after ``seconds``."""
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        if condition():
            return time.monotonic() - start
        time.sleep(0.1)
    tail = f"\nWorker log:\n{worker.log()[-3000:]}" if worker else ""
    raise AssertionError(f"{what}: not within {seconds} s.{tail}")


class LockHolder:
    """A second connection to the database, in an open transaction, that holds whatever lock
    its statements take until :meth:`release` (a rollback: it leaves nothing behind)."""

    def __init__(self):
        import psycopg

        self.connection = psycopg.connect(database_url())
        self.pid = self.connection.info.backend_pid

    def hold(self, sql: str, params: tuple = ()) -> None:
        self.connection.execute(sql, params)

    def release(self) -> None:
        """Roll back and close; a second call does nothing."""
        if self.connection.closed:
            return
        self.connection.rollback()
        self.connection.close()

    def wait_for_a_blocked_backend(self, what: str, seconds: float, worker) -> None:
        """:func:`wait_until` a backend waits for this holder's lock; on failure (a worker that
        never got there) the lock is released first, so the test's teardown (which empties
        the tables) is not left waiting for it."""
        try:
            wait_until(lambda: backends_waiting_for_a_lock(self.pid), what, seconds, worker)
        except BaseException:
            self.release()
            raise


def backends_waiting_for_a_lock(exclude_pid: int) -> list[int]:
    """Pids of this database's backends waiting for a lock (a blocked worker's connection)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND pid <> %s AND pid <> pg_backend_pid()",
            [exclude_pid],
        )
        return [row[0] for row in cursor.fetchall()]


def backend_alive(pid: int) -> bool:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid])
        return cursor.fetchone() is not None


def report(name: str, passed: bool, figures: dict) -> None:
    """Print the drill's verdict and figures, one per line."""
    print(f"{name}: {'PASS' if passed else 'FAIL'}")
    for key, value in figures.items():
        print(f"  {key}: {value}")


def main(name: str, run) -> int:
    """Run a drill on an emptied database: Django set up, every table flushed, then
    ``run() -> (passed, figures)``; prints :func:`report` and returns the exit status (0 when
    it passed)."""
    django_setup()
    from django.core.management import call_command

    call_command("flush", interactive=False, verbosity=0)
    passed, figures = run()
    report(name, passed, figures)
    return 0 if passed else 1
