"""``manage.py demo``: the main job end to end, then the site.

On the embedded default (no ``DATABASE_URL``/``REDIS_URL``: SQLite under ``var/``, Celery tasks
run eagerly in-process) this is everything a fresh checkout needs to show the reference topic
page built from real data. Every step is idempotent, so running the demo again changes nothing.
"""

import os
import re
import socket
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import OperationalError, connections
from django.http.request import validate_host
from django.urls import reverse

from papers.models import Paper
from topics.models import Assignment, Topic
from topicsite.planner import analyze_database

REFERENCE_TOPIC_SLUG = "llm-agent-training"
DEFAULT_ADDRPORT = "127.0.0.1:8000"

# (what the step does, command, arguments): the main job as data flows, in order.
STEPS = (
    ("Apply database migrations", "migrate", ["--noinput"]),
    ("Load the arXiv category taxonomy", "load_categories", []),
    ("Import the reference topic page", "import_reference_page", []),
    ("Harvest the recorded arXiv responses", "harvest", ["--recorded"]),
    (
        "Create a topic per arXiv archive of the stored papers",
        "load_demo_taxonomy",
        ["--no-tag-hint"],
    ),
    # Before tagging, which reads vectors where they exist. Harvesting queued the embedding of
    # what it stored; this catches up on the rest (the reference page's papers, a model
    # installed since the last run). Without the model: a warning, and the demo goes on.
    (
        "Embed the papers (similar papers, tagging by meaning)",
        "embed",
        ["--skip-missing-model"],
    ),
    ("Tag every paper", "tag", ["--all"]),
)

# runserver's own forms: "8000", "127.0.0.1:8000", "[::1]:8000", "localhost:8000".
_ADDRPORT = re.compile(r"^(?:(?P<addr>\[[0-9a-fA-F:.]+\]|[\w.-]+):)?(?P<port>\d+)$")


def serve_address(addrport: str) -> tuple[str, str]:
    """``(host, port)`` a browser on this machine uses for ``addrport`` (runserver's argument).

    ``"0.0.0.0:8000"`` and ``"8000"`` give ``("127.0.0.1", "8000")``; IPv6 hosts keep their
    brackets (``"[::1]"``). Raises CommandError for text that is not ``[ADDRESS:]PORT`` or a
    port outside 1-65535.
    """
    match = _ADDRPORT.match(addrport)
    if not match:
        raise CommandError(f"--addrport {addrport!r} is not [ADDRESS:]PORT, e.g. 127.0.0.1:8000.")
    if not 1 <= int(match["port"]) <= 65535:
        raise CommandError(f"--addrport {addrport!r}: the port must be from 1 to 65535.")
    host = match["addr"]
    if host in (None, "0", "0.0.0.0", "[::]"):
        host = "127.0.0.1"
    return host, match["port"]


def _check_port_free(addrport: str, port: str) -> None:
    """Raise CommandError when nothing can listen on ``addrport`` (another server has the
    port), before the demo does its work rather than after."""
    match = _ADDRPORT.match(addrport)
    address = (match["addr"] or "127.0.0.1").strip("[]")
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((address, int(port)))
        except OSError as error:
            raise CommandError(
                f"Cannot serve on {addrport}: {error.strerror}. Stop what listens there, or "
                "pass another --addrport (e.g. --addrport 127.0.0.1:8001)."
            ) from None


class Command(BaseCommand):
    """``demo [--no-serve] [--addrport ADDRESS:PORT]``; see ``help``.

    Raises CommandError when the site could not be reached at ``--addrport`` (malformed, or a
    host not in ALLOWED_HOSTS; checked before any work), when a step fails, or when the
    reference topic is missing afterwards.
    """

    help = (
        "Run the main job on the configured database (migrate, load categories, import the "
        "reference topic page, harvest the recorded arXiv responses, build the demo taxonomy, "
        "embed and tag every paper), print a summary and the topic page URL, then serve the site."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--no-serve", action="store_true", help="Stop after the summary; do not serve."
        )
        parser.add_argument(
            "--addrport",
            default=DEFAULT_ADDRPORT,
            help=f"Address and port to serve on (default {DEFAULT_ADDRPORT}).",
        )

    def handle(self, *args, no_serve, addrport, verbosity, **options):
        host, port = serve_address(addrport)
        if not no_serve:
            # Refuse before the work, not after it: the page would answer 400 Bad Request.
            # With DEBUG and no ALLOWED_HOSTS, Django itself allows these local names.
            allowed = settings.ALLOWED_HOSTS or (
                [".localhost", "127.0.0.1", "[::1]"] if settings.DEBUG else []
            )
            if not validate_host(host, allowed):
                raise CommandError(
                    f"{host} is not in ALLOWED_HOSTS {allowed}; add it to DJANGO_ALLOWED_HOSTS "
                    "or pass --addrport with an allowed address."
                )
            _check_port_free(addrport, port)
            if "SITE_URL" not in os.environ:
                # Feeds, the private feed address and digest links are absolute: make them
                # point where this demo serves, not at the default port.
                settings.SITE_URL = f"http://{host}:{port}"

        self._prepare_database()
        if not settings.CELERY_TASK_ALWAYS_EAGER:
            self.stdout.write(
                self.style.WARNING(
                    "Celery is not eager (REDIS_URL is set): harvest and tagging tasks go to the "
                    "workers, so the counts below may still grow while they run."
                )
            )
        for number, (title, name, arguments) in enumerate(STEPS, start=1):
            self.stdout.write(self.style.MIGRATE_HEADING(f"[{number}/{len(STEPS)}] {title}"))
            # migrate lists every migration at the default verbosity; one level less is enough.
            step_verbosity = max(verbosity - 1, 0) if name == "migrate" else verbosity
            call_command(name, *arguments, verbosity=step_verbosity, stdout=self.stdout)

        # The planner's estimates (the API's counts above 1,000 papers) from the rows just
        # loaded, not from the empty tables migrations analysed: autovacuum may be off, and
        # takes a minute when on.
        analyze_database()
        if not Topic.objects.filter(slug=REFERENCE_TOPIC_SLUG).exists():
            raise CommandError(
                f"The reference topic {REFERENCE_TOPIC_SLUG!r} is missing after the import."
            )
        path = reverse("topics:detail", kwargs={"slug": REFERENCE_TOPIC_SLUG})
        assignments = Assignment.objects.all()
        self.stdout.write(
            self.style.SUCCESS(
                f"Papers: {Paper.objects.count()}  Topics: {Topic.objects.count()}  "
                f"Assignments: {assignments.count()} "
                f"({assignments.accepted().count()} accepted)"
            )
        )
        self.stdout.write(f"Topic page: http://{host}:{port}{path}")

        if no_serve:
            return
        call_command("runserver", addrport, use_reloader=False, stdout=self.stdout)

    def _prepare_database(self):
        """Create the folder of a SQLite database file (``var/`` on a fresh checkout); check
        that any other database can be reached. Raises CommandError naming the database and
        the server's answer when it cannot (a PostgreSQL database not created yet gave a
        raw traceback at the first step)."""
        connection = connections["default"]
        if connection.vendor == "sqlite":
            Path(connection.settings_dict["NAME"]).parent.mkdir(parents=True, exist_ok=True)
            return
        try:
            connection.ensure_connection()
        except OperationalError as error:
            name = connection.settings_dict.get("NAME")
            raise CommandError(
                f"Cannot reach the database {name!r} that DATABASE_URL names: "
                f"{str(error).strip()}. Create it first (PostgreSQL: createdb -h HOST -U USER "
                f"{name}) or point DATABASE_URL at one that exists."
            ) from error
