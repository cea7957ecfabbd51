"""Emerging topics (``topics/emerging.py``): which recent papers no topic fits, their clusters
with size, growth, name terms and examples, the command, the task's lock, and adopting a
cluster as a topic in the admin."""

from __future__ import annotations

import datetime as dt
from io import StringIO

import numpy as np
import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.urls import reverse

from papers.tests.factories import PaperFactory, embedding_near
from topics.emerging import (
    cluster_terms,
    cluster_vectors,
    emerging_cluster_adopt,
    emerging_clusters_refresh,
)
from topics.models import Assignment, EmergingCluster, Topic
from topics.services import topic_create
from topics.tasks import EMERGING_LOCK_KEY, find_emerging

from .factories import AssignmentFactory

pytestmark = pytest.mark.django_db

AS_OF = dt.date(2026, 11, 30)
DIMENSION = 16
ROBOTS = [
    (
        "Diffusion policy for robot manipulation from {n} demonstrations",
        "A diffusion policy learns robot manipulation skills; grasping and pushing tasks.",
    ),
    (
        "Scaling diffusion policy training for dexterous robot manipulation, part {n}",
        "We train a diffusion policy on robot manipulation data and report success rates.",
    ),
]
QUANTUM = [
    (
        "Surface code decoding with neural networks, study {n}",
        "Quantum error correction with the surface code: a decoder for logical qubits.",
    ),
    (
        "Lattice surgery on the surface code, experiment {n}",
        "Surface code quantum error correction keeps logical qubits below threshold.",
    ),
]


def _embedded(title, abstract, direction, rng, *, submitted):
    paper = PaperFactory(title=title, abstract=abstract, submitted=submitted)
    return embedding_near(paper, direction, rng, scale=0.08)


@pytest.fixture
def recent_papers():
    """Eight robot papers (six in the last four weeks, two in the four before), five quantum
    ones (all older than four weeks), two robot papers already in a topic, one robot paper
    outside the window and three stray papers, each with an embedding."""
    rng = np.random.default_rng(7)
    axes = np.eye(DIMENSION)
    robots, quantum = axes[0], axes[1]
    papers = {"robots": [], "quantum": [], "fitted": [], "old": [], "stray": []}
    for n in range(8):
        title, abstract = ROBOTS[n % 2]
        days = 3 * n if n < 6 else 35 + n
        papers["robots"].append(
            _embedded(
                title.format(n=n), abstract, robots, rng, submitted=AS_OF - dt.timedelta(days)
            )
        )
    for n in range(5):
        title, abstract = QUANTUM[n % 2]
        papers["quantum"].append(
            _embedded(
                title.format(n=n), abstract, quantum, rng, submitted=AS_OF - dt.timedelta(30 + n)
            )
        )
    topic = topic_create(name="Robotics")
    for n, state in enumerate(("accepted", "pending")):
        paper = _embedded(
            f"Diffusion policy robot manipulation {n}",
            ROBOTS[0][1],
            robots,
            rng,
            submitted=AS_OF - dt.timedelta(2),
        )
        AssignmentFactory(paper=paper, topic=topic, state=state)
        papers["fitted"].append(paper)
    papers["old"].append(
        _embedded(
            "Diffusion policy robot manipulation, old",
            ROBOTS[0][1],
            robots,
            rng,
            submitted=AS_OF - dt.timedelta(weeks=9),
        )
    )
    for n in range(3):
        papers["stray"].append(
            _embedded(
                f"Stray paper {n} on galaxies",
                "Galaxies rotate.",
                axes[2 + n],
                rng,
                submitted=AS_OF - dt.timedelta(5),
            )
        )
    return papers


def _members(cluster):
    return set(cluster.members.values_list("paper_id", flat=True))


def test_clusters_of_unfitted_recent_papers_with_size_growth_terms_and_examples(recent_papers):
    clusters = emerging_clusters_refresh(as_of=AS_OF)

    assert len(clusters) == 2
    robots, quantum = clusters  # growing first
    assert _members(robots) == {p.pk for p in recent_papers["robots"]}
    assert _members(quantum) == {p.pk for p in recent_papers["quantum"]}
    assert (robots.size, robots.recent_count, robots.previous_count) == (8, 6, 2)
    assert robots.growth == pytest.approx(7 / 3)
    assert (quantum.recent_count, quantum.previous_count) == (0, 5)
    assert quantum.growth == pytest.approx(1 / 6)
    assert robots.terms[:2] == ["diffusion policy", "robot manipulation"]
    assert robots.name == "Diffusion policy, robot manipulation"
    assert "surface code" in quantum.terms[:3]
    assert len(robots.example_titles) == 5
    assert set(robots.example_titles) <= {p.title for p in recent_papers["robots"]}
    assert (robots.window_start, robots.window_end) == (AS_OF - dt.timedelta(days=55), AS_OF)


