"""The papers admin: search by arXiv identifier, title and author; filters by category
(primary or cross-list), submitted date and withdrawn; list pages that never count a big
table."""

import datetime as dt

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from papers.tests.factories import (
    AuthorshipFactory,
    CategoryFactory,
    PaperFactory,
    big_collaboration_paper,
)
from topicsite.paginators import EstimatedCountPaginator

pytestmark = pytest.mark.django_db

PAPERS = "admin:papers_paper_changelist"


@pytest.fixture
def admin_client(client):
    user = get_user_model().objects.create_user(
        "root", "root@example.org", "pw", is_staff=True, is_superuser=True
    )
    client.force_login(user)
    return client


@pytest.fixture
def papers():
    cl, lg, th = (CategoryFactory(code=code) for code in ("cs.CL", "cs.LG", "hep-th"))
    rows = {
        "agents": PaperFactory(
            arxiv_id="2409.01234",
            title="Language agents",
            primary_category=cl,
            submitted=dt.date(2024, 9, 2),
        ),
        "holography": PaperFactory(
            arxiv_id="hep-th/9901001",
            title="Holography of branes",
            primary_category=th,
            submitted=dt.date(1999, 1, 4),
        ),
        "learning": PaperFactory(
            arxiv_id="2410.00007",
            title="Learning to rank",
            primary_category=lg,
            submitted=dt.date(2024, 10, 1),
            withdrawn=True,
        ),
        "cross": PaperFactory(
            arxiv_id="2410.00008",
            title="Strings for language",
            primary_category=th,
            submitted=dt.date(2024, 10, 15),
        ),
    }
    rows["cross"].cross_lists.add(cl)
    AuthorshipFactory(paper=rows["holography"], author__name="Juan Maldacena", position=0)
    return rows


def listed(client, **params):
    response = client.get(reverse(PAPERS), params)
    assert response.status_code == 200, response.get("Location")
    return {paper.arxiv_id for paper in response.context["cl"].result_list}


@pytest.mark.parametrize(
    ("term", "expected"),
    [
        ("2409.01234", {"2409.01234"}),
        ("2409.01234v3", {"2409.01234"}),
        ("arXiv:2409.01234", {"2409.01234"}),
        ("https://arxiv.org/abs/hep-th/9901001v2", {"hep-th/9901001"}),
        ("https://arxiv.org/pdf/hep-th/9901001v2/", {"hep-th/9901001"}),
        ("10.48550/arXiv.2409.01234", {"2409.01234"}),
        ("arXiv:2409.01234v3 [cs.CL] 2 Sep 2024", {"2409.01234"}),
        ("hep-th/9901001", {"hep-th/9901001"}),
        ("language", {"2409.01234", "2410.00008"}),
        ("Maldacena", {"hep-th/9901001"}),
        ("2409.99999", set()),
    ],
)
def test_search_by_arxiv_identifier_title_or_author(admin_client, papers, term, expected):
    assert listed(admin_client, q=term) == expected


def test_category_filter_includes_cross_lists(admin_client, papers):
    assert listed(admin_client, category="cs.CL") == {"2409.01234", "2410.00008"}
    assert listed(admin_client, category="hep-th") == {"hep-th/9901001", "2410.00008"}


def test_submitted_range_filter_with_either_end_open(admin_client, papers):
    both = {"submitted__gte": "2024-09-01", "submitted__lt": "2024-10-02"}
    assert listed(admin_client, **both) == {"2409.01234", "2410.00007"}
    assert listed(admin_client, submitted__gte="", submitted__lt="2000-01-01") == {"hep-th/9901001"}
    assert listed(admin_client, submitted__gte="2024-10-02", submitted__lt="") == {"2410.00008"}


