"""Management commands: ``import_reference_page``, ``load_demo_taxonomy`` and ``tag``."""

import copy
import datetime as dt
import json
from io import StringIO
from pathlib import Path

import pytest
from celery.signals import task_prerun
from django.core.management import CommandError, call_command
from django.utils.text import slugify

from papers.categories import category_sync
from papers.models import (
    Affiliation,
    Author,
    Authorship,
    Category,
    Paper,
    PaperAffiliation,
)
from papers.tests.factories import PaperFactory
from topics.assignments import assignment_decide
from topics.cards import paper_cards
from topics.importers import reference
from topics.importers.demo import DEMO_REFERENCE_RULES
from topics.models import Assignment, Topic
from topics.services import topic_move
from topics.tagging.rules import compile_rule
from topics.tests.factories import TopicFactory, UserFactory
from topicsite.celery import app as celery_app

pytestmark = pytest.mark.django_db

REFERENCE_FILE = Path(__file__).resolve().parents[1] / "data" / "llm-agent-training.json"
REFERENCE = json.loads(REFERENCE_FILE.read_text(encoding="utf-8"))
MODELS = (Topic, Paper, Author, Affiliation, Authorship, PaperAffiliation, Assignment)


def database_state():
    """Every row of every model the import writes, plus the topic rule categories."""
    state = {model.__name__: list(model.objects.order_by("pk").values()) for model in MODELS}
    state["rule_categories"] = sorted(
        Topic.rule_categories.through.objects.values_list("topic_id", "category_id")
    )
    return state


def run(*args):
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.fixture
def categories():
    category_sync()
    return {category.code: category for category in Category.objects.all()}


