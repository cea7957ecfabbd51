"""Near-duplicates (``papers/duplicates.py``): the similarity on real recorded papers,
detection and its links in PostgreSQL, the task queued by ``papers_stored``, sending once,
the paper page, the admin and the command."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from papers.duplicates import (
    DUPLICATE_THRESHOLD,
    duplicate_decide,
    duplicate_text,
    duplicates_collapse,
    duplicates_detect,
    text_similarities,
)
from papers.models import PaperDuplicate
from papers.parsers.snapshot import iter_snapshot
from papers.signals import papers_stored

from .conftest import SNAPSHOT_HEAD
from .factories import AuthorFactory, AuthorshipFactory, PaperFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def snapshot_records():
    with SNAPSHOT_HEAD.open("rb") as stream:
        return {r.arxiv_id: r for r in iter_snapshot(stream, source=str(SNAPSHOT_HEAD))}


def _similarity(pairs_of_texts, background):
    titles = [duplicate_text(t) for t, _ in pairs_of_texts + background]
    abstracts = [duplicate_text(a) for _, a in pairs_of_texts + background]
    return text_similarities(titles, abstracts, [(0, 1)])[0]


def planted_copy(title: str, abstract: str) -> tuple[str, str]:
    """A light edit of a paper: whitespace, TeX, a version note and a typo."""
    words = title.split(" ")
    longest = max(range(len(words)), key=lambda i: len(words[i]))
    word = words[longest]
    words[longest] = word[:2] + word[3] + word[2] + word[4:]
    abstract = abstract.replace(". ", ".\n  ").replace("e", "{\\'e}", 1)
    return " ".join(words), abstract + " This version corrects typos."


def test_a_planted_copy_is_above_the_threshold_and_a_companion_paper_below(snapshot_records):
    # 0704.0026 and 0704.0112: two parts of a series by the same author, with the same first
    # paragraph of abstract; one text of title + abstract scored them 0.88 as one paper.
    part_two, part_three = snapshot_records["0704.0026"], snapshot_records["0704.0112"]
    background = [(r.title, r.abstract) for r in list(snapshot_records.values())[:40]]
    companions = _similarity(
        [(part_two.title, part_two.abstract), (part_three.title, part_three.abstract)],
        background,
    )
    copy = _similarity(
        [(part_two.title, part_two.abstract), planted_copy(part_two.title, part_two.abstract)],
        background,
    )
    assert companions < DUPLICATE_THRESHOLD <= copy
    assert copy < 1.0  # the edits were seen, yet the copy is linked


def test_similarity_with_no_abstracts_is_the_titles_and_bad_input_is_refused():
    titles = ["Quantum walks on graphs", "Quantum walks on graphs", "Deep learning for proteins"]
    assert text_similarities(titles, ["", "", ""], [(0, 1), (0, 2)]) == pytest.approx([1.0, 0.0])
    with pytest.raises(ValueError, match="3 titles but 2 abstracts"):
        text_similarities(titles, ["", ""], [(0, 1)])


ABSTRACT = (
    "We measure the thermal conductivity of suspended graphene ribbons between 10 and 300 K "
    "with a Raman thermometry method, and find a crossover from ballistic to diffusive phonon "
    "transport at ribbon widths near 200 nm. Edge roughness limits the conductivity below it."
)
COMPANION_ABSTRACT = (
    "We compute the electronic band structure of twisted bilayer graphene with a tight-binding "
    "model and find flat bands near the magic angle; strain shifts the angle by 0.1 degrees. "
    "The results agree with transport measurements of suspended samples."
)


def _paper(title, abstract, *, first_author, submitted=dt.date(2026, 9, 1), **fields):
    paper = PaperFactory(title=title, abstract=abstract, submitted=submitted, **fields)
    AuthorshipFactory(paper=paper, author=first_author, position=0)
    return paper


@pytest.fixture
def trio(db):
    """An arXiv paper, its local copy (lightly edited, stored later) and a companion paper by
    the same first author."""
    author = AuthorFactory(name="Ada Lovelace")
    original = _paper(
        "Ballistic phonon transport in suspended graphene ribbons", ABSTRACT, first_author=author
    )
    copy = _paper(
        "Ballistic phonon transport in suspended graphene ribons",
        ABSTRACT.replace(" K ", " $K$ ") + " v2: references updated.",
        first_author=AuthorFactory(name="A. Lovelace"),
        arxiv_id=None,
        import_key="reference:graphene-ribbons",
        submitted=dt.date(2026, 8, 1),
    )
    companion = _paper(
        "Flat bands in twisted bilayer graphene", COMPANION_ABSTRACT, first_author=author
    )
    return original, copy, companion


def test_detection_links_the_copy_to_the_arxiv_paper_and_not_the_companion(trio):
    original, copy, companion = trio
    result = duplicates_detect(paper_ids=[copy.pk, companion.pk])
    assert result.linked == 1
    link = PaperDuplicate.objects.get()
    # The arXiv one is kept, though the local copy was submitted earlier.
    assert (link.paper, link.original) == (copy, original)
    assert DUPLICATE_THRESHOLD <= link.similarity < 1.0
    assert link.decision == PaperDuplicate.Decision.DETECTED


def test_detection_run_twice_leaves_the_same_rows_and_keeps_a_curator_decision(trio, admin_user):
    original, copy, _ = trio
    duplicates_detect(paper_ids=[original.pk])
    again = duplicates_detect(paper_ids=[copy.pk, original.pk])
    assert (again.linked, again.updated) == (0, 0)
    link = PaperDuplicate.objects.get()
    duplicate_decide(duplicate=link, decision="rejected", user=admin_user)
    duplicates_detect(paper_ids=[copy.pk])
    assert list(PaperDuplicate.objects.values_list("decision", "decided_by")) == [
        ("rejected", admin_user.pk)
    ]
    assert duplicates_collapse([original.pk, copy.pk]) == [original.pk, copy.pk]


def test_bad_threshold_and_decision_are_refused_and_nothing_is_written(trio, admin_user):
    original, copy, _ = trio
    with pytest.raises(ValueError, match="threshold must be between 0 and 1"):
        duplicates_detect(paper_ids=[copy.pk], threshold=1.5)
    assert not PaperDuplicate.objects.exists()
    duplicates_detect(paper_ids=[copy.pk])
    link = PaperDuplicate.objects.get()
    with pytest.raises(ValueError, match="confirmed or rejected"):
        duplicate_decide(duplicate=link, decision="maybe", user=admin_user)
    link.refresh_from_db()
    assert link.decision == PaperDuplicate.Decision.DETECTED


def test_stored_papers_queue_detection(trio, django_capture_on_commit_callbacks):
    original, copy, _ = trio
    # The task runs eagerly in tests (CELERY_TASK_ALWAYS_EAGER): the real receiver and task.
    papers_stored.send(sender=type(copy), paper_ids=[copy.pk])
    assert PaperDuplicate.objects.filter(paper=copy, original=original).exists()


def test_collapse_keeps_the_original_and_drops_what_was_sent_before(trio):
    original, copy, companion = trio
    duplicates_detect(paper_ids=[copy.pk])
    # The copy first in the list: the original is what stays, in its own place.
    assert duplicates_collapse([copy.pk, companion.pk, original.pk]) == [
        companion.pk,
        original.pk,
    ]
    assert duplicates_collapse([copy.pk, companion.pk]) == [copy.pk, companion.pk]
    assert duplicates_collapse([original.pk, companion.pk], already=[copy.pk]) == [companion.pk]


def test_the_paper_page_says_also_listed_as(trio, client):
    original, copy, _ = trio
    duplicates_detect(paper_ids=[copy.pk])
    page = client.get(original.get_absolute_url()).content.decode()
    assert "Also listed as" in page and copy.get_absolute_url() in page
    page = client.get(copy.get_absolute_url()).content.decode()
    assert f"arXiv:{original.arxiv_id}</a>" in page


def test_admin_rejects_a_pair(trio, admin_client):
    _, copy, _ = trio
    duplicates_detect(paper_ids=[copy.pk])
    link = PaperDuplicate.objects.get()
    url = reverse("admin:papers_paperduplicate_changelist")
    assert admin_client.get(url).status_code == 200
    response = admin_client.post(
        url, {"action": "reject", "_selected_action": [link.pk]}, follow=True
    )
    assert response.status_code == 200
    link.refresh_from_db()
    assert link.decision == PaperDuplicate.Decision.REJECTED


def test_command_links_and_refuses_ids_that_name_no_paper(trio, capsys):
    _, copy, _ = trio
    call_command("detect_duplicates", "--ids", str(copy.pk))
    assert "1 linked" in capsys.readouterr().out
    with pytest.raises(CommandError, match="names no paper"):
        call_command("detect_duplicates", "--ids", ",")
    with pytest.raises(CommandError, match="separated by commas"):
        call_command("detect_duplicates", "--ids", "a,b")
    # A pk no paper has is named, not counted as a paper compared with nothing.
    with pytest.raises(CommandError, match=r"no stored paper with pk 999999, -1$"):
        call_command("detect_duplicates", "--ids", f"{copy.pk},999999,-1")


@pytest.mark.django_db
def test_the_admin_offers_no_hand_made_pair(admin_client):
    """Pairs come from detection, which scores them; the add page is refused, not a 500."""
    response = admin_client.get("/admin/papers/paperduplicate/add/")
    assert response.status_code == 403
    response = admin_client.post("/admin/papers/paperduplicate/add/", {})
    assert response.status_code == 403


def test_links_of_a_thousand_ids_are_one_query_with_one_array_parameter():
    # The feed collapses its newest 1,000 papers: the ids go as one array (topicsite/lookups.py),
    # not as 2,000 placeholders that psycopg quotes one by one.
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from papers.duplicates import duplicate_links

    with CaptureQueriesContext(connection) as captured:
        assert duplicate_links(range(1, 1001)) == []
    assert len(captured) == 1
    assert captured.captured_queries[0]["sql"].count("ANY(") == 2
