"""Drill: PostgreSQL restarted under load; the site recovers without restarting gunicorn.

The shared PostgreSQL on 5432 is never touched: the drill makes its own cluster (``initdb`` in a
temporary directory, as the ``postgres`` user when run as root) on a free port, migrates a
database there and serves it with gunicorn (``topicsite.settings.local``, DEBUG off, no Redis:
local-memory cache, so the database is read on every API request). Client threads request
``/api/v1/papers/`` and ``/api/v1/topics/`` without pause; after a quiet spell the cluster is
restarted with ``pg_ctl restart -m fast``. Django's ``CONN_MAX_AGE`` keeps connections open and
``CONN_HEALTH_CHECKS`` finds the dead ones at the start of the next request and reconnects.

PASS: no error before the restart, no error from one second after ``pg_ctl`` reported the
server up again, requests answered after it, and the same gunicorn processes throughout.

Run: ``.venv/bin/python drills/restart_postgres.py [--clients 4] [--seconds-after 10]
[--smoke]`` (needs PostgreSQL 15's server binaries under /usr/lib/postgresql/15/bin; nothing
else). ``--smoke`` (what CI runs): 2 client threads, 1 gunicorn worker, 2 s before the restart
and 3 s after; the same checks.
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from drills.common import ROOT, free_port, gunicorn_start  # noqa: E402

PG_BIN = Path(os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin"))
URLS = ["/api/v1/papers/", "/api/v1/topics/"]


class Cluster:
    """A PostgreSQL cluster of our own in a temporary directory, on ``port``."""

    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="topicsite-pg-drill-"))
        self.data = self.dir / "data"
        self.port = free_port()
        self.as_postgres = os.geteuid() == 0
        if self.as_postgres:
            shutil.chown(self.dir, "postgres", "postgres")

    def run(self, *args: str) -> str:
        command = [str(arg) for arg in args]
        if self.as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(command, check=True, capture_output=True, text=True).stdout

    def init_and_start(self) -> None:
        self.run(PG_BIN / "initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "-E", "UTF8")
        self.pg_ctl("start")
        self.run(PG_BIN / "createdb", "-h", "127.0.0.1", "-p", self.port, "-U", "postgres", "site")

    def pg_ctl(self, action: str, *extra: str) -> None:
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1"
        self.run(
            PG_BIN / "pg_ctl", "-D", self.data, "-o", options, "-l", self.dir / "log", "-w",
            action, *extra,
        )  # fmt: skip

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/site"

    def destroy(self) -> None:
        try:
            self.pg_ctl("stop", "-m", "immediate")
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)


def gunicorn_pids(master: int) -> set[int]:
    """The gunicorn master and its workers (children)."""
    pids = {master}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == master:
                pids.add(int(entry.name))
    return pids


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seconds-before", type=float, default=5)
    parser.add_argument("--seconds-after", type=float, default=10)
    parser.add_argument("--smoke", action="store_true", help="a short run (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.clients, args.workers, args.seconds_before, args.seconds_after = 2, 1, 2, 3

    cluster = Cluster()
    gunicorn = None
    try:
        cluster.init_and_start()
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in ("REDIS_URL", "DATABASE_URL", "DJANGO_SETTINGS_MODULE")
        }
        env |= {
            "DATABASE_URL": cluster.url,
            "DJANGO_SETTINGS_MODULE": "topicsite.settings.local",
            "DJANGO_DEBUG": "false",
            # The load comes from one address: the API's per-address limit must not answer it.
            "API_THROTTLE_ANON": "1000000/min",
        }
        started = time.monotonic()
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--verbosity", "0"],
            cwd=ROOT, env=env, check=True,
        )  # fmt: skip
        migrate_seconds = time.monotonic() - started
        gunicorn, base = gunicorn_start(env=env, workers=args.workers, first_path=URLS[0])
        pids_before = gunicorn_pids(gunicorn.pid)

        results: list[tuple[float, bool]] = []
        outcomes: dict[str, int] = {}
        lock = threading.Lock()
        stop = threading.Event()

        def client(number: int) -> None:
            i = number
            while not stop.is_set():
                url = base + URLS[i % len(URLS)]
                i += 1
                try:
                    with urllib.request.urlopen(url, timeout=10) as response:
                        outcome = str(response.status)
                except urllib.error.HTTPError as error:
                    outcome = str(error.code)
                except (OSError, http.client.HTTPException) as error:  # refused, reset
                    outcome = type(error).__name__
                with lock:
                    results.append((time.monotonic(), outcome == "200"))
                    outcomes[outcome] = outcomes.get(outcome, 0) + 1

        threads = [threading.Thread(target=client, args=(n,)) for n in range(args.clients)]
        for thread in threads:
            thread.start()
        time.sleep(args.seconds_before)
        restart_began = time.monotonic()
        cluster.pg_ctl("restart", "-m", "fast")
        restart_done = time.monotonic()
        time.sleep(1 + args.seconds_after)
        stop.set()
        for thread in threads:
            thread.join()
        pids_after = gunicorn_pids(gunicorn.pid)

        before = [ok for t, ok in results if t < restart_began]
        during = [ok for t, ok in results if restart_began <= t < restart_done + 1]
        after = [ok for t, ok in results if t >= restart_done + 1]
        first_ok_after = min((t for t, ok in results if ok and t >= restart_done), default=None)
        passed = (
            before
            and all(before)
            and after
            and all(after)
            and pids_before == pids_after
            and gunicorn.poll() is None
        )
        print(f"restart_postgres: {'PASS' if passed else 'FAIL'}")
        figures = {
            "own cluster port / gunicorn workers / client threads": (
                f"{cluster.port} / {args.workers} / {args.clients}"
            ),
            "migrate seconds": round(migrate_seconds, 1),
            "before restart: requests / errors": f"{len(before)} / {before.count(False)}",
            "pg_ctl restart -m fast took, s": round(restart_done - restart_began, 2),
            "during restart (+1 s): requests / errors": f"{len(during)} / {during.count(False)}",
            "after: requests / errors": f"{len(after)} / {after.count(False)}",
            "first success after the server was up, s": (
                round(first_ok_after - restart_done, 2) if first_ok_after else None
            ),
            "gunicorn processes unchanged (not restarted)": pids_before == pids_after,
            "answers (status or error) in all": dict(sorted(outcomes.items())),
        }
        for key, value in figures.items():
            print(f"  {key}: {value}")
        return 0 if passed else 1
    finally:
        if gunicorn is not None and gunicorn.poll() is None:
            os.killpg(gunicorn.pid, signal.SIGTERM)
            gunicorn.wait(timeout=30)
        cluster.destroy()


if __name__ == "__main__":
    sys.exit(main())
