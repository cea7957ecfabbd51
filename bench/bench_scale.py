"""Server time of the site's heavy reads on a large corpus, each beside the bare SQL that fetches
the same rows.

    .venv/bin/python bench/make_corpus.py --papers 1000000      # once, ~25 min
    .venv/bin/python bench/bench_scale.py [--repeat 30] [--cached]
        [--database-url postgres://postgres@127.0.0.1:5432/topicsite_bench_corpus]
        [--only topic-leaf,search-common] [--smoke]

Each case is a request through Django's test client (the whole view, templates included)
against the corpus database, repeated ``--repeat`` times after one warm-up request; the cache
is Django's DummyCache (every request computes everything) unless ``--cached`` (then the local
memory cache, warmed by the first request). Printed per case: median and p95 server time in
ms, the median CPU time of this process per request (Python's own work, which other load on
the machine does not inflate as much as wall time; the database server's work is not in it),
the SQL queries of one request, the median time of the bare SQL (the one statement that
returns the rows the case shows, run through psycopg on the same connection) and the ratio
page / bare SQL, then the median time of bare Django (``bench/bare_django.py``: a prebuilt
body of the page's size through the same middleware stack, by the same client, so signed in
where the page is) and the ratio page / bare Django, and whether the page stays within
``3 x bare SQL + 2 x bare Django`` (the performance issue's bound for every page). A case
whose latency target the issue sets is marked with it and ``ok`` or ``MISS``.

Cases (the topics are picked from the data: the largest leaf topic, and the parent topic whose
number of children is nearest 20):

- ``topic-leaf``, ``topic-parent``: the topic page, first page of 30 cards;
  ``topic-leaf-reader``: the leaf page as a signed-in reader who follows the topic and saved
  three of its papers gets it (with ``--cached``: their shared copy with the personal holes
  filled, ``topicsite.holes``);
- ``paper``: a paper page; ``paper-reader``: the same as the ``topic-leaf-reader`` gets it;
- ``momentum-one``: the parent topic's momentum as its page gets it (``topic_momentum_stored``
  where it exists: the stored figures, computed again after a change); ``momentum-one-exact``:
  ``topic_momentum``, computing it; ``momentum-all``: the momentum of
  every active topic (``topics_momentum`` where it exists, else one call per topic);
- ``api-list``: ``/api/v1/papers/`` filtered by primary category and a submitted range, when
  the API is installed;
- ``search-rare`` / ``search-common``: ``/api/v1/search/?q=`` for a word in a handful of
  papers and one in about a third of them, when the API is installed;
- ``search-hybrid``: ``/api/v1/search/?q=…&mode=hybrid`` for a researcher's description in
  plain words (keyword full-text, the vector index and an any-word rank fused), beside the
  full-text statement alone;
- ``similar``: ``/api/v1/papers/{id}/similar/`` (ten live papers nearest by the index),
  beside the statement that reads ten papers by id; both need the corpus's vectors
  (``make_corpus.py`` without ``--no-vectors``);
- ``feed-20``: ``/feed/`` of a user following 20 topics, when the feed is installed;
- ``search-page``: ``/search/?q=`` (the reader's search page, hybrid ranking) for the
  researcher's description of ``search-hybrid``, beside the full-text statement;
- ``author``: the author page of the leaf topic's newest paper's first author, beside the
  statement reading their 30 newest papers;
- ``facet-category``: ``/api/v1/papers/?group_by=primary_category`` (counts over the whole
  corpus; cold, as the cache is DummyCache), beside the GROUP BY;
- ``topic-index``: ``/topics/``, every topic's count, momentum and sparkline, beside the
  GROUP BY of accepted assignments by topic;
- ``library`` / ``for-you``: ``/library/`` and ``/for-you/`` of the ``topic-leaf-reader``
  (three saved papers, one followed topic), beside the statement reading the saved papers.

Needs the corpus database only (no Redis). ``--smoke`` (what CI runs): 2 requests per case
on the smoke corpus (``make_corpus.py --smoke``, built first if missing); exits non-zero
unless every case above ran (an API, a feed or a momentum function gone is an error there,
where a full run skips the case).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import make_corpus  # noqa: E402

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/topicsite_bench_corpus"
# Latency targets (ms, median, uncached) for the 1M-paper corpus.
TARGETS = {
    "topic-leaf": 15.0,
    "topic-parent": 25.0,
    "api-list": 10.0,
    "search-rare": 50.0,
    "search-common": 50.0,
    "momentum-one": 5.0,
    "similar": 20.0,
    "search-hybrid": 100.0,
}
CASES = (
    "topic-leaf",
    "topic-leaf-reader",
    "topic-parent",
    "paper",
    "paper-reader",
    "momentum-one",
    "momentum-one-exact",
    "momentum-all",
    "api-list",
    "search-rare",
    "search-common",
    "search-hybrid",
    "similar",
    "feed-20",
    "search-page",
    "author",
    "facet-category",
    "topic-index",
    "library",
    "for-you",
)


@dataclass
class Case:
    name: str
    run: Callable[[], object]
    bare_sql: str
    bare_params: list
    queries: int = 0


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=None, help=f"default {DEFAULT_DATABASE_URL}")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--cached", action="store_true")
    parser.add_argument("--only", default="", help="Comma-separated case names.")
    parser.add_argument("--smoke", action="store_true", help="2 requests per case (CI)")
    options = parser.parse_args()
    if options.smoke:
        options.repeat = 2
        options.database_url = options.database_url or make_corpus.smoke_corpus_url()
        make_corpus.smoke_corpus_ensure(options.database_url)
    options.database_url = options.database_url or DEFAULT_DATABASE_URL
    os.environ["DATABASE_URL"] = options.database_url
    os.environ.pop("REDIS_URL", None)
    os.environ["DJANGO_SETTINGS_MODULE"] = "topicsite.settings.local"
    import django

    django.setup()
    from django.test import override_settings

    backend = (
        "django.core.cache.backends.locmem.LocMemCache"
        if options.cached
        else "django.core.cache.backends.dummy.DummyCache"
    )
    from django.conf import settings

    with override_settings(
        CACHES={"default": {"BACKEND": backend}},
        ALLOWED_HOSTS=["testserver"],
        DEBUG=False,
        # A case repeats one API request past the anonymous rate (a real cache counts it).
        REST_FRAMEWORK={**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_CLASSES": []},
        # The site's URLs plus the bare-Django route (bench/bare_django.py).
        ROOT_URLCONF="bare_django",
    ):
        run(options)


def build_cases() -> list[Case]:
    from django.apps import apps
    from django.contrib.auth import get_user_model
    from django.db.models import Count
    from django.test import Client

    from papers.models import Paper
    from topics import momentum as momentum_module
    from topics.models import Assignment, Topic

    client = Client()

    def get(url: str, *, status: int = 200, as_client: Client = client):
        def fetch():
            response = as_client.get(url)
            if response.status_code != status:
                raise SystemExit(f"GET {url}: {response.status_code}")
            if getattr(response, "streaming", False):
                body = b"".join(response.streaming_content)
            else:
                body = response.content
            # What the bare-Django request of this case answers: the same size and kind.
            fetch.size = len(body)
            fetch.kind = "json" if "json" in response.get("Content-Type", "") else "html"
            return response

        fetch.client = as_client
        return fetch

    leaf = (
        Topic.objects.filter(active=True, children__isnull=True)
        .annotate(n=Count("assignments"))
        .order_by("-n")
        .first()
    )
    parents = list(
        Topic.objects.filter(active=True)
        .annotate(n=Count("children"))
        .filter(n__gt=1)
        .values_list("pk", "n")
    )
    parent_pk = min(parents, key=lambda row: (abs(row[1] - 20), row[0]))[0]
    parent = Topic.objects.get(pk=parent_pk)
    paper = Paper.objects.filter(source="bench-corpus").order_by("-pk").first() or (
        Paper.objects.order_by("-pk").first()
    )

    subtree_cards = (
        "SELECT p.id, p.arxiv_id, p.title, p.abstract, p.submitted, p.primary_category_id "
        "FROM papers_paper p WHERE p.id IN (SELECT a.paper_id FROM topics_assignment a "
        "JOIN topics_topic t ON t.id = a.topic_id WHERE a.state = 'accepted' "
        "AND t.path LIKE %s) ORDER BY p.submitted DESC, p.id DESC LIMIT 30"
    )
    topic_reader, _ = get_user_model().objects.get_or_create(
        username="bench-topic-reader", defaults={"email": "bench-topic-reader@example.org"}
    )
    from follows.models import Follow, LibraryItem

    Follow.objects.get_or_create(user=topic_reader, topic=leaf, defaults={"kind": "topic"})
    for paper_id in (
        Assignment.objects.filter(topic=leaf)
        .order_by("-submitted")
        .values_list("paper_id", flat=True)[:3]
    ):
        LibraryItem.objects.get_or_create(user=topic_reader, paper_id=paper_id)
    topic_reader_client = Client()
    topic_reader_client.force_login(topic_reader)
    cases = [
        Case("topic-leaf", get(leaf.get_absolute_url()), subtree_cards, [f"{leaf.path}%"]),
        Case(
            "topic-leaf-reader",
            get(leaf.get_absolute_url(), as_client=topic_reader_client),
            subtree_cards,
            [f"{leaf.path}%"],
        ),
        Case("topic-parent", get(parent.get_absolute_url()), subtree_cards, [f"{parent.path}%"]),
        Case(
            "paper",
            get(paper.get_absolute_url()),
            "SELECT p.*, au.name FROM papers_paper p "
            "LEFT JOIN papers_authorship s ON s.paper_id = p.id "
            "LEFT JOIN papers_author au ON au.id = s.author_id WHERE p.id = %s "
            "ORDER BY s.position",
            [paper.pk],
        ),
    ]
    cases.append(
        Case(
            "paper-reader",
            get(paper.get_absolute_url(), as_client=topic_reader_client),
            cases[-1].bare_sql,
            cases[-1].bare_params,
        )
    )
    as_of = Paper.objects.order_by("-submitted").values_list("submitted", flat=True).first()
    weekly = (
        "SELECT date_trunc('week', p.submitted) AS week, count(*) FROM papers_paper p "
        "WHERE p.submitted > %s::date - 84 AND p.submitted <= %s AND p.id IN "
        "(SELECT a.paper_id FROM topics_assignment a JOIN topics_topic t ON t.id = a.topic_id "
        "WHERE a.state = 'accepted' AND t.path LIKE %s) GROUP BY 1"
    )
    # What the topic page serves (the stored figures where they exist), and the computation.
    stored = getattr(momentum_module, "topic_momentum_stored", momentum_module.topic_momentum)
    cases.append(
        Case(
            "momentum-one",
            lambda: stored(topic=parent, as_of=as_of),
            weekly,
            [as_of, as_of, f"{parent.path}%"],
        )
    )
    cases.append(
        Case(
            "momentum-one-exact",
            lambda: momentum_module.topic_momentum(topic=parent, as_of=as_of),
            weekly,
            [as_of, as_of, f"{parent.path}%"],
        )
    )
    all_topics = list(Topic.objects.filter(active=True))
    if hasattr(momentum_module, "topics_momentum"):

        def momentum_all():
            return momentum_module.topics_momentum(topics=all_topics, as_of=as_of)
    else:

        def momentum_all():
            return [momentum_module.topic_momentum(topic=t, as_of=as_of) for t in all_topics]

    cases.append(
        Case(
            "momentum-all",
            momentum_all,
            "SELECT a.topic_id, date_trunc('week', p.submitted), count(*) FROM papers_paper p "
            "JOIN topics_assignment a ON a.paper_id = p.id AND a.state = 'accepted' "
            "WHERE p.submitted > %s::date - 84 AND p.submitted <= %s GROUP BY 1, 2",
            [as_of, as_of],
        )
    )
    if apps.is_installed("rest_framework"):
        from django.urls import NoReverseMatch, reverse

        try:
            reverse("api:paper-list")
            has_api = True
        except NoReverseMatch:
            has_api = False
        if has_api:
            code = paper.primary_category.code
            since = as_of.replace(year=as_of.year - 1)
            cases.append(
                Case(
                    "api-list",
                    get(f"/api/v1/papers/?primary_category={code}&submitted_after={since}"),
                    "SELECT p.* FROM papers_paper p WHERE p.primary_category_id = %s "
                    "AND p.submitted >= %s ORDER BY p.submitted DESC, p.id DESC LIMIT 25",
                    [paper.primary_category_id, since],
                )
            )
            # The stored vector (papers migration 0005); search ranks the newest 1,000 matches
            # (topics.search.SEARCH_WINDOW).
            search_sql = (
                "SELECT w.id, w.title FROM (SELECT p.id, p.title, p.submitted, p.search_vector "
                "FROM papers_paper p WHERE p.search_vector @@ websearch_to_tsquery('english', %s) "
                "ORDER BY p.submitted DESC, p.id DESC LIMIT 1000) w ORDER BY "
                "ts_rank(w.search_vector, websearch_to_tsquery('english', %s)) DESC, "
                "w.submitted DESC, w.id DESC LIMIT 25"
            )
            for name, word in (("search-rare", "holography"), ("search-common", "model")):
                cases.append(Case(name, get(f"/api/v1/search/?q={word}"), search_sql, [word, word]))
            described = "training language model agents to use tools with rewards"
            cases.append(
                Case(
                    "search-hybrid",
                    get(f"/api/v1/search/?q={quote(described)}&mode=hybrid"),
                    search_sql,
                    [described, described],
                )
            )
            ten = list(
                Paper.objects.filter(pk__lt=paper.pk)
                .order_by("-pk")
                .values_list("pk", flat=True)[:10]
            )
            cases.append(
                Case(
                    "similar",
                    get(f"/api/v1/papers/{paper.arxiv_id}/similar/"),
                    "SELECT p.id, p.arxiv_id, p.title, p.submitted FROM papers_paper p "
                    "WHERE p.id = ANY(%s)",
                    [ten],
                )
            )
    try:
        from django.urls import reverse

        feed_url = reverse("feed:index")
    except Exception:  # noqa: BLE001 - the feed is not installed in this checkout
        feed_url = None
    if feed_url:
        user, _ = get_user_model().objects.get_or_create(username="bench-feed-reader")
        biggest = (
            Topic.objects.filter(active=True, children__isnull=True)
            .annotate(n=Count("assignments"))
            .order_by("-n")[:20]
        )
        for topic in biggest:
            Follow.objects.get_or_create(user=user, topic=topic, defaults={"kind": "topic"})
        reader = __import__("django.test", fromlist=["Client"]).Client()
        reader.force_login(user)
        cases.append(
            Case(
                "feed-20",
                get(feed_url, as_client=reader),
                "SELECT p.id, p.title, p.submitted FROM papers_paper p WHERE p.id IN "
                "(SELECT a.paper_id FROM topics_assignment a WHERE a.state = 'accepted' AND "
                "a.topic_id = ANY(%s)) ORDER BY p.submitted DESC, p.id DESC LIMIT 30",
                [[t.pk for t in biggest]],
            )
        )
    cases.extend(
        step4_cases(get, paper=paper, leaf=leaf, reader=topic_reader, client=topic_reader_client)
    )
    return cases


def step4_cases(get, *, paper, leaf, reader, client) -> list[Case]:
    """The reader's pages of issue 19's step 4 (search page, author page, a whole-corpus
    facet, the topics index, the library and "for you"), each beside its bare statement."""
    from papers.models import Authorship
    from topics.models import Assignment

    described = "training language model agents to use tools with rewards"
    full_text = (
        "SELECT p.id, p.title FROM papers_paper p "
        "WHERE p.search_vector @@ websearch_to_tsquery('english', %s) "
        "ORDER BY p.submitted DESC, p.id DESC LIMIT 20"
    )
    newest = Assignment.objects.filter(topic=leaf).order_by("-submitted").first()
    authorship = (
        Authorship.objects.filter(paper_id=newest.paper_id if newest else paper.pk)
        .select_related("author")
        .order_by("position")
        .first()
    )
    saved = (
        "SELECT p.id, p.title, p.submitted FROM follows_libraryitem l "
        "JOIN papers_paper p ON p.id = l.paper_id WHERE l.user_id = %s "
        "ORDER BY l.saved_at DESC LIMIT 30"
    )
    cases = [
        Case("search-page", get(f"/search/?q={quote(described)}"), full_text, [described]),
        Case(
            "facet-category",
            get("/api/v1/papers/?group_by=primary_category"),
            "SELECT p.primary_category_id, count(*) FROM papers_paper p GROUP BY 1",
            [],
        ),
        Case(
            "topic-index",
            get("/topics/"),
            "SELECT a.topic_id, count(*) FROM topics_assignment a "
            "WHERE a.state = 'accepted' GROUP BY 1",
            [],
        ),
        Case("library", get("/library/", as_client=client), saved, [reader.pk]),
        Case("for-you", get("/for-you/", as_client=client), saved, [reader.pk]),
    ]
    if authorship is not None:
        cases.insert(
            1,
            Case(
                "author",
                get(authorship.author.get_absolute_url()),
                "SELECT p.id, p.title, p.submitted FROM papers_paper p "
                "JOIN papers_authorship s ON s.paper_id = p.id WHERE s.author_id = %s "
                "ORDER BY p.submitted DESC, p.id DESC LIMIT 30",
                [authorship.author_id],
            ),
        )
    return cases


def run(options) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from papers.models import Paper

    cases = build_cases()
    if options.smoke:
        from topics import momentum

        missing = [name for name in CASES if name not in {case.name for case in cases}]
        missing += [
            f"topics.momentum.{name}"
            for name in ("topic_momentum_stored", "topics_momentum")
            if not hasattr(momentum, name)
        ]
        if missing:
            raise SystemExit(f"smoke: cases or the functions they time are gone: {missing}")
    if options.only:
        wanted = set(options.only.split(","))
        cases = [case for case in cases if case.name in wanted]
    print(
        f"{Paper.objects.count():,} papers; {'cached' if options.cached else 'uncached'}; "
        f"{options.repeat} requests per case after one warm-up; load average "
        f"{os.getloadavg()[0]:.1f}\n"
    )
    header = (
        f"{'case':<18} {'median ms':>10} {'p95 ms':>8} {'CPU ms':>7} {'SQL':>5} "
        f"{'bare SQL ms':>12} {'x SQL':>7} {'bare Django ms':>15} {'x Django':>9}  "
        f"<= 3 SQL + 2 Django  target"
    )
    print(header)
    print("-" * len(header))
    for case in cases:
        case.run()  # warm-up (connection, template loading, the local cache when --cached)
        with CaptureQueriesContext(connection) as captured:
            case.run()
        case.queries = len(captured)
        times, cpu = [], []
        for _ in range(options.repeat):
            started, cpu_started = time.perf_counter(), time.process_time()
            case.run()
            times.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - cpu_started) * 1000)
        bare = []
        with connection.cursor() as cursor:
            for _ in range(max(5, options.repeat // 3)):
                started = time.perf_counter()
                cursor.execute(case.bare_sql, case.bare_params)
                cursor.fetchall()
                bare.append((time.perf_counter() - started) * 1000)
        median = statistics.median(times)
        bare_median = statistics.median(bare)
        django_median = bare_django_median(case, options.repeat)
        target = TARGETS.get(case.name)
        verdict = ""
        if target is not None:
            verdict = f"<= {target:g} ms {'ok' if median <= target else 'MISS'}"
        if django_median is None:  # not a request (the momentum functions)
            django_columns = f"{'-':>15} {'-':>9}  {'-':<19}"
        else:
            ceiling = 3 * bare_median + 2 * django_median
            django_columns = (
                f"{django_median:>15.2f} {median / django_median:>9.1f}  "
                f"{f'{ceiling:.1f} ms ' + ('ok' if median <= ceiling else 'MISS'):<19}"
            )
        print(
            f"{case.name:<18} {median:>10.1f} {percentile(times, 0.95):>8.1f} "
            f"{statistics.median(cpu):>7.1f} "
            f"{case.queries:>5} {bare_median:>12.2f} {median / bare_median:>7.1f} "
            f"{django_columns}  {verdict}"
        )


def bare_django_median(case: Case, repeat: int) -> float | None:
    """Median ms of the bare-Django request of ``case`` (``bench/bare_django.py``: a prebuilt
    body of the size and kind the case's last response had, through the same middleware stack,
    by the same client); None for a case that is no request."""
    client = getattr(case.run, "client", None)
    if client is None:
        return None
    url = f"/__bench__/bare/{case.run.size}/?kind={case.run.kind}"
    client.get(url)  # warm-up
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
        if response.status_code != 200:
            raise SystemExit(f"GET {url}: {response.status_code}")
    return statistics.median(times)


if __name__ == "__main__":
    main()
