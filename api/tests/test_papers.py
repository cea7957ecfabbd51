"""``papers/`` and ``papers/{id}/``: lookup by any id spelling, filters, ordering, cursor
pagination, ``fields=`` and the 400s for bad values."""

import datetime as dt
from urllib.parse import quote

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from papers.models import Category, Paper
from topics.tests.factories import TopicFactory

from .conftest import assert_error, ids, make_paper

pytestmark = pytest.mark.django_db

ALL_NEWEST_FIRST = ["2609.00001", "2609.00002", "2608.00003", "hep-th/0601001"]


def test_default_order_is_newest_submitted_first(api_client, world):
    assert ids(api_client.get("/api/v1/papers/")) == ALL_NEWEST_FIRST


@pytest.mark.parametrize(
    "spelling",
    ["2609.00001", "2609.00001v1", "2609.00001v2", "arXiv:2609.00001"],
)
def test_any_spelling_of_a_new_style_id_resolves_to_the_paper(api_client, world, spelling):
    response = api_client.get(f"/api/v1/papers/{spelling}/")
    assert response.status_code == 200
    assert response.json()["id"] == "2609.00001"
    assert response.json()["version"] == 2


@pytest.mark.parametrize("spelling", ["hep-th/0601001", "hep-th/0601001v1", "hep-th/0601001v3"])
def test_old_style_ids_with_a_slash_resolve(api_client, world, spelling):
    response = api_client.get(f"/api/v1/papers/{spelling}/")
    assert response.status_code == 200
    assert response.json()["id"] == "hep-th/0601001"
    assert response.json()["withdrawn"] is True


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        ("ARXIV:2609.00001v1", "2609.00001"),
        ("https://arxiv.org/abs/2609.00001v1", "2609.00001"),
        ("https://arxiv.org/abs/2609.00001/", "2609.00001"),
        ("http://export.arxiv.org/abs/2609.00001", "2609.00001"),
        ("https://arxiv.org/pdf/2609.00001v2.pdf", "2609.00001"),
        ("https://arxiv.org/html/2609.00001v2/", "2609.00001"),
        ("10.48550/arXiv.2609.00001", "2609.00001"),
        ("https://doi.org/10.48550/ARXIV.2609.00001", "2609.00001"),
        ("arXiv:2609.00001v2 [cs.CL] 29 Sep 2026", "2609.00001"),
        ("https://arxiv.org/abs/hep-th/0601001v3", "hep-th/0601001"),
        ("10.48550/arXiv.hep-th/0601001", "hep-th/0601001"),
        ("arXiv:hep-th/0601001v1 [hep-th]", "hep-th/0601001"),
    ],
)
def test_pasted_spellings_resolve_to_the_canonical_paper(api_client, world, spelling, canonical):
    """URLs, the arXiv DOI and the PDF stamp, as a reader pastes them (percent-encoded)."""
    response = api_client.get(f"/api/v1/papers/{quote(spelling, safe='/:')}/")

    assert response.status_code == 200, response.content
    assert response.json()["id"] == canonical
    bibtex = api_client.get(f"/api/v1/papers/{quote(spelling, safe='/:')}/bibtex/")
    assert bibtex.status_code == 200
    assert canonical in b"".join(bibtex.streaming_content).decode()


@pytest.mark.parametrize(
    ("spelling", "named"),
    [
        ("https://evil.example/abs/2609.00001", "'https://evil.example/abs/2609.00001'"),
        ("10.1103/PhysRevD.93.016005", "'10.1103/PhysRevD.93.016005'"),
        ("math.XX/0309136", "math.XX is not a subject class of math"),
        ("arXiv:2609.00001v2 [cs.XX]", "'cs.XX' is not an arXiv category"),
        ("https://arxiv.org/abs/2609.00001v3", "v1 to v2"),
        ("x" * 400, "longer than 300 characters"),
    ],
)
def test_text_that_is_no_arxiv_id_is_a_json_404_naming_it(api_client, world, spelling, named):
    error = assert_error(
        api_client.get(f"/api/v1/papers/{quote(spelling, safe='/:')}/"), 404, code="not_found"
    )
    assert named in error["message"]