def test_recomputing_replaces_clusters_but_keeps_adopted_ones(recent_papers, admin_user):
    first = emerging_clusters_refresh(as_of=AS_OF)
    emerging_cluster_adopt(cluster=first[1], name="Surface codes", parent=None, user=admin_user)
    again = emerging_clusters_refresh(as_of=AS_OF)
    # The quantum papers are now accepted in the new topic: only the robots cluster is new.
    assert [c.size for c in again] == [8]
    assert EmergingCluster.objects.count() == 2
    assert EmergingCluster.objects.filter(adopted_topic__name="Surface codes").exists()
    before = [(_members(c), c.terms, c.growth) for c in again]
    third = emerging_clusters_refresh(as_of=AS_OF)
    assert [(_members(c), c.terms, c.growth) for c in third] == before
    assert EmergingCluster.objects.count() == 2


def test_adopting_makes_a_topic_with_the_papers_as_curator_labels(recent_papers, admin_user):
    robots = emerging_clusters_refresh(as_of=AS_OF)[0]
    parent = topic_create(name="Machine learning")
    topic = emerging_cluster_adopt(
        cluster=robots, name="Diffusion policies", parent=parent, user=admin_user
    )
    assert topic.path == f"{parent.pk}/{topic.pk}/"
    assert "diffusion policy" in topic.description
    labels = Assignment.objects.filter(topic=topic)
    assert set(labels.values_list("paper_id", flat=True)) == _members(robots)
    assert set(labels.values_list("source", "state", "decided_by")) == {
        ("curator", "accepted", admin_user.pk)
    }
    robots.refresh_from_db()
    assert (robots.adopted_topic, robots.adopted_by) == (topic, admin_user)
    with pytest.raises(ValueError, match="adopted already"):
        emerging_cluster_adopt(cluster=robots, name="Again", parent=None, user=admin_user)
    assert not Topic.objects.filter(name="Again").exists()


def test_a_blank_name_adopts_nothing(recent_papers, admin_user):
    robots = emerging_clusters_refresh(as_of=AS_OF)[0]
    with pytest.raises(ValueError, match="needs a name"):
        emerging_cluster_adopt(cluster=robots, name="  ", parent=None, user=admin_user)
    robots.refresh_from_db()
    assert robots.adopted_topic is None
    assert not Assignment.objects.filter(source="curator").exists()


def test_admin_lists_shows_and_adopts_a_cluster(recent_papers, admin_client):
    robots = emerging_clusters_refresh(as_of=AS_OF)[0]
    parent = topic_create(name="Machine learning")
    changelist = reverse("admin:topics_emergingcluster_changelist")
    listing = admin_client.get(changelist).content.decode()
    assert "Diffusion policy, robot manipulation" in listing and "2.3×" in listing
    detail = admin_client.get(reverse("admin:topics_emergingcluster_change", args=[robots.pk]))
    assert recent_papers["robots"][0].identifier in detail.content.decode()

    form = admin_client.post(changelist, {"action": "adopt", "_selected_action": [robots.pk]})
    assert form.status_code == 200
    assert 'value="Diffusion policy, robot manipulation"' in form.content.decode()
    response = admin_client.post(
        changelist,
        {
            "action": "adopt",
            "_selected_action": [robots.pk],
            "apply": "Apply",
            "name": "Diffusion policies for robots",
            "parent": parent.pk,
        },
    )
    topic = Topic.objects.get(name="Diffusion policies for robots")
    assert response.status_code == 302
    assert response.url == reverse("admin:topics_topic_change", args=[topic.pk])
    assert topic.parent == parent
    assert Assignment.objects.filter(topic=topic, source="curator").count() == 8


