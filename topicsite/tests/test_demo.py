"""``manage.py demo`` on the embedded default, as a person runs it: a subprocess on a fresh SQLite
file with no REDIS_URL (Celery eager), run twice, then the topic page fetched with Django's test
client in another process on that file (the pytest process itself is on PostgreSQL)."""

import json

import pytest

TOPIC_URL = "http://127.0.0.1:8000/topics/llm-agent-training/"

# Prints, as one JSON line, what the database holds: counts, and fingerprints of the rows a
# second run could rewrite without changing a count.
SHOW_DATABASE = """
import hashlib, json
from django.db import connection
from django.db.models import Max
from papers.models import Authorship, Category, Paper, PaperEmbedding, PaperVersion
from topics.models import Assignment, Topic

def fingerprint(queryset, *fields):
    rows = list(queryset.order_by("pk").values_list("pk", *fields))
    return hashlib.sha256(repr(rows).encode()).hexdigest()

print(json.dumps({
    "database": str(connection.settings_dict["NAME"]),
    "categories": Category.objects.count(),
    "papers": Paper.objects.count(),
    "arxiv_papers": Paper.objects.filter(arxiv_id__isnull=False).count(),
    "imported_papers": Paper.objects.filter(import_key__isnull=False).count(),
    "versions": PaperVersion.objects.count(),
    "authorships": Authorship.objects.count(),
    "topics": Topic.objects.count(),
    "embeddings": PaperEmbedding.objects.count(),
    "embedding_rows": fingerprint(PaperEmbedding.objects, "model", "text_sha256", "embedded_at"),
    "assignments": Assignment.objects.count(),
    "assignment_rows": fingerprint(
        Assignment.objects, "paper", "topic", "source", "state", "score", "decided_by"
    ),
    "topic_rows": fingerprint(Topic.objects, "slug", "name", "parent", "path", "rule_query"),
    "papers_updated": str(Paper.objects.aggregate(m=Max("updated_at"))["m"]),
    "assignments_updated": str(Assignment.objects.aggregate(m=Max("updated_at"))["m"]),
}))
"""

# Fetches the reference topic page as a browser on this machine would.
FETCH_TOPIC_PAGE = """
import json
from django.test import Client
response = Client(HTTP_HOST="127.0.0.1").get("/topics/llm-agent-training/")
text = response.content.decode()
print(json.dumps({
    "status": response.status_code,
    "phrases": [p for p in ("LLM Agent Training", "LLM: Large Language Model", "Latest papers")
                if p in text],
}))
"""


def last_json_line(result):
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def demo(tmp_path_factory, run_manage):
    """Two demo runs on one fresh SQLite file, with the database shown after each."""
    database = tmp_path_factory.mktemp("demo") / "var" / "demo.sqlite3"
    env = {
        "DATABASE_URL": f"sqlite:///{database}",
        "EMBEDDING_INDEX_DIR": str(database.parent / "vectors"),
    }
    runs = []
    for _ in range(2):
        result = run_manage("demo", "--no-serve", env=env, timeout=1200)
        assert result.returncode == 0, result.stdout + result.stderr
        shown = last_json_line(run_manage("shell", "-v", "0", "-c", SHOW_DATABASE, env=env))
        runs.append((result, shown))
    page = last_json_line(run_manage("shell", "-v", "0", "-c", FETCH_TOPIC_PAGE, env=env))
    return {"database": database, "runs": runs, "page": page}


def test_demo_runs_the_main_job_and_prints_the_topic_page_url(demo):
    result, _ = demo["runs"][0]

    assert f"Topic page: {TOPIC_URL}" in result.stdout.splitlines()
    for step in (
        "[1/7] Apply database migrations",
        "[6/7] Embed the papers (similar papers, tagging by meaning)",
        "[7/7] Tag every paper",
    ):
        assert step in result.stdout
    assert "Run `manage.py tag --all`" not in result.stdout  # step 7 does it


def test_demo_stores_real_papers_topics_and_assignments_in_the_named_file(demo):
    _, shown = demo["runs"][0]

    assert shown["database"] == str(demo["database"])
    assert demo["database"].is_file()
    assert shown["categories"] > 100
    # The reference page's 30 papers, and the recorded arXiv records beside them.
    assert shown["imported_papers"] == 30
    assert shown["arxiv_papers"] > 0
    assert shown["versions"] >= shown["arxiv_papers"]
    assert shown["topics"] >= 58
    assert shown["assignments"] > shown["imported_papers"]
    # Every paper embedded (the model ships with the requirements), its index file written.
    assert shown["embeddings"] == shown["papers"]
    assert list((demo["database"].parent / "vectors").glob("*.usearch"))
    summary = (
        f"Papers: {shown['papers']}  Topics: {shown['topics']}  "
        f"Assignments: {shown['assignments']} "
    )
    assert summary in demo["runs"][0][0].stdout


