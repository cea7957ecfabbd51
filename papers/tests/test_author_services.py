"""Curators' merges and splits of authors (papers.author_services), and ingestion crediting a
merged-away name to its survivor."""

import datetime as dt

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError

from papers.author_services import author_ids_current, author_split, authors_merge
from papers.categories import category_sync
from papers.ingest import papers_upsert
from papers.models import Author, Authorship
from papers.records import ArxivRecord, AuthorName
from papers.signals import authors_merged
from papers.tests.factories import AuthorFactory, AuthorshipFactory, PaperFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def curator():
    return get_user_model().objects.create_user("curator", "c@example.org", "pw", is_staff=True)


@pytest.fixture
def variants():
    """One person under three names; "J. Smith" and "John Smith" both on ``shared``."""
    john = AuthorFactory(name="John Smith")
    initials = AuthorFactory(name="J. Smith")
    accented = AuthorFactory(name="John Smíth")
    shared = PaperFactory(title="Shared paper")
    AuthorshipFactory(paper=shared, author=initials, position=0)
    AuthorshipFactory(paper=shared, author=john, position=3)
    AuthorshipFactory(paper=PaperFactory(title="Initials only"), author=initials, position=1)
    AuthorshipFactory(paper=PaperFactory(title="Accented"), author=accented, position=0)
    return {"john": john, "initials": initials, "accented": accented, "shared": shared}


def test_merge_moves_authorships_keeps_variants_and_records_history(variants, curator):
    john, initials, accented = variants["john"], variants["initials"], variants["accented"]
    sent = []
    authors_merged.connect(lambda **kw: sent.append(kw), weak=False, dispatch_uid="t-merge")
    try:
        result = authors_merge(authors=[john, initials, accented], survivor=john, user=curator)
    finally:
        authors_merged.disconnect(dispatch_uid="t-merge")

    assert result.authorships_moved == 3
    assert {a.pk for a in result.merged} == {initials.pk, accented.pk}
    assert Authorship.objects.filter(author=john).count() == 4
    assert not Authorship.objects.filter(author__in=[initials, accented]).exists()
    # Both names stay, as variants of the survivor.
    initials.refresh_from_db()
    accented.refresh_from_db()
    assert initials.merged_into == john and accented.merged_into == john
    assert set(john.variants.values_list("name", flat=True)) == {"J. Smith", "John Smíth"}
    # History names the curator and what happened.
    last = initials.history.first()
    assert last.history_user == curator
    assert "merged into" in last.history_change_reason and str(john.pk) in (
        last.history_change_reason
    )
    assert "absorbed" in john.history.first().history_change_reason
    assert sent[0]["target_id"] == john.pk
    assert sorted(sent[0]["source_ids"]) == sorted([initials.pk, accented.pk])


def test_merging_two_authors_of_one_paper_keeps_both_positions(variants, curator):
    shared = variants["shared"]
    authors_merge(authors=[variants["initials"]], survivor=variants["john"], user=curator)
    rows = list(shared.authorships.order_by("position").values_list("author_id", "position"))
    assert rows == [(variants["john"].pk, 0), (variants["john"].pk, 3)]


def test_merge_flattens_chains_and_refuses_merged_authors(variants, curator):
    john, initials, accented = variants["john"], variants["initials"], variants["accented"]
    authors_merge(authors=[initials], survivor=accented, user=curator)
    authors_merge(authors=[accented], survivor=john, user=curator)
    initials.refresh_from_db()
    assert initials.merged_into == john  # not via accented
    with pytest.raises(ValidationError, match="Already merged"):
        authors_merge(authors=[initials], survivor=john, user=curator)
    with pytest.raises(ValidationError, match="other than the one that stays"):
        authors_merge(authors=[john], survivor=john, user=curator)
    with pytest.raises(ValidationError, match="No author has the id 987654"):
        authors_merge(authors=[987654], survivor=john, user=curator)


