"""Taxonomy imports (``topics.importers.taxonomies``): ``import_openalex_topics`` (OpenAlex's
topics CSV) and ``import_arxiv_topics`` (arXiv's categories), how the latter shares its tree with
``load_demo_taxonomy``, and curators' renames and merges surviving a repeat import."""

import csv
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from papers.categories import category_sync
from papers.models import Category
from papers.tests.factories import PaperFactory
from topics.importers.names import rule_query_from_name
from topics.importers.taxonomies import TaxonomyFileError, openalex_topics_parse
from topics.models import Assignment, Topic
from topics.tagging.engine import papers_tag
from topics.tests.factories import TopicFactory

OPENALEX_CSV = (
    Path(__file__).resolve().parents[1] / "data" / "openalex" / "openalex_topics_2024-09.csv"
)


def run(*args):
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def topic_state():
    return {
        "topics": list(Topic.objects.order_by("pk").values()),
        "rule_categories": sorted(
            Topic.rule_categories.through.objects.values_list("topic_id", "category_id")
        ),
    }


@pytest.fixture(scope="module")
def openalex_rows():
    with OPENALEX_CSV.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


# --- the OpenAlex CSV ------------------------------------------------------------------------


def test_openalex_topics_parse_reads_every_row():
    with OPENALEX_CSV.open(encoding="utf-8", newline="") as handle:
        topics = openalex_topics_parse(handle, source="topics.csv")
    assert len(topics) == 4516
    assert len({topic.domain for topic in topics}) == 4
    assert len({topic.field for topic in topics}) == 26
    assert len({(topic.field, topic.subfield) for topic in topics}) == 252
    first = topics[0]
    assert (first.topic_id, first.name, first.subfield, first.field, first.domain) == (
        "T10299",
        "Silicon Photonics Technology",
        "Electrical and Electronic Engineering",
        "Engineering",
        "Physical Sciences",
    )
    assert first.description.startswith("This cluster of papers covers advances in silicon")


HEADER = "topic_id,topic_name,subfield_id,subfield_name,field_id,field_name,domain_id,domain_name,works_count,description\n"  # noqa: E501
ROW = "T1,Topic Modeling,1702,Artificial Intelligence,17,Computer Science,3,Physical Sciences,10,About topics.\n"  # noqa: E501


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("topic_id,topic_name\nT1,x\n", "topics.csv: missing columns subfield_id, subfield_name"),
        (
            HEADER + ROW + ROW.replace("Topic Modeling", "  "),
            "topics.csv, line 3: empty topic_name",
        ),
        (HEADER + ROW + ROW, "topics.csv, line 3: topic T1 already given on line 2"),
    ],
)
def test_openalex_topics_parse_names_the_line_and_problem(text, message):
    with pytest.raises(TaxonomyFileError, match=message):
        openalex_topics_parse(StringIO(text), source="topics.csv")


# --- import_openalex_topics ------------------------------------------------------------------


@pytest.mark.django_db
def test_import_openalex_topics_builds_the_tree_of_a_field(openalex_rows):
    output = run("import_openalex_topics", "--field", "mathematics")

    rows = [row for row in openalex_rows if row["field_name"] == "Mathematics"]
    subfields = {row["subfield_name"] for row in rows}
    assert f"created 1 domains, 1 fields, {len(subfields)} subfields, {len(rows)} topics" in output
    domain = Topic.objects.get(name="Physical Sciences", parent=None)
    field = Topic.objects.get(name="Mathematics", parent=domain)
    assert set(field.children.values_list("name", flat=True)) == subfields
    leaves = Topic.objects.filter(parent__parent=field)
    assert leaves.count() == len(rows)
    assert Topic.objects.count() == 2 + len(subfields) + len(rows)
    row = rows[0]
    topic = leaves.get(name=row["topic_name"])
    assert topic.parent.name == row["subfield_name"]
    assert topic.path == f"{domain.pk}/{field.pk}/{topic.parent.pk}/{topic.pk}/"
    assert topic.description == row["description"]
    assert topic.rule_query == rule_query_from_name(
        row["topic_name"], description=row["description"]
    )
    # Parents show their descendants' papers: only the OpenAlex topics carry rules.
    assert not Topic.objects.exclude(parent__parent=field).exclude(rule_query="").exists()
    assert f"rules set: {len(rows)}." in output


@pytest.mark.django_db
def test_import_openalex_topics_twice_changes_nothing_and_keeps_curated_rules():
    run("import_openalex_topics", "--field", "Mathematics")
    curated = Topic.objects.filter(parent__parent__name="Mathematics").order_by("pk").first()
    curated.rule_query = '"curated rule"'
    curated.save()
    before = topic_state()

    output = run("import_openalex_topics", "--field", "Mathematics")

    assert topic_state() == before
    assert "created 0 domains, 0 fields, 0 subfields, 0 topics" in output
    assert Topic.objects.get(pk=curated.pk).rule_query == '"curated rule"'