def write_json(tmp_path, data, name="page.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


# --- import_reference_page ------------------------------------------------------------------


def test_import_reference_page_creates_topics_papers_and_assignments(categories):
    output = run("import_reference_page")

    vocabulary = REFERENCE["topic_vocabulary"]
    assert len(vocabulary) == 58
    # The 58 named topics plus their parent "Large Language Model", which the vocabulary lacks.
    assert Topic.objects.count() == 59
    assert set(Topic.objects.exclude(slug="llm").values_list("name", flat=True)) == set(vocabulary)
    parent = Topic.objects.get(slug="llm")
    assert (parent.name, parent.short_name, parent.parent, parent.path) == (
        "Large Language Model",
        "LLM",
        None,
        f"{parent.pk}/",
    )
    assert parent.display_name == "LLM: Large Language Model"
    page = Topic.objects.get(slug="llm-agent-training")
    assert (page.name, page.parent, page.path) == (
        "LLM Agent Training",
        parent,
        f"{parent.pk}/{page.pk}/",
    )
    others = Topic.objects.exclude(pk__in=[parent.pk, page.pk])
    assert others.count() == 57
    for topic in others:
        assert (topic.parent, topic.path, topic.slug) == (None, f"{topic.pk}/", slugify(topic.name))

    assert Paper.objects.count() == 30
    assert not Paper.objects.filter(arxiv_id__isnull=False).exists()
    assert all(
        key.startswith("reference:") for key in Paper.objects.values_list("import_key", flat=True)
    )
    assert Assignment.objects.count() == 114
    assert set(Assignment.objects.values_list("source", "state", "score", "decided_by")) == {
        ("import", "accepted", None, None)
    }
    for item in REFERENCE["papers"]:
        paper = Paper.objects.get(title=item["title"])
        assert set(paper.assignments.values_list("topic__name", flat=True)) == set(item["topics"])
        assert paper.primary_category.code == item["primary_category"]
        assert paper.submitted == dt.date.fromisoformat(item["published"])
    assert "Topics: 59 created" in output and "Papers: 30 created" in output
    assert "Assignments: 114 created" in output


def test_import_reference_page_stores_the_card_of_the_first_paper(categories):
    run("import_reference_page")

    paper = Paper.objects.get(title__startswith="AnthroDial")
    assert paper.abstract == paper.abstract_raw
    assert paper.source == "reference"
    (card,) = paper_cards(paper_ids=[paper.pk])
    assert card.submitted == dt.date(2026, 9, 29)
    assert card.primary_category == "cs.CL"
    assert card.abstract.startswith("Large language models (LLMs) are increasingly deployed")
    assert card.authors == [
        "Wentao Liu",
        "Xi Chen",
        "Siyu Song",
    ]
    assert card.affiliations == [
        "Shanghai Institute of Innovation",
        "University of Science and Technology of China",
        "East China Normal University",
    ]
    # Cards read "+13" authors and "+9" affiliations.
    assert (card.more_authors, card.more_affiliations) == (13, 9)


def test_import_reference_page_twice_changes_nothing(categories):
    run("import_reference_page")
    first = database_state()

    output = run("import_reference_page", str(REFERENCE_FILE))

    assert database_state() == first
    assert "Topics: 0 created, 0 updated, 59 unchanged" in output
    assert "Papers: 0 created, 0 updated, 30 unchanged" in output
    assert "Assignments: 0 created, 0 updated, 0 removed" in output


def test_reimport_keeps_curator_decisions_and_curated_hierarchy(categories):
    run("import_reference_page")
    curator = UserFactory()
    rejected = Assignment.objects.filter(topic__slug="llm-agent-training").first()
    assignment_decide(assignment=rejected, state="rejected", user=curator)
    moved = Topic.objects.get(slug="agentic-rl")
    topic_move(topic=moved, parent=Topic.objects.get(slug="llm"))
    before = database_state()

    run("import_reference_page")

    assert database_state() == before
    rejected.refresh_from_db()
    assert (rejected.state, rejected.decided_by) == ("rejected", curator)


def test_reimport_keeps_curator_renames_and_merges(categories):
    from topics.services import topic_merge, topic_rename

    run("import_reference_page")
    curator = UserFactory()
    renamed = topic_rename(
        topic=Topic.objects.get(slug="llm-agent-training"),
        name="LLM Agent Training X",
        user=curator,
    )
    merged_away = Topic.objects.get(slug="ai-agent-benchmarks")
    topic_merge(source=merged_away, target=renamed, user=curator)
    before = database_state()
    topics_before = Topic.objects.count()

    run("import_reference_page")

    assert Topic.objects.count() == topics_before
    assert not Topic.objects.filter(slug="llm-agent-training").exists()
    assert not Assignment.objects.filter(topic=merged_away).exists()
    assert database_state() == before


def test_reimport_of_changed_data_updates_only_what_changed(categories, tmp_path):
    run("import_reference_page")
    data = copy.deepcopy(REFERENCE)
    first = data["papers"][0]
    dropped_topic = first["topics"].pop()  # "LLM Agent Harnesses"
    first["authors_shown"] = ["Xi Chen", "Wentao Liu", "Siyu Song"]
    first["authors_more"] = 14
    untouched = Paper.objects.exclude(title=first["title"]).order_by("pk")
    untouched_before = list(untouched.values())

    output = run("import_reference_page", str(write_json(tmp_path, data)))

    paper = Paper.objects.get(title=first["title"])
    assert paper.author_count == 17
    assert list(paper.authorships.values_list("author__name", flat=True)) == first["authors_shown"]
    assert dropped_topic not in set(paper.assignments.values_list("topic__name", flat=True))
    assert Assignment.objects.count() == 113
    # The topic itself stays: another paper or a curator may use it.
    assert Topic.objects.filter(name=dropped_topic).exists()
    assert list(untouched.values()) == untouched_before
    assert "Papers: 0 created, 1 updated, 29 unchanged" in output
    assert "Assignments: 0 created, 0 updated, 1 removed" in output


def test_import_reference_page_turns_a_machine_assignment_into_an_import(categories):
    run("import_reference_page")
    assignment = Assignment.objects.filter(topic__slug="llm-agent-training").first()
    Assignment.objects.filter(pk=assignment.pk).update(source="rule", score=1.0)

    run("import_reference_page")

    assignment.refresh_from_db()
    assert (assignment.source, assignment.state, assignment.score) == ("import", "accepted", None)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d["papers"][3].pop("abstract"), "papers[3]: missing field 'abstract'"),
        (
            lambda d: d["papers"][7].update(published="2026-09-31"),
            "papers[7].published: '2026-09-31' is not a date (YYYY-MM-DD)",
        ),
        (
            lambda d: d["papers"][2].update(authors_more="13"),
            "papers[2].authors_more: expected int, got '13'",
        ),
        (
            lambda d: d["papers"][5].update(topics=["Agentic RL", "Quantum Agents"]),
            "papers[5].topics[1]: 'Quantum Agents' is not in topic_vocabulary",
        ),
        (
            lambda d: d["papers"][4].update(title=d["papers"][1]["title"]),
            "papers[4].title: same title as papers[1]",
        ),
        (
            lambda d: d["papers"][6].update(primary_category="cs.XX"),
            "papers[6].primary_category: 'cs.XX' is not an arXiv category",
        ),
        (lambda d: d["papers"].__setitem__(9, "a paper"), "papers[9]: expected an object"),
        (lambda d: d.pop("topic_vocabulary"), "document: missing field 'topic_vocabulary'"),
    ],
)
def test_a_malformed_file_names_the_paper_and_field_and_writes_nothing(
    categories, tmp_path, change, expected
):
    data = copy.deepcopy(REFERENCE)
    change(data)
    path = write_json(tmp_path, data)
    before = database_state()

    with pytest.raises(CommandError) as caught:
        run("import_reference_page", str(path))

    assert str(caught.value) == f"{path}: {expected}"
    assert database_state() == before


