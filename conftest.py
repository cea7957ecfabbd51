"""Project-wide pytest fixtures (PostgreSQL and Redis, topicsite.settings.test)."""

import json
from pathlib import Path

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """With ``--dist loadfile`` (pyproject.toml), hand tests out by file *and* kind: pytest-
    django orders the collection plain database tests first, then transactional ones (which
    empty every table after them, migration data included), then tests without a database, so
    each file's tests of one kind are one run of the collection. Each run is a unit of work,
    and units go out in collection order (``--no-loadscope-reorder``): a worker runs no plain
    database test after a transactional one, as in one process, while a file's tests of one
    kind stay together (its module fixtures run once). (xdist's own ``loadgroup`` marks do not
    reach the scheduler under pytest 9.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FileRunScheduling(LoadScopeScheduling):
        _scopes: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self._scopes is None:
                self._scopes, previous, run = {}, None, 0
                for collected in self.collection:
                    path = collected.split("::", 1)[0]
                    if path != previous:
                        previous, run = path, run + 1
                    self._scopes[collected] = f"{path}#{run}"
            return self._scopes[nodeid]

    return FileRunScheduling(config, log)


@pytest.fixture(autouse=True)
def _clear_cache(request):
    """Each test starts with an empty cache (the Redis test database is shared by the suite)
    and no semantic corpus sample or category read from another test's (rolled-back) rows.

    Plain-Python tests (parsers) can run without Django: ``pytest -p no:django``.
    """
    if not request.config.pluginmanager.hasplugin("django"):
        yield
        return
    from django.core.cache import caches

    from papers.categories import categories_forget
    from topics.tagging import semantic
    from topicsite import cache as topicsite_cache

    # No breaker state from an earlier test (topicsite/cache.py): Redis is up for this one.
    topicsite_cache.reset()
    for alias in caches.settings:  # Redis, and the web process's own copies of pages
        caches[alias].clear()
    semantic._corpus = None
    categories_forget()  # the process's copy of categories another test stored
    yield
    for alias in caches.settings:
        caches[alias].clear()


# The reference topic page, as ``manage.py import_reference_page`` imports it.
REFERENCE_PAGE = Path(__file__).resolve().parent / "topics" / "data" / "llm-agent-training.json"


@pytest.fixture
def reference_topic(db):
    """The reference page imported as ``manage.py import_reference_page`` does: the topic
    "LLM Agent Training" (slug ``llm-agent-training``, under "LLM: Large Language Model") and
    its 30 papers. Used by the ask tests and the ask API's."""
    from papers.categories import category_sync
    from topics.importers.reference import reference_page_import
    from topics.models import Topic

    category_sync()
    reference_page_import(data=json.loads(REFERENCE_PAGE.read_text("utf-8")))
    return Topic.objects.get(slug="llm-agent-training")


# --- browser tests (Playwright driving Debian's chromium) --------------------------------------

CHROMIUM = "/usr/bin/chromium"
# Screenshots a browser test takes are kept here as test artefacts (ignored by git).
ARTIFACTS_DIR = __import__("pathlib").Path(__file__).resolve().parent / "var" / "test-artifacts"


@pytest.fixture
def browser(live_server, monkeypatch, settings):
    """A headless chromium (Debian's ``/usr/bin/chromium``, never ``playwright install``)
    driven by Playwright's sync API against ``live_server``; yields the Browser.

    Playwright's sync API runs an event loop in this thread, so the test's own ORM calls need
    ``DJANGO_ALLOW_ASYNC_UNSAFE`` (the live server answers in its own threads). The page cache
    for anonymous readers is on, as in production, and signed-in readers' shared pages.
    """
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    # As in production: anonymous readers share cached pages (changes commit for real here).
    settings.PAGE_CACHE_SECONDS = 60
    settings.READER_PAGE_CACHE_SECONDS = 60
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def screenshot(request):
    """``screenshot(page, name)`` saves a full-page PNG under ``var/test-artifacts/<test>/``
    and returns its path."""

    def take(page, name: str):
        directory = ARTIFACTS_DIR / request.node.name
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take