def test_a_second_demo_run_changes_nothing(demo):
    (_, first), (_, second) = demo["runs"]

    assert second == first


def test_the_reference_topic_page_renders_after_the_demo(demo):
    assert demo["page"] == {
        "status": 200,
        "phrases": ["LLM Agent Training", "LLM: Large Language Model", "Latest papers"],
    }


@pytest.mark.parametrize(
    ("arguments", "env", "message"),
    [
        ((), {"DJANGO_ALLOWED_HOSTS": "topics.example.org"}, "not in ALLOWED_HOSTS"),
        (("--addrport", "here:there"), {}, "is not [ADDRESS:]PORT"),
        (("--addrport", "127.0.0.1:99999"), {}, "the port must be from 1 to 65535"),
    ],
)
def test_demo_refuses_to_serve_where_the_site_cannot_answer_before_any_work(
    tmp_path, run_manage, arguments, env, message
):
    database = tmp_path / "demo.sqlite3"

    result = run_manage(
        "demo", *arguments, env={"DATABASE_URL": f"sqlite:///{database}", **env}, timeout=60
    )

    assert result.returncode != 0
    assert message in result.stderr
    assert not database.exists()


def test_demo_refuses_a_port_another_server_holds_before_any_work(tmp_path, run_manage):
    import socket

    database = tmp_path / "demo.sqlite3"
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = run_manage(
            "demo",
            "--addrport",
            f"127.0.0.1:{port}",
            env={"DATABASE_URL": f"sqlite:///{database}"},
            timeout=60,
        )

    assert result.returncode != 0
    assert f"Cannot serve on 127.0.0.1:{port}" in result.stderr
    assert not database.exists()


@pytest.mark.django_db
def test_demo_points_absolute_links_at_the_address_it_serves(settings, monkeypatch):
    """Feeds and digests build absolute links from SITE_URL: serving the demo on another port
    must not leave them at :8000 (unless SITE_URL was set on purpose)."""
    from django.core.management import call_command

    from topics.management.commands import demo
    from topics.tests.factories import TopicFactory

    TopicFactory(slug=demo.REFERENCE_TOPIC_SLUG)
    served = []

    def fake_call_command(name, *args, **kwargs):  # the steps ran elsewhere; record serving
        if name == "runserver":
            served.append((args[0], settings.SITE_URL))

    monkeypatch.setattr(demo, "call_command", fake_call_command)
    monkeypatch.setattr(demo, "analyze_database", lambda: None)
    monkeypatch.delenv("SITE_URL", raising=False)
    call_command("demo", "--addrport", "127.0.0.1:8765")
    assert served == [("127.0.0.1:8765", "http://127.0.0.1:8765")]

    monkeypatch.setenv("SITE_URL", "https://topics.example.org")
    settings.SITE_URL = "https://topics.example.org"
    call_command("demo", "--addrport", "127.0.0.1:8765")
    assert served[-1] == ("127.0.0.1:8765", "https://topics.example.org")


def test_demo_names_a_postgresql_database_that_does_not_exist_yet(run_manage):
    """A new user pointed DATABASE_URL at a PostgreSQL database not created yet: the demo
    says so and how to create it, instead of a traceback from the first step."""
    result = run_manage(
        "demo",
        "--no-serve",
        env={"DATABASE_URL": "postgres://postgres@127.0.0.1:5432/topicsite_never_created"},
        timeout=60,
    )

    assert result.returncode != 0
    assert "Cannot reach the database 'topicsite_never_created'" in result.stderr
    assert "createdb" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.django_db
def test_the_demo_analyzes_what_it_loaded_so_counts_estimate_the_rows(monkeypatch):
    """After its steps the demo runs ``ANALYZE``: the planner's row estimates (the API's
    counts above 1,000 papers) hold the papers loaded, not the empty tables migrations saw
    (1,347 papers were counted as "1,001 or more" on a server without autovacuum)."""
    from django.core.management import call_command
    from django.db import connection

    from papers.models import Paper
    from papers.tests.factories import PaperFactory
    from topics.management.commands import demo
    from topics.tests.factories import TopicFactory
    from topicsite.planner import planner_table_rows

    TopicFactory(slug=demo.REFERENCE_TOPIC_SLUG)
    PaperFactory.create_batch(12)
    monkeypatch.setattr(demo, "call_command", lambda *args, **kwargs: None)

    call_command("demo", "--no-serve")

    if connection.vendor == "postgresql":
        assert planner_table_rows(Paper) == Paper.objects.count() == 12