def test_failed_merge_writes_nothing(variants, curator):
    john, initials = variants["john"], variants["initials"]

    def fail(**kwargs):
        raise RuntimeError("receiver failed")

    authors_merged.connect(fail, weak=False, dispatch_uid="t-fail")
    try:
        with pytest.raises(RuntimeError):
            authors_merge(authors=[initials], survivor=john, user=curator)
    finally:
        authors_merged.disconnect(dispatch_uid="t-fail")
    initials.refresh_from_db()
    assert initials.merged_into is None
    assert Authorship.objects.filter(author=initials).count() == 2


def test_split_moves_chosen_authorships_to_a_new_author(variants, curator):
    john = variants["john"]
    initials = variants["initials"]
    authors_merge(authors=[initials], survivor=john, user=curator)
    accented_row = Authorship.objects.get(author=variants["accented"])
    chosen = Authorship.objects.filter(author=john, paper__title="Initials only").get()

    other = author_split(author=john, authorship_ids=[chosen.pk], name="Jane Smith", user=curator)

    assert other.name == "Jane Smith" and other.merged_into is None
    chosen.refresh_from_db()
    assert chosen.author == other and chosen.position == 1
    assert Authorship.objects.filter(author=john).count() == 2
    assert accented_row.author_id == variants["accented"].pk
    assert other.history.first().history_user == curator
    assert "split from" in other.history.first().history_change_reason


def test_split_to_a_variant_undoes_the_merge(variants, curator):
    john, initials = variants["john"], variants["initials"]
    authors_merge(authors=[initials], survivor=john, user=curator)
    ids = list(
        Authorship.objects.filter(author=john, position__in=[0, 1]).values_list("pk", flat=True)
    )
    again = author_split(author=john, authorship_ids=ids, name="J. Smith", user=curator)
    assert again.pk == initials.pk and again.merged_into is None
    assert Authorship.objects.filter(author=initials).count() == 2


def test_split_refusals_write_nothing(variants, curator):
    john, accented = variants["john"], variants["accented"]
    mine = Authorship.objects.get(author=john)
    theirs = Authorship.objects.get(author=accented)
    with pytest.raises(ValidationError, match="Not authorships of"):
        author_split(author=john, authorship_ids=[mine.pk, theirs.pk], name="X", user=curator)
    with pytest.raises(ValidationError, match="Another author is named"):
        author_split(author=john, authorship_ids=[mine.pk], name="John Smíth", user=curator)
    with pytest.raises(ValidationError, match="Choose at least one"):
        author_split(author=john, authorship_ids=[], name="X", user=curator)
    with pytest.raises(ValidationError, match="Give the new author a name"):
        author_split(author=john, authorship_ids=[mine.pk], name="  ", user=curator)
    with pytest.raises(ValidationError, match="at most 300"):
        author_split(author=john, authorship_ids=[mine.pk], name="x" * 301, user=curator)
    mine.refresh_from_db()
    assert mine.author == john
    assert not Author.objects.filter(name="X").exists()


def test_ingestion_credits_a_merged_name_to_the_survivor(variants, curator):
    category_sync()
    john, initials = variants["john"], variants["initials"]
    authors_merge(authors=[initials], survivor=john, user=curator)
    record = ArxivRecord(
        arxiv_id="2609.99999",
        title="A new paper",
        authors=[AuthorName(name="J. Smith"), AuthorName(name="Someone Else")],
        categories=["cs.CL"],
        submitted=dt.date(2026, 9, 30),
        updated=dt.date(2026, 9, 30),
    )
    papers_upsert(records=[record])
    names = list(
        Authorship.objects.filter(paper__arxiv_id="2609.99999")
        .order_by("position")
        .values_list("author__name", flat=True)
    )
    assert names == ["John Smith", "Someone Else"]


def test_author_ids_current_maps_variants_in_one_query(
    variants, curator, django_assert_num_queries
):
    john, initials = variants["john"], variants["initials"]
    authors_merge(authors=[initials], survivor=john, user=curator)
    with django_assert_num_queries(1):
        ids = author_ids_current({"J. Smith": initials.pk, "John Smith": john.pk})
    assert ids == {"J. Smith": john.pk, "John Smith": john.pk}
    with django_assert_num_queries(0):
        assert author_ids_current({}) == {}
