"""The permission matrix: who gets what from every route of the site.

Five roles: ``anonymous``; ``user`` (a reader); ``curator`` (staff, member of the "Curators"
group); ``staff`` (``is_staff`` and no permission at all); ``superuser``. Each is asked for

- every named route of the URLconf (walked, so a new route without an entry in ``ROUTES``
  fails :func:`test_every_route_is_classified`), with GET and POST for pages and GET, POST,
  PUT, PATCH and DELETE for the API;
- every admin changelist, add, change, history and delete page of every registered model, with
  what each role may do there in ``ADMIN_MODELS`` (a newly registered model fails
  :func:`test_every_admin_model_is_classified`).

Objects in the route arguments (a follow, an API token, a private feed) belong to a sixth
user, the *owner*: no role may read or change them, superusers included (only the admin lets
superusers at other people's data). Capability URLs (a private feed, an unsubscribe link) open
for whoever holds them, by design. CSRF is off here (``test_security_csrf.py`` covers it);
each request starts from a fresh client signed in as the role.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group
from django.contrib.contenttypes.models import ContentType
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django_celery_beat.models import ClockedSchedule, IntervalSchedule, SolarSchedule

from accounts.tests.factories import UserFactory
from api.services import token_create
from digests.models import Digest
from digests.tokens import unsubscribe_token_make
from follows.feed_services import feed_visit, private_feed_token
from follows.models import SearchMatch
from follows.services import follow_create
from papers.models import HarvestRun, PaperDuplicate
from papers.tests.factories import (
    AuthorshipFactory,
    CategoryFactory,
    PaperAffiliationFactory,
    PaperFactory,
)
from topics.models import ClassifierModel, EmergingCluster
from topics.tests.factories import AssignmentFactory, TopicFactory

ROLES = ("anonymous", "user", "curator", "staff", "superuser")
PAGE_METHODS = ("GET", "POST")
API_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def every(status: int) -> dict[str, int]:
    return dict.fromkeys(ROLES, status)


def signed_in(status: int, *, anonymous: int = 302) -> dict[str, int]:
    """``status`` for every signed-in role, ``anonymous`` (the log-in redirect) otherwise."""
    return {**every(status), "anonymous": anonymous}


def curators(status: int, *, others: int = 403, anonymous: int = 401) -> dict[str, int]:
    """API resources for the assignment permissions: curators and superusers get ``status``,
    other signed-in roles 403, anonymous 401."""
    return {
        "anonymous": anonymous,
        "user": others,
        "curator": status,
        "staff": others,
        "superuser": status,
    }


def staff_only(status: int, *, others: int = 302) -> dict[str, int]:
    """Admin pages: roles with ``is_staff`` get ``status``; the rest go to the admin log-in."""
    return {**every(status), "anonymous": others, "user": others}


@dataclass
class Route:
    """How to call one named route and what each role gets, per method."""

    kwargs: Callable[[dict], dict] = lambda world: {}
    expect: dict[str, dict[str, int]] = field(default_factory=dict)
    query: str = ""


def page(get, post=None, **kwargs) -> Route:
    """A page: GET and POST (405 unless given)."""
    post = every(405) if post is None else post
    return Route(expect={"GET": get, "POST": post}, **kwargs)


def api(get=None, post=None, put=None, patch=None, delete=None, **kwargs) -> Route:
    """An API resource: every method. A write method not given is ``WRITE_REFUSED``: DRF
    checks credentials and permissions before the method, so anonymous writes are 401."""
    expect = {"GET": get}
    for method, given in (("POST", post), ("PUT", put), ("PATCH", patch), ("DELETE", delete)):
        expect[method] = given if given is not None else WRITE_REFUSED
    return Route(expect=expect, **kwargs)


SLUG = {"slug": "matrix-topic"}
READ = every(200)
NOT_ALLOWED = every(405)
WRITE_REFUSED = {**every(405), "anonymous": 401}

# Every named route outside the admin's per-model pages (those are ADMIN_MODELS below).
ROUTES: dict[str, Route] = {
    # --- reader pages
    "topics:home": page(every(302), post=every(302)),
    "api-home": page(every(302), post=every(302)),
    "topics:index": page(READ),
    "topics:detail": page(READ, kwargs=lambda w: SLUG),
    "topics:search": page(READ, query="q=agents"),
    "ask:topic": page(READ, kwargs=lambda w: SLUG, query="q=agents"),
    "topic-feed:atom": page(READ, kwargs=lambda w: SLUG),
    "papers:detail": page(READ, kwargs=lambda w: {"arxiv_id": w["paper"].arxiv_id}),
    "papers:detail-local": page(READ, kwargs=lambda w: {"pk": w["local_paper"].pk}),
    "topics:sitemap": page(READ),
    "topics:sitemap-section": page(READ, kwargs=lambda w: {"section": "topics"}),
    "topics:robots": page(READ),
    "authors:detail": page(READ, kwargs=lambda w: {"pk": w["author"].pk, "slug": w["author"].slug}),
    "authors:detail-id": page(every(301), kwargs=lambda w: {"pk": w["author"].pk}),
    # --- follows and the feed: the signed-in user's own; others' objects are 404
    "follows:list": page(signed_in(200), post=every(405)),
    "follows:toggle": page(every(405), post=signed_in(302), kwargs=lambda w: SLUG),
    "follows:confirm": page(signed_in(200), post=every(405), kwargs=lambda w: SLUG),
    "follows:author-toggle": page(
        every(405), post=signed_in(302), kwargs=lambda w: {"pk": w["author"].pk}
    ),
    # --- the reader's library and "for you": the signed-in reader's own
    "library:index": page(signed_in(200), post=every(405)),
    "library:save": page(
        every(405), post=signed_in(302), kwargs=lambda w: {"paper_id": w["paper"].pk}
    ),
    # Marking read and a note go on a paper in the reader's library; this one is in nobody's.
    "library:read": page(
        every(405), post=signed_in(404), kwargs=lambda w: {"paper_id": w["paper"].pk}
    ),
    "library:note": page(
        every(405), post=signed_in(404), kwargs=lambda w: {"paper_id": w["paper"].pk}
    ),
    "library:export-bib": page(signed_in(200), post=every(405)),
    "library:export-ris": page(signed_in(200), post=every(405)),
    "library:export-csv": page(signed_in(200), post=every(405)),
    "for_you:index": page(signed_in(200), post=every(405)),
    "for_you:dismiss": page(
        every(405), post=signed_in(302), kwargs=lambda w: {"paper_id": w["paper"].pk}
    ),
    # Citing a paper: anyone. Reporting a wrong topic: an unknown assignment is 404 for all.
    "papers:cite-bib": page(READ, kwargs=lambda w: {"arxiv_id": w["paper"].arxiv_id}),
    "papers:cite-ris": page(READ, kwargs=lambda w: {"arxiv_id": w["paper"].arxiv_id}),
    "papers:cite-bib-local": page(READ, kwargs=lambda w: {"pk": w["local_paper"].pk}),
    "papers:cite-ris-local": page(READ, kwargs=lambda w: {"pk": w["local_paper"].pk}),
    "topics:report": page(every(405), post=every(404), kwargs=lambda w: {"pk": 999_999}),
    "follows:search-create": page(every(405), post=signed_in(400)),
    "follows:frequency": page(
        every(405), post=signed_in(404), kwargs=lambda w: {"pk": w["owner_follow"].pk}
    ),
    "follows:delete": page(
        every(405), post=signed_in(404), kwargs=lambda w: {"pk": w["owner_follow"].pk}
    ),
    "follows:export": page(signed_in(200), post=every(405)),
    "follows:import": page(every(405), post=signed_in(400)),
    "feed:index": page(signed_in(200), post=every(405)),
    "feed:regenerate": page(signed_in(405), post=signed_in(302)),
    # The private feed's token is its credential: whoever holds it reads it.
    "feed:atom": page(READ, kwargs=lambda w: {"token": w["owner_feed_token"]}),
    "digests:unsubscribe": page(
        READ, post=READ, kwargs=lambda w: {"token": w["owner_unsubscribe_token"]}
    ),
    # --- accounts (ours, then django-allauth's)
    "accounts:overview": page(signed_in(200), post=signed_in(200)),
    "accounts:delete": page(signed_in(200), post=signed_in(200)),
    "account_login": page(signed_in(302, anonymous=200), post=signed_in(302, anonymous=200)),
    "account_logout": page(signed_in(200), post=every(302)),
    "account_inactive": page(READ),
    "account_signup": page(signed_in(302, anonymous=200), post=signed_in(302, anonymous=200)),
    "account_reauthenticate": page(signed_in(200), post=signed_in(200)),
    # Codes by email are not enabled: these pages send everyone elsewhere.
    "account_request_reauthentication_code": page(signed_in(200), post=signed_in(200)),
    "account_confirm_reauthentication_code": page(every(302), post=every(302)),
    "account_email": page(signed_in(200), post=signed_in(302)),
    "account_email_verification_sent": page(READ),
    "account_change_password": page(signed_in(200), post=signed_in(200)),
    "account_set_password": page(signed_in(302), post=signed_in(302)),
    "account_reset_password": page(READ, post=READ),
    "account_confirm_login_code": page(every(302), post=every(302)),
    "account_confirm_email": page(READ, post=every(404), kwargs=lambda w: {"key": "not-a-key"}),
    "account_reset_password_from_key_done": page(READ),
    "account_reset_password_from_key": page(
        READ, post=READ, kwargs=lambda w: {"uidb36": "zz", "key": "not-a-key"}
    ),
    "account_reset_password_done": page(READ),
    # --- the admin's own pages (per-model pages: ADMIN_MODELS)
    "admin:index": page(staff_only(200), post=staff_only(200)),
    # Log-in happens on allauth's page (topicsite/urls.py: secure_admin_login): anonymous
    # requests go there, signed-in readers who are not staff are refused.
    "admin:login": page(
        {**every(302), "user": 403},
        # Signed in as staff, a POST is a fresh log-in attempt (here with an empty form).
        post={**every(200), "anonymous": 302, "user": 403},
    ),
    "admin:logout": page(staff_only(405), post=staff_only(200)),
    "admin:password_change": page(staff_only(200), post=staff_only(200)),
    "admin:password_change_done": page(staff_only(200), post=staff_only(405)),
    "admin:autocomplete": page(staff_only(403), post=staff_only(405)),
    "admin:jsi18n": page(staff_only(200), post=staff_only(405)),
    "admin:view_on_site": page(
        staff_only(302),
        post=staff_only(302),
        kwargs=lambda w: {
            "content_type_id": ContentType.objects.get_for_model(w["paper"]).pk,
            "object_id": w["paper"].pk,
        },
    ),
    "admin:app_list": page(
        {**staff_only(200), "staff": 404, "curator": 200},
        post={**staff_only(200), "staff": 404, "curator": 200},
        kwargs=lambda w: {"app_label": "topics"},
    ),
    # POST only; an empty form (no assignment, no decision) is a 400 naming what is missing.
    "admin:topics_assignment_quick_decide": page(
        {**staff_only(405), "staff": 405, "curator": 405},
        post={**staff_only(403), "curator": 400, "superuser": 400},
    ),
    "admin:topics_classifiermodel_retrain": page(
        {**staff_only(403), "curator": 405, "superuser": 405},
        post={**staff_only(403), "curator": 302, "superuser": 302},
    ),
    # --- the API: schema and docs
    # (AllowAny: every write method is 405, with or without credentials)
    "api:schema": api(
        READ, post=NOT_ALLOWED, put=NOT_ALLOWED, patch=NOT_ALLOWED, delete=NOT_ALLOWED
    ),
    "api:docs": api(READ, post=NOT_ALLOWED, put=NOT_ALLOWED, patch=NOT_ALLOWED, delete=NOT_ALLOWED),
    "api:redoc": api(
        READ, post=NOT_ALLOWED, put=NOT_ALLOWED, patch=NOT_ALLOWED, delete=NOT_ALLOWED
    ),
    # reads for anyone; writes need credentials (401), then the method is refused (405)
    "api:paper-list": api(READ),
    "api:paper-export-jsonl": api(READ),
    "api:paper-detail": api(READ, kwargs=lambda w: {"paper_id": w["paper"].arxiv_id}),
    "api:paper-similar": api(READ, kwargs=lambda w: {"paper_id": w["paper"].arxiv_id}),
    "api:paper-bibtex": api(READ, kwargs=lambda w: {"paper_id": w["paper"].arxiv_id}),
    "api:paper-authors": api(READ, kwargs=lambda w: {"paper_id": w["paper"].arxiv_id}),
    "api:paper-by-doi": api(
        READ, kwargs=lambda w: {"doi": f"10.48550/arXiv.{w['paper'].arxiv_id}"}
    ),
    "api:topic-list": api(READ),
    "api:topic-detail": api(READ, kwargs=lambda w: SLUG),
    "api:topic-papers": api(READ, kwargs=lambda w: SLUG),
    "api:topic-trend": api(READ, kwargs=lambda w: SLUG),
    "api:trends": api(READ),
    "api:topic-export-bibtex": api(READ, kwargs=lambda w: SLUG),
    "api:topic-export-csv": api(READ, kwargs=lambda w: SLUG),
    "api:topic-export-jsonl": api(READ, kwargs=lambda w: SLUG),
    "api:category-list": api(READ),
    "api:category-detail": api(READ, kwargs=lambda w: {"code": "cs.CL"}),
    "api:search": api(READ, query="q=agents"),
    "api:author-list": api(READ, query="q=ab"),
    "api:autocomplete": api(READ, query="q=ab"),
    "api:author-detail": api(READ, kwargs=lambda w: {"id": w["author"].pk}),
    "api:author-papers": api(READ, kwargs=lambda w: {"id": w["author"].pk}),
    "api:author-coauthors": api(READ, kwargs=lambda w: {"id": w["author"].pk}),
    "api:author-topics": api(READ, kwargs=lambda w: {"id": w["author"].pk}),
    # asking: anyone may POST a question (rate-limited; the empty body here is a 400 naming
    # the missing field); GET is refused
    "api:topic-ask": api(
        NOT_ALLOWED,
        post=every(400),
        put=NOT_ALLOWED,
        patch=NOT_ALLOWED,
        delete=NOT_ALLOWED,
        kwargs=lambda w: SLUG,
    ),
    # the user's own follows
    "api:me-follow-list": api(signed_in(200, anonymous=401), post=signed_in(400, anonymous=401)),
    "api:me-library-list": api(signed_in(200, anonymous=401), post=signed_in(400, anonymous=401)),
    "api:me-library-detail": api(
        signed_in(405, anonymous=401),
        patch=signed_in(404, anonymous=401),
        delete=signed_in(404, anonymous=401),
        kwargs=lambda w: {"pk": 999999},
    ),
    "api:me-for-you": api(signed_in(200, anonymous=401)),
    "api:me-follow-detail": api(
        signed_in(404, anonymous=401),
        patch=signed_in(404, anonymous=401),
        delete=signed_in(404, anonymous=401),
        kwargs=lambda w: {"pk": w["owner_follow"].pk},
    ),
    # curators' assignments; a method an endpoint does not offer is a 405 for anyone signed in
    "api:assignment-list": api(
        curators(200),
        post=curators(400),
    ),
    "api:assignment-detail": api(
        curators(200),
        kwargs=lambda w: {"pk": w["assignment"].pk},
    ),
    "api:assignment-accept": api(
        WRITE_REFUSED,
        post=curators(200),
        kwargs=lambda w: {"pk": w["assignment"].pk},
    ),
    "api:assignment-reject": api(
        WRITE_REFUSED,
        post=curators(200),
        kwargs=lambda w: {"pk": w["assignment"].pk},
    ),
    # the HTML page for API tokens
    "api:tokens": page(signed_in(200), post=signed_in(200)),
    "api:token_revoke": page(
        signed_in(405), post=signed_in(404), kwargs=lambda w: {"pk": w["owner_token"].pk}
    ),
    # any other address under /api/v1/
    "api:not-found": api(
        every(404),
        post=every(404),
        put=every(404),
        patch=every(404),
        delete=every(404),
        kwargs=lambda w: {"unmatched": "nothing/here/"},
    ),
}

# What the curator may do in the admin, per registered model ("app_label.model"): the
# "Curators" group's permissions (topics/migrations/0003_curators_group.py). Superusers may do
# everything the model admin offers; ``no_add``/``no_delete`` list models whose admin offers no
# add or delete page to anyone.
ADMIN_MODELS: dict[str, set[str]] = {
    "auth.group": set(),
    "auth.user": set(),
    "django_celery_beat.periodictask": set(),
    "django_celery_beat.clockedschedule": set(),
    "django_celery_beat.crontabschedule": set(),
    "django_celery_beat.solarschedule": set(),
    "django_celery_beat.intervalschedule": set(),
    "account.emailaddress": set(),
    "papers.harvestrun": set(),
    "papers.category": {"view"},
    "papers.author": {"view", "change"},
    "papers.affiliation": set(),
    "papers.paper": {"view"},
    "topics.topic": {"view", "add", "change"},
    "topics.assignment": {"view", "add", "change", "delete"},
    "topics.classifiermodel": {"view", "change"},
    "topics.emergingcluster": set(),
    "papers.paperduplicate": set(),
    "follows.follow": set(),
    "follows.searchmatch": set(),
    "digests.digest": set(),
    "api.apitoken": set(),
}
# Harvest runs, digests and classifier versions are made by the jobs, API tokens by their
# owners; runs and classifier versions stay as the record of what happened.
NO_ADD = {
    "api.apitoken",
    "digests.digest",
    "papers.harvestrun",
    "papers.paperduplicate",
    "topics.classifiermodel",
    "topics.emergingcluster",
}
NO_DELETE = {"papers.harvestrun", "topics.classifiermodel"}


# --- the world ----------------------------------------------------------------------------------


@pytest.fixture
def world(db):
    """The sample objects the routes name, the owner's private objects, and one user per
    role."""
    category = CategoryFactory(code="cs.CL")
    topic = TopicFactory(name="Matrix topic", slug="matrix-topic")
    paper = PaperFactory(primary_category=category)
    local_paper = PaperFactory(arxiv_id=None, import_key="matrix:1", primary_category=category)
    assignment = AssignmentFactory(paper=paper, topic=topic)
    owner = UserFactory()
    owner_follow = follow_create(user=owner, topic=topic)
    # Samples of models nothing else here makes, for the admin's change pages.
    ClockedSchedule.objects.create(clocked_time="2026-01-01T00:00:00Z")
    SolarSchedule.objects.create(event="sunrise", latitude=0, longitude=0)
    IntervalSchedule.objects.create(every=1, period=IntervalSchedule.HOURS)
    ClassifierModel.objects.create(version=1, artifact=b"")
    HarvestRun.objects.create(kind=HarvestRun.Kind.RECORDED)
    PaperDuplicate.objects.create(paper=local_paper, original=paper, similarity=0.9)
    EmergingCluster.objects.create(
        name="Matrix cluster",
        size=5,
        recent_count=4,
        previous_count=1,
        growth=4.0,
        window_start="2026-08-01",
        window_end="2026-09-29",
    )
    authorship = AuthorshipFactory(paper=paper)
    PaperAffiliationFactory(paper=paper)
    SearchMatch.objects.create(follow=owner_follow, paper=paper)
    Digest.objects.create(user=owner, period=Digest.Period.DAILY, period_end="2026-09-29")
    users = {
        "anonymous": None,
        "user": UserFactory(),
        "curator": UserFactory(is_staff=True),
        "staff": UserFactory(is_staff=True),
        "superuser": UserFactory(is_staff=True, is_superuser=True),
    }
    users["curator"].groups.add(Group.objects.get(name="Curators"))
    return {
        "category": category,
        "topic": topic,
        "paper": paper,
        "local_paper": local_paper,
        "author": authorship.author,
        "assignment": assignment,
        "owner": owner,
        "owner_follow": owner_follow,
        "owner_token": token_create(user=owner, name="owner's").token,
        "owner_feed_token": private_feed_token(state=feed_visit(user=owner)),
        "owner_unsubscribe_token": unsubscribe_token_make(user=owner, follow=owner_follow),
        "users": users,
    }


def client_for(world, role: str) -> Client:
    client = Client()
    if world["users"][role] is not None:
        client.force_login(world["users"][role])
    return client


def call(client: Client, method: str, url: str):
    kwargs = {}
    if method != "GET" and url.startswith("/api/"):
        kwargs = {"content_type": "application/json", "data": "{}"}
    return getattr(client, method.lower())(url, **kwargs)


def matrix(world, url: str, expect: dict[str, dict[str, int]]) -> list[str]:
    """Every role × method of ``expect`` against ``url``; the mismatches, one line each."""
    wrong = []
    for method, by_role in expect.items():
        for role in ROLES:
            response = call(client_for(world, role), method, url)
            if response.status_code != by_role[role]:
                wrong.append(
                    f"{method} {url} as {role}: {response.status_code}, expected {by_role[role]}"
                )
    return wrong


# --- the routes -------------------------------------------------------------------------------


def named_routes(patterns=None, namespace=None):
    """Every ``(view name, pattern)`` of the URLconf, namespaces joined with ``:``."""
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(entry, URLResolver):
            inner = namespace
            if entry.namespace:
                inner = f"{namespace}:{entry.namespace}" if namespace else entry.namespace
            yield from named_routes(entry.url_patterns, inner)
        elif isinstance(entry, URLPattern) and entry.name:
            yield (f"{namespace}:{entry.name}" if namespace else entry.name), entry


def admin_model_route(name: str) -> bool:
    suffixes = ("_changelist", "_add", "_change", "_delete", "_history")
    return name.startswith("admin:") and name.endswith(suffixes) and name.count("_") >= 2


def test_every_route_is_classified():
    names = {name for name, _ in named_routes() if not admin_model_route(name)}

    assert names - set(ROUTES) == set(), "routes missing from ROUTES"
    assert set(ROUTES) - names == set(), "ROUTES names routes that no longer exist"


def test_every_admin_model_is_classified():
    registered = {model._meta.label_lower for model in admin.site._registry}

    assert registered == set(ADMIN_MODELS)


@pytest.mark.parametrize("name", sorted(ROUTES))
def test_route_answers_each_role_as_expected(world, name):
    route = ROUTES[name]
    url = reverse(name, kwargs=route.kwargs(world))
    if route.query:
        url = f"{url}?{route.query}"

    wrong = matrix(world, url, route.expect)
    assert not wrong, "\n".join(wrong)


# --- the admin, model by model ------------------------------------------------------------------


def admin_expectations(label: str) -> dict[str, dict[str, int]]:
    """For one model: what each role gets from its changelist, add, change, history and delete
    pages (GET)."""
    curator = ADMIN_MODELS[label]
    seen = "view" in curator or "change" in curator

    def page(curator_may: bool, everyone_may: bool = True) -> dict[str, int]:
        return {
            "anonymous": 302,
            "user": 302,
            "staff": 403,
            "curator": 200 if curator_may and everyone_may else 403,
            "superuser": 200 if everyone_may else 403,
        }

    return {
        "changelist": page(seen),
        "add": page("add" in curator, label not in NO_ADD),
        "change": page(seen),
        "history": page(seen),
        "delete": page("delete" in curator, label not in NO_DELETE),
    }


@pytest.mark.parametrize("label", sorted(ADMIN_MODELS))
def test_admin_pages_answer_each_role_as_expected(world, label):
    model = next(m for m in admin.site._registry if m._meta.label_lower == label)
    sample = model._default_manager.order_by("pk").first()
    assert sample is not None, f"the world holds no {label} for its change page"
    info = (model._meta.app_label, model._meta.model_name)
    wrong = []
    for page_name, by_role in admin_expectations(label).items():
        args = [] if page_name in ("changelist", "add") else [sample.pk]
        url = reverse(f"admin:{info[0]}_{info[1]}_{page_name}", args=args)
        wrong += matrix(world, url, {"GET": by_role})

    assert not wrong, "\n".join(wrong)