def test_bad_json_names_the_file_and_position_and_writes_nothing(categories, tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"topic": {"name": "LLM Agent Training",\n  "parent": }', encoding="utf-8")

    with pytest.raises(CommandError) as caught:
        run("import_reference_page", str(path))

    assert str(caught.value).startswith(f"{path}: not valid JSON at line 2, column 13")
    assert not Topic.objects.exists()


def test_a_missing_file_is_a_command_error(tmp_path):
    with pytest.raises(CommandError, match="cannot read"):
        run("import_reference_page", str(tmp_path / "nowhere.json"))


def test_missing_categories_ask_for_load_categories_and_write_nothing():
    with pytest.raises(CommandError) as caught:
        run("import_reference_page")

    message = str(caught.value)
    assert "cs.AI, cs.CL, cs.IR, cs.LG" in message
    assert "load_categories" in message
    assert all(not model.objects.exists() for model in MODELS)


def test_a_failure_while_writing_leaves_nothing_written(categories, monkeypatch):
    def fail(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(reference, "_reference_assignments_sync", fail)

    with pytest.raises(RuntimeError, match="disk full"):
        run("import_reference_page")

    assert all(not model.objects.exists() for model in MODELS)


# --- load_demo_taxonomy ---------------------------------------------------------------------


@pytest.fixture
def stored_papers(categories):
    """Real categories: a hep-th paper, a cs.CL paper cross-listed to hep-ph, an astro-ph.GA one."""
    theory = PaperFactory(title="Flux vacua", primary_category=categories["hep-th"])
    language = PaperFactory(title="Parsing", primary_category=categories["cs.CL"])
    language.cross_lists.add(categories["hep-ph"])
    galaxies = PaperFactory(title="Galaxy halos", primary_category=categories["astro-ph.GA"])
    return [theory, language, galaxies]


def test_load_demo_taxonomy_builds_a_topic_per_archive_under_its_group(stored_papers):
    output = run("load_demo_taxonomy")

    physics = Topic.objects.get(name="Physics", parent=None)
    assert set(physics.children.values_list("name", flat=True)) == {
        "High Energy Physics - Theory",
        "High Energy Physics - Phenomenology",
        "Astrophysics",
    }
    theory = Topic.objects.get(name="High Energy Physics - Theory")
    assert (theory.parent, theory.path, theory.slug) == (
        physics,
        f"{physics.pk}/{theory.pk}/",
        "high-energy-physics-theory",
    )
    assert list(theory.rule_categories.values_list("code", flat=True)) == ["hep-th"]
    assert theory.rule_query == ""
    astro = Topic.objects.get(name="Astrophysics")
    assert set(astro.rule_categories.values_list("code", flat=True)) == set(
        Category.objects.filter(archive="astro-ph").values_list("code", flat=True)
    )
    # The six astro-ph.* categories and the legacy archive-wide "astro-ph" of older papers.
    assert astro.rule_categories.count() == 7
    # "Computer Science" is both the archive and the group: one topic carries the rule.
    cs = Topic.objects.get(name="Computer Science")
    assert cs.parent is None and not cs.children.exists()
    assert cs.rule_categories.filter(code="cs.CL").exists()
    assert not cs.rule_categories.exclude(archive="cs").exists()
    assert not physics.rule_categories.exists()
    assert Topic.objects.count() == 5
    assert "Archives among stored papers: 4." in output
    assert "2 groups, 3 archives" in output
    assert "Run `manage.py tag --all`" in output


def test_the_demo_asks_load_demo_taxonomy_not_to_suggest_the_tagging_it_runs_next(
    stored_papers,
):
    output = run("load_demo_taxonomy", "--no-tag-hint")
    assert "2 groups, 3 archives" in output and "tag --all" not in output


def test_load_demo_taxonomy_twice_changes_nothing(stored_papers):
    run("load_demo_taxonomy")
    first = database_state()

    output = run("load_demo_taxonomy")

    assert database_state() == first
    assert "0 groups, 0 archives. Rules set or changed: 0." in output


def test_demo_slugs_do_not_take_existing_slugs(stored_papers):
    reference = TopicFactory(name="Physics of agents", slug="physics")

    run("load_demo_taxonomy")

    physics = Topic.objects.get(name="Physics", parent=None)
    assert physics.slug == "physics-2"
    assert Topic.objects.get(pk=reference.pk).name == "Physics of agents"


def test_demo_taxonomy_then_tag_all_puts_every_paper_on_a_topic(
    stored_papers, django_capture_on_commit_callbacks
):
    run("load_demo_taxonomy")
    with django_capture_on_commit_callbacks(execute=True):
        run("tag", "--all")

    assert set(Assignment.objects.values_list("paper__title", "topic__name")) == {
        ("Flux vacua", "High Energy Physics - Theory"),
        ("Parsing", "Computer Science"),
        ("Parsing", "High Energy Physics - Phenomenology"),
        ("Galaxy halos", "Astrophysics"),
    }


def test_demo_taxonomy_gives_reference_topics_rules_only_where_they_have_none(categories):
    run("import_reference_page")
    curated = Topic.objects.get(slug="knowledge-distillation")
    curated.rule_query = "distillation"
    curated.save()

    run("load_demo_taxonomy")

    rules = dict(Topic.objects.exclude(rule_query="").values_list("name", "rule_query"))
    assert rules["Knowledge Distillation"] == "distillation"
    assert rules["Reinforcement Learning"] == '"reinforcement learning"'
    assert set(rules) == set(DEMO_REFERENCE_RULES)
    assert Topic.objects.get(slug="llm-agent-training").rule_query == ""


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("Reinforcement Learning", "Deep reinforcement learning for control", True),
        ("Reinforcement Learning", "Reinforcement of concrete and learning curves", False),
        ("Knowledge Distillation", "Knowledge distillation from a teacher", True),
        ("Low-Rank Adaptation", "Low-Rank Adaptation of large language models", True),
        ("Low-Rank Adaptation", "LoRa radio networks", False),
        ("Supervised Fine-Tuning", "supervised fine-tuning on chat data", True),
        ("Reinforcement Learning with Verifiable Rewards", "RLVR for math reasoning", True),
        ("Reinforcement Learning with Verifiable Rewards", "reward models", False),
        ("GUI Agents", "A GUI agent for Android", True),
        ("GUI Agents", "A GUI for agent debugging", False),
        ("Procedural Content Generation", "Procedural content generation for games", True),
    ],
)
def test_demo_reference_rules_mean_what_their_topics_say(name, text, expected):
    assert compile_rule(DEMO_REFERENCE_RULES[name]).matches(text) is expected


