"""``topicsite/dbrouter.py``: readers' GETs read the replica, everything else the primary, a
request that wrote reads its writes, and the pin cookie keeps the next requests on the primary.

The unit tests drive the middleware with a view that asks the router; the last test starts
the site in a fresh process with ``DATABASE_REPLICA_URL`` set (to the test database itself,
as a replica holds the same data) and counts the queries each connection ran. It reads
``/api/v1/papers/``, whose queries all go through the ORM: raw SQL through
``django.db.connection`` (the topics index figures, facets, search) reads the primary.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection
from django.http import HttpResponse
from django.test import RequestFactory

from topicsite.dbrouter import (
    PIN_COOKIE,
    PRIMARY,
    REPLICA,
    PrimaryReplicaRouter,
    ReplicaReadsMiddleware,
)

ROOT = Path(__file__).resolve().parent.parent.parent
router = PrimaryReplicaRouter()


def seen_by(view_body):
    """A view that runs ``view_body()`` and records where reads went before and after it."""
    seen = {}

    def view(request):
        seen["before"] = router.db_for_read(None)
        view_body()
        seen["after"] = router.db_for_read(None)
        return HttpResponse("ok")

    return view, seen


def nothing():
    pass


def a_write():
    router.db_for_write(None)


@pytest.mark.parametrize("method", ["get", "head"])
def test_a_readers_get_reads_the_replica_and_sets_no_cookie(method):
    view, seen = seen_by(nothing)
    response = ReplicaReadsMiddleware(view)(getattr(RequestFactory(), method)("/topics/"))

    assert seen == {"before": REPLICA, "after": REPLICA}
    assert PIN_COOKIE not in response.cookies


def test_a_post_reads_the_primary_and_pins_the_next_requests(settings):
    settings.DATABASE_REPLICA_PIN_SECONDS = 7
    view, seen = seen_by(nothing)
    response = ReplicaReadsMiddleware(view)(RequestFactory().post("/follows/topics/x/"))

    assert seen == {"before": PRIMARY, "after": PRIMARY}
    cookie = response.cookies[PIN_COOKIE]
    assert cookie["max-age"] == 7
    assert cookie["httponly"] is True


def test_a_get_that_writes_reads_its_writes_and_pins_the_next_requests():
    view, seen = seen_by(a_write)
    response = ReplicaReadsMiddleware(view)(RequestFactory().get("/api/v1/papers/"))

    assert seen == {"before": REPLICA, "after": PRIMARY}
    assert PIN_COOKIE in response.cookies


def test_a_get_with_the_pin_cookie_reads_the_primary():
    view, seen = seen_by(nothing)
    request = RequestFactory().get("/library/")
    request.COOKIES[PIN_COOKIE] = "1"
    ReplicaReadsMiddleware(view)(request)

    assert seen == {"before": PRIMARY, "after": PRIMARY}


def test_outside_a_request_everything_goes_to_the_primary():
    """Tasks, commands and the shell: they read in order to write."""
    view, _ = seen_by(nothing)
    ReplicaReadsMiddleware(view)(RequestFactory().get("/"))  # a request came and went

    assert router.db_for_read(None) == PRIMARY
    assert router.db_for_write(None) == PRIMARY
    assert router.allow_migrate(PRIMARY, "papers") is True
    assert router.allow_migrate(REPLICA, "papers") is False


def test_a_view_that_fails_leaves_no_replica_reads_behind():
    def view(request):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        ReplicaReadsMiddleware(view)(RequestFactory().get("/"))

    assert router.db_for_read(None) == PRIMARY


SCRIPT = """
import json
import django
django.setup()
from django.db import connections
from django.test import Client
from django.test.utils import CaptureQueriesContext

from accounts.tests.factories import UserFactory
from api.services import token_create
from topics.tests.factories import TopicFactory

topic = TopicFactory()
key = token_create(user=UserFactory(), name="replica").key


def counted(call):
    with CaptureQueriesContext(connections["default"]) as primary, CaptureQueriesContext(
        connections["replica"]
    ) as replica:
        response = call()
    return {"status": response.status_code, "primary": len(primary), "replica": len(replica),
            "pinned": "topicsite_primary" in response.cookies}


client = Client(HTTP_HOST="127.0.0.1")
results = {
    "anonymous GET": counted(lambda: client.get("/api/v1/papers/")),
    "POST follow": counted(lambda: client.post(
        "/api/v1/me/follows/", {"topic": topic.slug}, content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}")),
}
client.cookies["topicsite_primary"] = "1"
results["GET with the pin cookie"] = counted(lambda: client.get("/api/v1/papers/"))
print(json.dumps(results))
"""


@pytest.mark.django_db(transaction=True)
def test_with_a_replica_configured_the_site_reads_and_writes_where_it_should():
    db = connection.settings_dict
    url = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "topicsite.settings.test",
        "DATABASE_URL": url,
        "DATABASE_REPLICA_URL": url,
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])

    anonymous = results["anonymous GET"]
    assert anonymous["status"] == 200
    assert anonymous["replica"] > 0 and anonymous["primary"] == 0, results
    assert anonymous["pinned"] is False
    follow = results["POST follow"]
    assert follow["status"] == 201
    assert follow["replica"] == 0 and follow["primary"] > 0, results
    assert follow["pinned"] is True
    pinned = results["GET with the pin cookie"]
    assert pinned["status"] == 200
    assert pinned["replica"] == 0 and pinned["primary"] > 0, results
