"""Fixtures for tests that start ``manage.py`` in a subprocess.

Settings are read once per process, so checking what they make of an environment means starting
a fresh one. The pytest process itself carries the test settings' ``DATABASE_URL``/``REDIS_URL``;
every child starts from an environment without them (the embedded default) unless a test says
otherwise.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

BASE_DIR = Path(__file__).resolve().parent.parent.parent

# Variables the settings read; a child starts without any of them unless a test sets them.
_SETTINGS_PREFIXES = ("DJANGO_", "ARXIV_", "CELERY_", "DATABASE_")
# PGOPTIONS: libpq's, which the settings fold into the connections' options.
_SETTINGS_NAMES = {"REDIS_URL", "PGOPTIONS"}


def manage_env(**overrides: str) -> dict[str, str]:
    """This process's environment less every settings variable, plus ``overrides``.

    ``DJANGO_SETTINGS_MODULE`` defaults to ``topicsite.settings.local`` (what ``manage.py`` uses).
    """
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in _SETTINGS_NAMES and not name.startswith(_SETTINGS_PREFIXES)
    }
    env["DJANGO_SETTINGS_MODULE"] = "topicsite.settings.local"
    env.update(overrides)
    return env


@pytest.fixture(scope="session")
def run_manage():
    """Run ``manage.py ARGS`` from the project root in a subprocess.

    Call as ``run_manage("check", env={"DJANGO_DEBUG": "maybe"}, timeout=60)``; ``env`` holds
    overrides for :func:`manage_env`. Returns the ``subprocess.CompletedProcess`` with text
    ``stdout``/``stderr``; never raises on a non-zero exit (tests assert on it). Raises
    ``subprocess.TimeoutExpired`` past ``timeout`` seconds.
    """

    def run(*args: str, env: dict[str, str] | None = None, timeout: float = 120):
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=BASE_DIR,
            env=manage_env(**(env or {})),
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    return run