# --- tag ------------------------------------------------------------------------------------


@pytest.fixture
def sent_tasks():
    """Paper id lists of every tag_papers run (eager in tests), in order."""
    runs = []

    def record(sender=None, args=None, **kwargs):
        if sender.name == "topics.tasks.tag_papers":
            runs.append(list(args[0]))

    task_prerun.connect(record, weak=False)
    yield runs
    task_prerun.disconnect(record)


def test_tag_ids_queues_and_runs_tagging(
    categories, sent_tasks, django_capture_on_commit_callbacks
):
    topic = TopicFactory(name="Theory")
    topic.rule_categories.add(categories["hep-th"])
    first = PaperFactory(primary_category=categories["hep-th"])
    second = PaperFactory(primary_category=categories["hep-th"])
    third = PaperFactory(primary_category=categories["hep-th"])

    with django_capture_on_commit_callbacks(execute=True):
        output = run("tag", "--ids", f"{first.pk}, {third.pk}")

    assert sent_tasks == [[first.pk, third.pk]]
    assert set(Assignment.objects.values_list("paper", flat=True)) == {first.pk, third.pk}
    assert not second.assignments.exists()
    assert "Tagged 2 papers in 1 chunks" in output


def test_tag_all_queues_chunks_of_a_thousand(
    categories, sent_tasks, django_capture_on_commit_callbacks
):
    category = categories["cs.CL"]
    Paper.objects.bulk_create(
        [
            Paper(
                arxiv_id=f"2609.{n:05d}",
                title=f"Paper {n}",
                primary_category=category,
                submitted=dt.date(2026, 9, 1),
            )
            for n in range(2001)
        ]
    )
    topic = TopicFactory(name="CL")
    topic.rule_categories.add(category)

    with django_capture_on_commit_callbacks(execute=True):
        output = run("tag", "--all")

    assert [len(ids) for ids in sent_tasks] == [1000, 1000, 1]
    assert sorted(id for ids in sent_tasks for id in ids) == sorted(
        Paper.objects.values_list("pk", flat=True)
    )
    assert Assignment.objects.filter(topic=topic).count() == 2001
    assert "Tagged 2001 papers in 3 chunks" in output