def test_admin_refuses_a_blank_name_and_two_clusters(recent_papers, admin_client):
    clusters = emerging_clusters_refresh(as_of=AS_OF)
    changelist = reverse("admin:topics_emergingcluster_changelist")
    response = admin_client.post(
        changelist,
        {"action": "adopt", "_selected_action": [clusters[0].pk], "apply": "Apply", "name": ""},
    )
    assert response.status_code == 200 and "This field is required" in response.content.decode()
    response = admin_client.post(
        changelist,
        {"action": "adopt", "_selected_action": [c.pk for c in clusters]},
        follow=True,
    )
    assert "Select exactly one cluster" in response.content.decode()
    assert Topic.objects.count() == 1  # Robotics, from the fixture


def test_command_prints_clusters_and_refuses_bad_options(recent_papers, capsys):
    call_command("find_emerging", "--as-of", AS_OF.isoformat())
    out = capsys.readouterr().out
    assert "2 emerging clusters." in out and "diffusion policy" in out
    with pytest.raises(CommandError, match="distance_threshold must be between 0 and 2"):
        call_command("find_emerging", "--distance-threshold", "3")
    with pytest.raises(CommandError, match="weeks must be at least 1"):
        call_command("find_emerging", "--weeks", "0")
    assert EmergingCluster.objects.count() == 2  # nothing replaced by the refused runs


@pytest.mark.parametrize(
    "options",
    [["--weeks", "99999999999"], ["--as-of", "0001-01-01"], ["--as-of", "0001-02-01"]],
)
def test_command_refuses_a_window_before_year_one(recent_papers, options):
    """A window (or the growth comparison's eight weeks) reaching before 0001-01-01 is a
    one-line error naming it, not an OverflowError traceback; nothing is replaced."""
    call_command("find_emerging", "--as-of", AS_OF.isoformat(), stdout=StringIO())
    with pytest.raises(CommandError, match="reaches before year 1"):
        call_command("find_emerging", *options)
    assert EmergingCluster.objects.count() == 2


def test_task_runs_one_at_a_time(recent_papers):
    cache.set(EMERGING_LOCK_KEY, "running", 60)
    try:
        assert find_emerging.delay().get() is None
    finally:
        cache.delete(EMERGING_LOCK_KEY)
    assert not EmergingCluster.objects.exists()


def test_cluster_helpers_refuse_bad_input_and_handle_little_text():
    with pytest.raises(ValueError, match="min_size must be at least 2"):
        cluster_vectors(np.eye(3, dtype="f4"), distance_threshold=0.5, min_size=1)
    assert cluster_vectors(np.eye(3, dtype="f4"), distance_threshold=0.5, min_size=2) == []
    assert cluster_terms(["one", "two"], [[0, 1]]) == [[]]


def test_beat_recomputes_the_clusters_weekly():
    from django_celery_beat.models import PeriodicTask

    task = PeriodicTask.objects.get(task="topics.tasks.find_emerging")
    assert task.enabled and task.crontab.day_of_week == "1"


def test_terms_are_written_as_the_papers_write_them_without_plural_repeats():
    documents = [
        "QCD sum rules for galaxies and the X-ray galaxy survey",
        "Lattice QCD and X-ray galaxies",
        "QCD at finite density; galaxy X-ray counts",
        "Protein folding with neural networks",
        "Neural networks for protein structure",
    ]
    terms = cluster_terms(documents, [[0, 1, 2], [3, 4]])
    assert sorted(terms[0][:3]) == ["QCD", "X-ray", "galaxies"]
    assert "galaxy" not in terms[0]
    assert terms[1][:2] == ["neural networks", "protein"]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("machine LEARNING", "A topic is named &#x27;Machine learning&#x27; already"),
        ("Robots\nand more", None),
        ("\u202eevil", "invisible characters: U+202E"),
    ],
)
def test_admin_refuses_another_topics_name_and_invisible_characters(
    recent_papers, admin_client, name, message
):
    robots = emerging_clusters_refresh(as_of=AS_OF)[0]
    topic_create(name="Machine learning")
    changelist = reverse("admin:topics_emergingcluster_changelist")
    response = admin_client.post(
        changelist,
        {"action": "adopt", "_selected_action": [robots.pk], "apply": "Apply", "name": name},
    )
    if message is None:  # a newline is whitespace: the name becomes one line
        assert response.status_code == 302
        assert Topic.objects.filter(name="Robots and more").exists()
        return
    assert response.status_code == 200
    assert message in response.content.decode()
    robots.refresh_from_db()
    assert robots.adopted_topic is None