def test_the_range_form_keeps_the_other_filters(admin_client, papers):
    response = admin_client.get(reverse(PAPERS), {"category": "cs.CL", "q": "language", "p": "0"})
    page = response.content.decode()
    form = page[page.index('class="date-range-filter"') :]
    form = form[: form.index("</form>")]
    assert '<input type="hidden" name="category" value="cs.CL">' in form
    assert '<input type="hidden" name="q" value="language">' in form
    assert 'name="p"' not in form
    assert 'type="date" id="submitted__gte" name="submitted__gte"' in form


def test_a_malformed_date_is_refused_not_a_crash(admin_client, papers):
    response = admin_client.get(reverse(PAPERS), {"submitted__gte": "2024-13-45"})
    assert response.status_code == 302
    assert response["Location"].endswith("?e=1")


def test_withdrawn_filter(admin_client, papers):
    assert listed(admin_client, withdrawn__exact="1") == {"2410.00007"}


def test_paper_change_page_opens(admin_client, papers):
    paper = papers["holography"]
    paper.versions.create(number=1)
    response = admin_client.get(reverse("admin:papers_paper_change", args=[paper.pk]))
    assert response.status_code == 200
    assert "Juan Maldacena" in response.content.decode()


def test_unfiltered_lists_use_the_planner_estimate_instead_of_counting(
    admin_client, papers, monkeypatch
):
    monkeypatch.setattr(EstimatedCountPaginator, "estimate_from", 1)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE papers_paper")

    with CaptureQueriesContext(connection) as unfiltered:
        response = admin_client.get(reverse(PAPERS))
    with CaptureQueriesContext(connection) as filtered:
        filtered_response = admin_client.get(reverse(PAPERS), {"withdrawn__exact": "1"})

    def counts(ctx):
        return [
            q["sql"]
            for q in ctx.captured_queries
            if "COUNT(*)" in q["sql"] and "papers_paper" in q["sql"]
        ]

    assert counts(unfiltered) == []
    assert response.context["cl"].result_count == 4  # the estimate, right after ANALYZE
    assert len(counts(filtered)) == 1  # a filter: an exact count
    assert filtered_response.context["cl"].result_count == 1


# --- a collaboration of 5,000 authors ---------------------------------------------------------


def change_form_data(response) -> dict:
    """The POST a browser sends from an admin change page, built from its forms' values."""
    data = {}
    form = response.context["adminform"].form
    for name in form.fields:
        value = form[name].value()
        if value is None:
            continue
        data[name] = [str(v) for v in value] if isinstance(value, list | tuple) else str(value)
    for inline in response.context["inline_admin_formsets"]:
        formset = inline.formset
        for name in formset.management_form.fields:
            data[formset.management_form.add_prefix(name)] = formset.management_form[name].value()
        for inline_form in formset.forms:
            for name in inline_form.fields:
                value = inline_form[name].value()
                if value is not None:
                    data[inline_form.add_prefix(name)] = str(value)
    return data


def test_a_paper_of_5000_authors_opens_fast_and_saves(admin_client, django_assert_max_num_queries):
    paper = big_collaboration_paper(authors=5000, title="ATLAS collaboration results")
    url = reverse("admin:papers_paper_change", args=[paper.pk])
    with django_assert_max_num_queries(40):
        response = admin_client.get(url)
    assert response.status_code == 200
    assert len(response.content) < 150_000
    page = response.content.decode()
    assert "Collaborator" in page and "The first 20 of 5000 authors" in page
    assert paper.get_absolute_url() in page

    data = change_form_data(response)
    # Django refuses a POST of more fields than this (a 400): the form must stay below it.
    assert len(data) < settings.DATA_UPLOAD_MAX_NUMBER_FIELDS / 10
    data["title"] = "ATLAS collaboration results, corrected"
    with django_assert_max_num_queries(60):
        saved = admin_client.post(url, data)
    assert saved.status_code == 302, saved.content[:2000]
    paper.refresh_from_db()
    assert paper.title == "ATLAS collaboration results, corrected"
    assert paper.authorships.count() == 5000