def test_tag_waits_for_the_transaction_to_commit(categories, django_capture_on_commit_callbacks):
    topic = TopicFactory(name="Theory")
    topic.rule_categories.add(categories["hep-th"])
    paper = PaperFactory(primary_category=categories["hep-th"])

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        run("tag", "--ids", str(paper.pk))
    assert not Assignment.objects.exists()

    for callback in callbacks:
        callback()
    assert Assignment.objects.filter(paper=paper, topic=topic).exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "one of the arguments --all --ids is required"),
        (("--all", "--ids", "1"), "not allowed with argument"),
        (("--ids", "1,x"), "expected paper ids separated by commas"),
        (("--ids", ","), "names no paper"),
    ],
)
def test_tag_refuses_bad_arguments(args, message):
    with pytest.raises(CommandError, match=message):
        run("tag", *args)


def test_tag_tasks_go_to_the_tag_queue():
    route = celery_app.amqp.router.route({}, "topics.tasks.tag_papers")
    assert route["queue"].name == "tag"


# --- import_reference_page: hostile data ----------------------------------------------------


def _set_author(d, name):
    d["papers"][2]["authors_shown"][1] = name


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda d: _set_author(d, "A" * 301),
            "papers[2].authors_shown[1]: longer than 300 characters",
        ),
        (
            lambda d: d["papers"][3]["affiliations_shown"].__setitem__(0, "U" * 501),
            "papers[3].affiliations_shown[0]: longer than 500 characters",
        ),
        (
            lambda d: d["papers"][4].update(authors_more=10**12),
            "papers[4].authors_more: 1000000000000 is too large (shown and more together "
            "at most 2147483647)",
        ),
        (
            lambda d: d["papers"][5].update(title="A title\x00with a NUL"),
            "papers[5].title: contains a NUL character",
        ),
        (
            lambda d: d["papers"][5].update(abstract="An abstract\x00"),
            "papers[5].abstract: contains a NUL character",
        ),
        (
            lambda d: _set_author(d, "Ada\x00Lovelace"),
            "papers[2].authors_shown[1]: contains a NUL character",
        ),
        (
            lambda d: d["topic_vocabulary"].append("T" * 201),
            "document.topic_vocabulary[58]: longer than 200 characters",
        ),
        (
            lambda d: d["topic"]["parent"].update(abbreviation="L" * 33),
            "topic.parent.abbreviation: longer than 32 characters",
        ),
        (
            lambda d: d["topic"]["parent"].update(name="P" * 201),
            "topic.parent.name: longer than 200 characters",
        ),
    ],
)
def test_oversized_or_out_of_range_data_names_the_paper_and_field_and_writes_nothing(
    categories, tmp_path, change, expected
):
    data = copy.deepcopy(REFERENCE)
    change(data)
    path = write_json(tmp_path, data)
    before = database_state()

    with pytest.raises(CommandError) as caught:
        run("import_reference_page", str(path))

    assert str(caught.value) == f"{path}: {expected}"
    assert database_state() == before