def test_withdrawn_and_deleted_papers_are_found_marked_and_offer_no_pdf(api_client, world):
    Paper.objects.filter(arxiv_id="2609.00002").update(
        deleted_at=dt.datetime(2026, 10, 2, tzinfo=dt.UTC)
    )
    details = {
        arxiv_id: api_client.get(f"/api/v1/papers/{arxiv_id}/").json()
        for arxiv_id in ("2609.00001", "2609.00002", "hep-th/0601001")
    }

    marks = {k: (d["withdrawn"], d["deleted"], d["urls"]["pdf"]) for k, d in details.items()}
    assert marks == {
        "2609.00001": (False, False, "https://arxiv.org/pdf/2609.00001"),
        "2609.00002": (False, True, None),
        "hep-th/0601001": (True, False, None),
    }
    assert details["hep-th/0601001"]["urls"]["abs"] == "https://arxiv.org/abs/hep-th/0601001"
    # Still listed, and the list (one aggregating query on PostgreSQL) says the same.
    listed = {p["id"]: p for p in api_client.get("/api/v1/papers/").json()["results"]}
    for arxiv_id, detail in details.items():
        assert listed[arxiv_id]["urls"] == detail["urls"]
        assert listed[arxiv_id]["deleted"] == detail["deleted"]


def test_a_version_the_paper_does_not_have_is_a_404_saying_which_exist(api_client, world):
    error = assert_error(api_client.get("/api/v1/papers/2609.00001v3/"), 404, code="not_found")
    assert "v1 to v2" in error["message"]


@pytest.mark.parametrize("bad", ["not-an-id", "2609.1", "hepth/9901001", "local:x", "local:999"])
def test_text_that_is_no_stored_paper_is_a_json_404(api_client, world, bad):
    assert_error(api_client.get(f"/api/v1/papers/{bad}/"), 404, code="not_found")


def test_papers_without_an_arxiv_id_are_addressed_as_local_n(api_client, world):
    local = make_paper(
        arxiv_id=None,
        import_key="reference:abc",
        title="A paper from the reference page",
        primary_category=Category.objects.get(code="cs.CL"),
    )
    response = api_client.get(f"/api/v1/papers/local:{local.pk}/")
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == f"local:{local.pk}"
    assert body["urls"]["abs"] is None and body["urls"]["pdf"] is None
    assert body["urls"]["html"].endswith(f"/papers/local/{local.pk}/")
    # a paper that has an arXiv id is not reachable by its primary key
    assert_error(api_client.get(f"/api/v1/papers/local:{world.first.pk}/"), 404)


def test_detail_shows_authors_with_affiliations_topics_and_urls(api_client, world):
    body = api_client.get("/api/v1/papers/2609.00001/").json()
    assert body["authors"] == [
        {"name": "Alice Able", "affiliations": ["University of Somewhere"]},
        {"name": "Bob Baker", "affiliations": ["Lab of Elsewhere", "University of Somewhere"]},
    ]
    assert body["affiliations"] == ["University of Somewhere", "Lab of Elsewhere"]
    assert body["primary_category"] == "cs.CL"
    assert body["categories"] == ["cs.AI", "cs.LG"]
    assert body["topics"] == [{"slug": "llm-agent-training", "name": "LLM Agent Training"}]
    assert body["urls"]["abs"] == "https://arxiv.org/abs/2609.00001"
    assert body["urls"]["pdf"] == "https://arxiv.org/pdf/2609.00001"
    # the title is text, special characters and all
    assert body["title"] == "Agents & tools: 100% of {RL} with $x_1$ #1 ~ ^"