@pytest.mark.django_db
def test_import_openalex_topics_slugs_never_take_existing_slugs():
    existing = TopicFactory(name="Mathematics elsewhere", slug="mathematics")

    run("import_openalex_topics", "--field", "Mathematics")

    field = Topic.objects.get(name="Mathematics", parent__name="Physical Sciences")
    assert field.slug == "mathematics-2"
    assert Topic.objects.get(pk=existing.pk).name == "Mathematics elsewhere"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--field", "Alchemy"], "No OpenAlex field named 'Alchemy'; there are: Agricultural"),
        (["--domain", "Magic"], "No OpenAlex domain named 'Magic'; there are: Health Sciences"),
        (["--domain", "Life Sciences", "--field", "Mathematics"], "No OpenAlex field named"),
    ],
)
def test_import_openalex_topics_refuses_an_unknown_branch_and_writes_nothing(args, message):
    with pytest.raises(CommandError, match=message):
        run("import_openalex_topics", *args)
    assert not Topic.objects.exists()


@pytest.mark.django_db
def test_import_openalex_topics_names_a_bad_file(tmp_path):
    path = tmp_path / "topics.csv"
    path.write_text(HEADER + ROW + ROW, encoding="utf-8")
    with pytest.raises(CommandError, match=f"{path}, line 3: topic T1 already given"):
        run("import_openalex_topics", str(path))
    with pytest.raises(CommandError, match="cannot read"):
        run("import_openalex_topics", str(tmp_path / "missing.csv"))
    assert not Topic.objects.exists()


@pytest.mark.django_db
def test_openalex_topics_tag_papers_by_their_rules():
    path_rows = HEADER + ROW.replace("About topics.", "Covers latent Dirichlet allocation.")
    csv_file = StringIO(path_rows)
    from topics.importers.taxonomies import openalex_topics_import

    openalex_topics_import(topics=openalex_topics_parse(csv_file, source="x"))
    category_sync()
    cl = Category.objects.get(code="cs.CL")
    lda = PaperFactory(title="Latent Dirichlet allocation at scale", primary_category=cl)
    other = PaperFactory(title="Parsing with grammars", primary_category=cl)

    papers_tag(paper_ids=[lda.pk, other.pk])

    assert list(Assignment.objects.values_list("paper__title", "topic__name")) == [
        ("Latent Dirichlet allocation at scale", "Topic Modeling")
    ]


# --- import_arxiv_topics ---------------------------------------------------------------------


@pytest.fixture
def categories(db):
    category_sync()
    return {category.code: category for category in Category.objects.all()}


def test_import_arxiv_topics_builds_group_archive_category(categories):
    output = run(
        "import_arxiv_topics", "--archive", "cs", "--archive", "hep-th", "--archive", "astro-ph"
    )

    cs = Topic.objects.get(name="Computer Science", parent=None)
    cs_categories = Category.objects.filter(archive="cs")
    assert cs.children.count() == cs_categories.count()
    cl = Topic.objects.get(parent=cs, short_name="cs.CL")
    assert (cl.name, str(cl)) == ("Computation and Language", "cs.CL: Computation and Language")
    assert list(cl.rule_categories.values_list("code", flat=True)) == ["cs.CL"]
    assert cl.rule_query == ""
    assert "natural language" in cl.description.lower()
    assert not cs.rule_categories.exists()  # every cs category has its own topic

    physics = Topic.objects.get(name="Physics", parent=None)
    theory = Topic.objects.get(name="High Energy Physics - Theory", parent=physics)
    assert list(theory.rule_categories.values_list("code", flat=True)) == ["hep-th"]
    assert not theory.children.exists()
    astro = Topic.objects.get(name="Astrophysics", parent=physics)
    # The archive-wide legacy code of older papers stays with the archive topic.
    assert list(astro.rule_categories.values_list("code", flat=True)) == ["astro-ph"]
    assert astro.children.count() == 6
    created = cs_categories.count() + 6
    assert f"created 2 groups, 2 archives, {created} categories" in output


def test_import_arxiv_topics_twice_changes_nothing(categories):
    run("import_arxiv_topics")
    before = topic_state()
    assert Topic.objects.count() > 150

    output = run("import_arxiv_topics")

    assert topic_state() == before
    assert "created 0 groups, 0 archives, 0 categories" in output
    assert "rules set or changed: 0." in output


