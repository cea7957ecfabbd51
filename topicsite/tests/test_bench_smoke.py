"""Every benchmark in ``bench/`` has a ``--smoke`` size and ``.ci/run`` runs it, so a new
benchmark cannot be added outside CI; and the smoke databases are never the one
``DATABASE_URL`` names (``bench/smoke.py``)."""

import re
import sys

import pytest

from .conftest import BASE_DIR

BENCH = BASE_DIR / "bench"
# Modules of bench/ that are helpers, not benchmarks (bare_django: the urlconf of
# bench_scale and bench_load, which CI runs at smoke size).
HELPERS = {"smoke", "bare_django"}


def benchmarks() -> list[str]:
    return sorted(path.stem for path in BENCH.glob("*.py") if path.stem not in HELPERS)


def test_every_benchmark_takes_smoke():
    assert benchmarks()
    for name in benchmarks():
        assert '"--smoke"' in (BENCH / f"{name}.py").read_text(encoding="utf-8"), name


def test_ci_runs_every_benchmark_at_smoke_size():
    ci = (BASE_DIR / ".ci" / "run").read_text(encoding="utf-8")
    loop = re.search(r"for script in (.*?); do\n(.*?)\ndone", ci, re.S)
    assert loop, "no loop over the benchmarks in .ci/run"
    listed = loop.group(1).replace("\\\n", " ").split()
    assert sorted(listed) == benchmarks()
    assert '"bench/$script.py" --smoke' in loop.group(2)


@pytest.fixture
def smoke(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    monkeypatch.delitem(sys.modules, "smoke", raising=False)
    import smoke

    return smoke


def test_smoke_databases_are_named_after_database_url(smoke, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/topicsite_ci")
    url = smoke.smoke_database_url("postgres://postgres@127.0.0.1:5432/topicsite_bench", "api")
    assert url == "postgres://postgres@127.0.0.1:5432/topicsite_ci_smoke_api"


def test_smoke_databases_without_postgres_are_the_default_with_a_suffix(smoke, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "sqlite:///var/db.sqlite3")
    url = smoke.smoke_database_url("postgres://postgres@127.0.0.1:5432/topicsite_bench", "api")
    assert url == "postgres://postgres@127.0.0.1:5432/topicsite_bench_smoke"
