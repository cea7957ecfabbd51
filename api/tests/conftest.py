"""Fixtures for the read API: a small fixed world (fixed ids, dates and names) for golden
files, and helpers to compare responses with them; for the access side, a world of users with
tokens in each role (:func:`access_world`) and a client sending a token.

Golden files live in ``api/tests/golden/``. To regenerate them after an intended change::

    UPDATE_GOLDEN=1 .venv/bin/python -m pytest api/tests/test_golden.py

then review the diff (``git diff api/tests/golden``) before committing.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.contrib.auth.models import Group
from rest_framework.test import APIClient

from api.services import token_create, token_revoke
from follows.services import follow_create
from papers.models import Authorship, Category
from papers.tests.factories import (
    AffiliationFactory,
    AuthorFactory,
    CategoryFactory,
    PaperAffiliationFactory,
    PaperFactory,
)
from topics.models import Assignment, TopicRedirect
from topics.tests.factories import AssignmentFactory, TopicFactory, UserFactory

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"

CATEGORY_NAMES = {
    "cs.AI": ("Artificial Intelligence", "cs", "Computer Science", "grp_cs", "Computer Science"),
    "cs.CL": (
        "Computation and Language",
        "cs",
        "Computer Science",
        "grp_cs",
        "Computer Science",
    ),
    "cs.LG": ("Machine Learning", "cs", "Computer Science", "grp_cs", "Computer Science"),
    "hep-th": (
        "High Energy Physics - Theory",
        "hep-th",
        "High Energy Physics - Theory",
        "grp_physics",
        "Physics",
    ),
}


def make_category(code: str) -> Category:
    name, archive, archive_name, group, group_name = CATEGORY_NAMES[code]
    return CategoryFactory(
        code=code,
        name=name,
        archive=archive,
        archive_name=archive_name,
        group=group,
        group_name=group_name,
    )


def make_paper(*, authors=(), affiliations=(), cross_lists=(), topics=(), **fields):
    """A paper with ``authors`` as ``(name, [affiliation names])`` in order, paper
    ``affiliations`` in order, ``cross_lists`` codes and accepted assignments to ``topics``."""
    paper = PaperFactory(**fields)
    for position, (name, affiliation_names) in enumerate(authors):
        authorship = Authorship.objects.create(
            paper=paper, author=AuthorFactory(name=name), position=position
        )
        authorship.affiliations.set([AffiliationFactory(name=a) for a in affiliation_names])
    for position, name in enumerate(affiliations):
        PaperAffiliationFactory(
            paper=paper, affiliation=AffiliationFactory(name=name), position=position
        )
    paper.cross_lists.set([make_category(code) for code in cross_lists])
    for topic in topics:
        AssignmentFactory(paper=paper, topic=topic)
    return paper


@pytest.fixture
def api_client():
    return APIClient()


@pytest.fixture
def world(db):
    """Four categories, three topics (``llm`` > ``llm-agent-training``, ``robotics``), an old
    slug ``agent-training`` of the child, and four arXiv papers:

    - 2609.00001 (v2, cs.CL, cross-listed cs.AI cs.LG, 2026-09-29, updated 2026-09-30) in
      the child topic, a title full of TeX specials;
    - 2609.00002 (cs.AI, 2026-09-22) in the child, rejected in robotics;
    - 2608.00003 (cs.LG, 2026-08-03) in the parent, a title starting with "=";
    - hep-th/0601001 (v3, hep-th, 2006-01-02) withdrawn, in no topic.
    """
    for code in CATEGORY_NAMES:
        make_category(code)
    llm = TopicFactory(
        name="Large Language Model",
        short_name="LLM",
        slug="llm",
        description="Language models and what is built on them.",
    )
    agents = TopicFactory(name="LLM Agent Training", slug="llm-agent-training", parent=llm)
    robotics = TopicFactory(name="Robotics", slug="robotics")
    TopicRedirect.objects.create(old_slug="agent-training", topic=agents)

    first = make_paper(
        arxiv_id="2609.00001",
        latest_version=2,
        title="Agents & tools: 100% of {RL} with $x_1$ #1 ~ ^",
        abstract="We train language model agents with reinforcement learning on tool use.",
        primary_category=Category.objects.get(code="cs.CL"),
        submitted=dt.date(2026, 9, 29),
        updated=dt.date(2026, 9, 30),
        doi="10.1234/agents.2026",
        dois=["10.1234/agents.2026"],
        journal_ref="Journal of Agents 1 (2026) 1-10",
        authors=[
            ("Alice Able", ["University of Somewhere"]),
            ("Bob Baker", ["University of Somewhere", "Lab of Elsewhere"]),
        ],
        affiliations=["University of Somewhere", "Lab of Elsewhere"],
        cross_lists=["cs.LG", "cs.AI"],
        topics=[agents],
    )
    second = make_paper(
        arxiv_id="2609.00002",
        title="Memory for long-horizon agents",
        abstract="A memory module lets agents plan over many steps.",
        primary_category=Category.objects.get(code="cs.AI"),
        submitted=dt.date(2026, 9, 22),
        updated=None,
        authors=[("Carol Chen", ["Institute of Agents"])],
        affiliations=["Institute of Agents"],
        topics=[agents],
    )
    AssignmentFactory(paper=second, topic=robotics, state=Assignment.State.REJECTED)
    third = make_paper(
        arxiv_id="2608.00003",
        title='=HYPERLINK("http://evil.example") scaling laws for agents',
        abstract="Scaling laws of language models, measured.",
        primary_category=Category.objects.get(code="cs.LG"),
        submitted=dt.date(2026, 8, 3),
        updated=dt.date(2026, 8, 3),
        authors=[("@Dave Drake", []), ("Eve Evans", ["+Plus Institute"])],
        affiliations=["+Plus Institute"],
        topics=[llm],
    )
    old = make_paper(
        arxiv_id="hep-th/0601001",
        latest_version=3,
        title="Strings, withdrawn",
        abstract="This paper has been withdrawn by the author.",
        primary_category=Category.objects.get(code="hep-th"),
        submitted=dt.date(2006, 1, 2),
        updated=dt.date(2006, 3, 4),
        withdrawn=True,
        authors=[("Frank Field", [])],
    )
    return SimpleNamespace(
        llm=llm,
        agents=agents,
        robotics=robotics,
        first=first,
        second=second,
        third=third,
        old=old,
    )


def assert_golden(name: str, data) -> None:
    """``data`` equals ``golden/<name>.json``; with ``UPDATE_GOLDEN=1`` (re)write the file."""
    path = GOLDEN_DIR / f"{name}.json"
    text = json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        GOLDEN_DIR.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"{path} is missing; run with UPDATE_GOLDEN=1 to create it"
    expected = json.loads(path.read_text(encoding="utf-8"))
    assert json.loads(text) == expected


def ids(response) -> list[str]:
    """The paper ids of a list response, in order."""
    assert response.status_code == 200, response.content
    return [paper["id"] for paper in response.json()["results"]]


def assert_error(response, status: int, *, code: str | None = None, param: str | None = None):
    """``response`` is an error in the API's shape with ``status`` (and ``code``, and details
    naming ``param``); returns the error object."""
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert set(error) == {"status", "code", "message", "details"}
    assert error["status"] == status
    assert error["message"]
    if code is not None:
        assert error["code"] == code
    if param is not None:
        assert param in error["details"], error
        assert error["details"][param]
    return error


# --- the access side: tokens and roles ------------------------------------------------------


def token_client(key: str | None = None, *, scheme: str = "Bearer") -> APIClient:
    """A client sending ``Authorization: <scheme> <key>`` (no header without a key)."""
    client = APIClient()
    if key is not None:
        client.credentials(HTTP_AUTHORIZATION=f"{scheme} {key}")
    return client


def curator_user(**kwargs):
    """A new user in the Curators group."""
    user = UserFactory(**kwargs)
    user.groups.add(Group.objects.get(name="Curators"))
    return user


ROLES = ["anonymous", "owner", "other", "curator", "revoked", "bad"]


@pytest.fixture
def access_world(db):
    """An owner with a token, a follow and a revoked token; another user and a curator, each
    with a token; a topic, a paper and a machine-made assignment."""
    owner, other, curator = UserFactory(), UserFactory(), curator_user()
    topic = TopicFactory(slug="agents")
    keys = {
        "anonymous": None,
        "owner": token_create(user=owner, name="owner").key,
        "other": token_create(user=other, name="other").key,
        "curator": token_create(user=curator, name="curator").key,
        "bad": "x" * 43,
    }
    revoked = token_create(user=owner, name="revoked")
    token_revoke(token=revoked.token)
    keys["revoked"] = revoked.key
    follow = follow_create(user=owner, topic=TopicFactory(slug="owned"))
    assignment = AssignmentFactory(
        topic=topic, source=Assignment.Source.CLASSIFIER, score=0.4, state="pending"
    )
    return {
        "owner": owner,
        "other": other,
        "curator": curator,
        "topic": topic,
        "keys": keys,
        "follow": follow,
        "assignment": assignment,
        "paper": PaperFactory(arxiv_id="2609.99999"),
    }


def expect(status, *, anonymous=401, revoked=401, bad=401, **others):
    """The status each role in :data:`ROLES` gets: ``others`` by role name, and 401 for no,
    revoked or bad credentials unless given."""
    return {"anonymous": anonymous, "revoked": revoked, "bad": bad, **others}