def test_arxiv_import_narrows_the_demo_archive_rules_and_the_demo_keeps_them(categories):
    PaperFactory(title="Galaxy halos", primary_category=categories["astro-ph.GA"])
    PaperFactory(title="Parsing", primary_category=categories["cs.CL"])
    run("load_demo_taxonomy")
    astro = Topic.objects.get(name="Astrophysics")
    assert astro.rule_categories.count() == 7

    run("import_arxiv_topics", "--archive", "astro-ph", "--archive", "cs")

    # The same topics, found again; the categories moved to the new category topics.
    assert Topic.objects.get(name="Astrophysics").pk == astro.pk
    assert list(astro.rule_categories.values_list("code", flat=True)) == ["astro-ph"]
    before = topic_state()
    output = run("load_demo_taxonomy")
    assert topic_state() == before
    assert "Rules set or changed: 0." in output


def test_papers_go_to_their_category_topic_not_every_ancestor(categories):
    run("import_arxiv_topics", "--archive", "cs", "--archive", "astro-ph")
    parsing = PaperFactory(title="Parsing", primary_category=categories["cs.CL"])
    parsing.cross_lists.add(categories["cs.LG"])
    old = PaperFactory(title="Old galaxies", primary_category=categories["astro-ph"])

    papers_tag(paper_ids=[parsing.pk, old.pk])

    assert set(Assignment.objects.values_list("paper__title", "topic__short_name")) == {
        ("Parsing", "cs.CL"),
        ("Parsing", "cs.LG"),
        ("Old galaxies", ""),  # the Astrophysics archive topic
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--archive", "alchemy"], "Unknown arXiv archive 'alchemy'; archives are: astro-ph"),
    ],
)
def test_import_arxiv_topics_refuses_unknown_archives(categories, args, message):
    with pytest.raises(CommandError, match=message):
        run("import_arxiv_topics", *args)
    assert not Topic.objects.exists()


@pytest.mark.django_db
def test_import_arxiv_topics_needs_the_categories():
    with pytest.raises(CommandError, match="run `manage.py load_categories` first"):
        run("import_arxiv_topics")


# --- curators' renames and merges survive a second import ------------------------------------


def _topic_count_by_name():
    return sorted(Topic.objects.values_list("name", flat=True))


@pytest.mark.django_db
@pytest.mark.parametrize("keep_slug", [False, True])
def test_import_openalex_topics_again_keeps_a_curators_rename(keep_slug):
    from topics.services import topic_rename
    from topics.tests.factories import UserFactory

    run("import_openalex_topics", "--field", "Mathematics")
    subfield = Topic.objects.filter(parent__name="Mathematics").order_by("pk").first()
    leaf = subfield.children.order_by("pk").first()
    curator = UserFactory(is_staff=True)
    topic_rename(
        topic=leaf, name="Curated leaf", slug=leaf.slug if keep_slug else None, user=curator
    )
    topic_rename(topic=subfield, name="Curated subfield", user=curator)
    count = Topic.objects.count()

    output = run("import_openalex_topics", "--field", "Mathematics")

    assert Topic.objects.count() == count
    assert "created 0 domains, 0 fields, 0 subfields, 0 topics" in output
    assert Topic.objects.get(pk=leaf.pk).name == "Curated leaf"
    assert Topic.objects.get(pk=subfield.pk).name == "Curated subfield"
    assert Topic.objects.get(pk=leaf.pk).parent_id == subfield.pk


@pytest.mark.django_db
def test_import_openalex_topics_again_keeps_a_curators_merge():
    from topics.services import topic_merge
    from topics.tests.factories import UserFactory

    run("import_openalex_topics", "--field", "Mathematics")
    subfield = Topic.objects.filter(parent__name="Mathematics").order_by("pk").first()
    source, target = subfield.children.order_by("pk")[:2]
    topic_merge(source=source, target=target, user=UserFactory(is_staff=True))
    names = _topic_count_by_name()

    output = run("import_openalex_topics", "--field", "Mathematics")

    assert _topic_count_by_name() == names
    assert "0 topics" in output
    assert not Topic.objects.get(pk=source.pk).active
    assert not Topic.objects.filter(parent_id=source.pk).exists()


def test_import_arxiv_topics_again_keeps_renamed_category_topics(categories):
    from topics.services import topic_rename
    from topics.tests.factories import UserFactory

    run("import_arxiv_topics", "--archive", "cs")
    cl = Topic.objects.get(short_name="cs.CL")
    topic_rename(topic=cl, name="NLP", user=UserFactory(is_staff=True))
    before = topic_state()

    output = run("import_arxiv_topics", "--archive", "cs")

    assert topic_state() == before
    assert "created 0 groups, 0 archives, 0 categories" in output