def test_rejected_assignments_are_not_shown_as_topics(api_client, world):
    body = api_client.get("/api/v1/papers/2609.00002/").json()
    assert [t["slug"] for t in body["topics"]] == ["llm-agent-training"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("topic=llm", ["2609.00001", "2609.00002", "2608.00003"]),  # descendants included
        ("topic=llm-agent-training", ["2609.00001", "2609.00002"]),
        ("topic=agent-training", ["2609.00001", "2609.00002"]),  # an old slug
        ("topic=robotics", []),  # only a rejected assignment there
        ("category=cs.AI", ["2609.00001", "2609.00002"]),  # primary or cross-list
        ("primary_category=cs.AI", ["2609.00002"]),
        ("category=cs.LG", ["2609.00001", "2608.00003"]),
        ("submitted_after=2026-09-22", ["2609.00001", "2609.00002"]),  # inclusive
        ("submitted_before=2026-09-22", ["2609.00002", "2608.00003", "hep-th/0601001"]),
        ("submitted_after=2026-08-01&submitted_before=2026-09-28", ["2609.00002", "2608.00003"]),
        # updated_after counts a paper with one version by its submitted date
        ("updated_after=2026-09-22", ["2609.00001", "2609.00002"]),
        ("updated_after=2026-09-30", ["2609.00001"]),
        ("author=bob", ["2609.00001"]),
        ("author=DRAKE", ["2608.00003"]),
        ("affiliation=institute", ["2609.00002", "2608.00003"]),
        ("withdrawn=true", ["hep-th/0601001"]),
        ("withdrawn=false", ["2609.00001", "2609.00002", "2608.00003"]),
        ("q=reinforcement learning", ["2609.00001"]),
        ("q=memory", ["2609.00002"]),
        ("q=agents -memory", ["2609.00001", "2608.00003"]),
        ("topic=llm&category=cs.LG&q=scaling", ["2608.00003"]),
    ],
)
def test_filters(api_client, world, query, expected):
    assert ids(api_client.get(f"/api/v1/papers/?{query}")) == expected


def test_category_aliases_resolve_to_the_canonical_code(api_client, world):
    make_category_math_ph = Category.objects.create(
        code="math-ph",
        name="Mathematical Physics",
        archive="math-ph",
        archive_name="Mathematical Physics",
        group="grp_physics",
        group_name="Physics",
    )
    make_paper(arxiv_id="2609.00009", primary_category=make_category_math_ph)
    assert ids(api_client.get("/api/v1/papers/?category=math.MP")) == ["2609.00009"]


@pytest.mark.parametrize(
    ("query", "param", "says"),
    [
        ("submitted_after=2026-13-01", "submitted_after", "YYYY-MM-DD"),
        ("submitted_before=yesterday", "submitted_before", "YYYY-MM-DD"),
        ("updated_after=2026/09/01", "updated_after", "YYYY-MM-DD"),
        ("withdrawn=maybe", "withdrawn", "true or false"),
        ("topic=no-such-topic", "topic", "'no-such-topic'"),
        ("category=cs.XX", "category", "'cs.XX'"),
        ("primary_category=physics", "primary_category", "'physics'"),
        ("ordering=title", "ordering", "-submitted"),
        ("page_size=0", "page_size", "1 to 100"),
        ("page_size=101", "page_size", "1 to 100"),
        ("page_size=ten", "page_size", "1 to 100"),
        ("fields=id,nope", "fields", "'nope'"),
        ("q=" + "x" * 301, "q", "300"),
    ],
)
def test_bad_values_are_400s_naming_the_parameter_and_what_is_allowed(
    api_client, world, query, param, says
):
    error = assert_error(
        api_client.get(f"/api/v1/papers/?{query}"), 400, code="invalid_parameter", param=param
    )
    assert says in " ".join(error["details"][param])
    assert param in error["message"]


@pytest.mark.parametrize(
    ("ordering", "expected"),
    [
        ("submitted", list(reversed(ALL_NEWEST_FIRST))),
        ("-submitted", ALL_NEWEST_FIRST),
        # 2609.00002 has no updated date: it sorts by its submitted date (2026-09-22)
        ("-updated", ["2609.00001", "2609.00002", "2608.00003", "hep-th/0601001"]),
        ("updated", ["hep-th/0601001", "2608.00003", "2609.00002", "2609.00001"]),
    ],
)
def test_ordering_from_the_whitelist(api_client, world, ordering, expected):
    assert ids(api_client.get(f"/api/v1/papers/?ordering={ordering}")) == expected