def test_json_nested_too_deeply_is_a_command_error_naming_the_file(categories, tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    before = database_state()

    with pytest.raises(CommandError) as caught:
        run("import_reference_page", str(path))

    assert str(caught.value) == f"{path}: JSON nested too deeply to read"
    assert database_state() == before


def test_a_repeated_affiliation_is_stored_once_at_its_first_position(categories, tmp_path):
    data = copy.deepcopy(REFERENCE)
    item = data["papers"][0]
    first, second = item["affiliations_shown"][:2]
    item["affiliations_shown"] = [first, second, first]
    path = write_json(tmp_path, data)

    run("import_reference_page", str(path))

    paper = Paper.objects.get(title=item["title"])
    assert list(
        paper.paper_affiliations.order_by("position").values_list("affiliation__name", "position")
    ) == [(first, 0), (second, 1)]
    assert paper.affiliation_count == 2 + item["affiliations_more"]
    before = database_state()
    assert "Papers: 0 created, 0 updated, 30 unchanged" in run("import_reference_page", str(path))
    assert database_state() == before


def test_topic_names_without_latin_letters_import_with_stable_slugs(categories, tmp_path):
    data = copy.deepcopy(REFERENCE)
    data["topic_vocabulary"] += ["中文主题", "!!!", "Ünïcödé Tópic"]
    data["papers"][1]["topics"] += ["中文主题", "!!!", "Ünïcödé Tópic"]
    path = write_json(tmp_path, data)

    run("import_reference_page", str(path))

    chinese = Topic.objects.get(name="中文主题")
    bangs = Topic.objects.get(name="!!!")
    assert chinese.slug.startswith("topic-") and len(chinese.slug) == len("topic-") + 8
    assert bangs.slug.startswith("topic-") and bangs.slug != chinese.slug
    assert Topic.objects.get(name="Ünïcödé Tópic").slug == "unicode-topic"
    paper = Paper.objects.get(title=data["papers"][1]["title"])
    assert {"中文主题", "!!!"} <= set(paper.assignments.values_list("topic__name", flat=True))
    before = database_state()
    output = run("import_reference_page", str(path))
    assert "Topics: 0 created, 0 updated" in output
    assert database_state() == before


def test_tag_refuses_ids_of_papers_that_do_not_exist():
    with pytest.raises(CommandError, match="no paper with id 999999"):
        run("tag", "--ids", "999999")