def test_ordering_by_updated_pages_through_every_paper_once(api_client, world):
    seen, url = [], "/api/v1/papers/?ordering=-updated&page_size=1"
    while url:
        body = api_client.get(url).json()
        seen += [p["id"] for p in body["results"]]
        url = body["next"]
    assert seen == ["2609.00001", "2609.00002", "2608.00003", "hep-th/0601001"]


def test_cursor_pages_stay_stable_while_new_papers_arrive(api_client, world):
    first_page = api_client.get("/api/v1/papers/?page_size=2").json()
    assert [p["id"] for p in first_page["results"]] == ["2609.00001", "2609.00002"]
    assert first_page["previous"] is None
    # a newer paper and one on the same day as the page's last arrive meanwhile
    make_paper(arxiv_id="2610.00001", submitted=dt.date(2026, 10, 1))
    make_paper(arxiv_id="2609.00005", submitted=dt.date(2026, 9, 29))
    second_page = api_client.get(first_page["next"]).json()
    assert [p["id"] for p in second_page["results"]] == ["2608.00003", "hep-th/0601001"]
    assert second_page["next"] is None
    assert second_page["previous"]


def test_cursor_pages_cover_every_paper_once_with_ties_on_the_date(api_client, world):
    for n in range(7):
        make_paper(arxiv_id=f"2609.0010{n}", submitted=dt.date(2026, 9, 22))
    seen, url = [], "/api/v1/papers/?page_size=3"
    while url:
        body = api_client.get(url).json()
        seen += [p["id"] for p in body["results"]]
        url = body["next"]
    assert len(seen) == len(set(seen)) == 11
    assert seen == ids(api_client.get("/api/v1/papers/?page_size=100"))


def test_a_forged_cursor_is_a_json_400_naming_the_cursor(api_client, world):
    response = api_client.get("/api/v1/papers/?cursor=forged")
    assert_error(response, 400, code="invalid_parameter")
    assert list(response.json()["error"]["details"]) == ["cursor"]


def test_fields_keeps_only_the_fields_asked_for(api_client, world):
    body = api_client.get("/api/v1/papers/?fields=id,submitted").json()
    assert body["results"][0] == {"id": "2609.00001", "submitted": "2026-09-29"}
    detail = api_client.get("/api/v1/papers/2609.00002/?fields=title").json()
    assert detail == {"title": "Memory for long-horizon agents"}


def test_queries_per_list_do_not_grow_with_page_size(api_client, world):
    topic = TopicFactory(slug="bulk")
    for n in range(110):
        make_paper(
            arxiv_id=f"2607.{n:05d}",
            submitted=dt.date(2026, 7, 1) + dt.timedelta(days=n % 20),
            authors=[(f"Author {n}", [f"Inst {n}"]), ("Shared Author", ["Shared Inst"])],
            affiliations=[f"Inst {n}", "Shared Inst"],
            cross_lists=["cs.AI"],
            topics=[topic, world.llm],
        )

    def count(url):
        with CaptureQueriesContext(connection) as ctx:
            response = api_client.get(url)
        assert response.status_code == 200
        return len(ctx.captured_queries), len(response.json()["results"])

    for base in ("/api/v1/papers/?", "/api/v1/topics/llm/papers/?", "/api/v1/search/?q=study&"):
        api_client.get(base)  # a topic's list takes its stored paper count once
        few, shown_few = count(base + "page_size=10")
        many, shown_many = count(base + "page_size=100")
        assert (shown_few, shown_many) == (10, 100)
        assert few == many, base


@pytest.mark.parametrize(
    "query", ["topic=100%25", "category=%25s", "primary_category=%25(x)s", "withdrawn=%25d"]
)
def test_percent_signs_in_bad_values_are_reported_not_crashed_on(api_client, world, query):
    param = query.split("=")[0]
    assert_error(api_client.get(f"/api/v1/papers/?{query}"), 400, param=param)


def test_an_empty_cursor_is_the_first_page(api_client, world):
    assert ids(api_client.get("/api/v1/papers/?cursor=")) == ids(api_client.get("/api/v1/papers/"))
