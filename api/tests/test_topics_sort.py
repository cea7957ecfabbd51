"""``topics/`` with the topics index's figures (paper count, momentum, rising) and
``sort=name|size|rising``: orders, the 400 for another value, and a query count that does not
grow with the number of topics."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from topics.tests.factories import TopicFactory

from .conftest import assert_error

pytestmark = pytest.mark.django_db


def slugs(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [t["slug"] for t in response.json()["results"]]


def test_topics_carry_counts_and_momentum_and_sort(api_client, world):
    body = api_client.get("/api/v1/topics/?sort=size").json()
    assert [(t["slug"], t["paper_count"]) for t in body["results"]] == [
        ("llm", 3),
        ("llm-agent-training", 2),
        ("robotics", 0),
    ]
    llm = body["results"][0]
    # The topic page's figures: the same momentum as topics/{slug}/.
    assert llm["momentum"] == api_client.get("/api/v1/topics/llm/").json()["momentum"]
    assert llm["rising"] == pytest.approx(100.0)  # all new papers of the last four weeks
    # Display names, case-insensitive: "LLM Agent Training" < "LLM: Large Language Model".
    by_name = ["llm-agent-training", "llm", "robotics"]
    assert slugs(api_client.get("/api/v1/topics/")) == by_name
    assert slugs(api_client.get("/api/v1/topics/?sort=name")) == by_name
    # Same share gain and recent count: the tie goes by name.
    assert slugs(api_client.get("/api/v1/topics/?sort=rising")) == by_name
    assert slugs(api_client.get("/api/v1/topics/?sort=size&q=l")) == ["llm", "llm-agent-training"]


def test_an_unknown_sort_is_a_400_naming_the_values(api_client, world):
    error = assert_error(api_client.get("/api/v1/topics/?sort=newest"), 400, param="sort")
    assert "rising" in str(error)


def test_query_count_does_not_grow_with_topics(api_client, world):
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert api_client.get("/api/v1/topics/?sort=rising").status_code == 200
        return len(captured)

    few = queries()
    for n in range(8):
        TopicFactory(name=f"Extra {n}", slug=f"extra-{n}")
    assert queries() == few


@pytest.mark.parametrize(
    ("paper_count", "expected"),
    [
        ("3", ["llm"]),
        (">1", ["llm", "llm-agent-training"]),
        ("<1", ["robotics"]),
        ("<1|>2", ["llm", "robotics"]),
        (">100", []),
    ],
)
def test_paper_count_compares_openalex_style(api_client, world, paper_count, expected):
    url = f"/api/v1/topics/?sort=size&paper_count={paper_count}"
    assert sorted(slugs(api_client.get(url))) == expected


@pytest.mark.parametrize("paper_count", ["many", ">", ">=3", "-1", "3|", "1e3", "9" * 13])
def test_a_bad_paper_count_is_a_400_naming_it(api_client, world, paper_count):
    assert_error(
        api_client.get(f"/api/v1/topics/?paper_count={paper_count}"), 400, param="paper_count"
    )


def _drf_momentum(m) -> dict:
    """The momentum as DRF's MomentumSerializer renders it, field by field."""
    from api.serializers.topics import MomentumSerializer
    from topics.momentum import momentum_sentence

    return MomentumSerializer(
        {
            "as_of": m.as_of,
            "recent": m.recent,
            "before": m.before,
            "change_pct": m.change_pct,
            "share": m.share,
            "sentence": momentum_sentence(m),
            "weeks": [{"week_start": w.week_start, "count": w.count} for w in m.weeks],
        }
    ).data


@pytest.mark.parametrize(
    "query", ["sort=size", "sort=rising&page_size=2", "fields=slug,links,momentum,parent"]
)
def test_the_list_is_what_drfs_field_by_field_rendering_gives(
    api_client, world, monkeypatch, query
):
    """The list's topics are built directly (api.serializers.topics.TopicSerializer and
    momentum_data): the same JSON as DRF's own rendering of the declared fields, a topic
    with a parent, one without, one the index does not hold yet (null figures) included."""
    import dataclasses

    from rest_framework import serializers

    from api.serializers import topics as topic_serializers
    from topics import index as topics_index

    TopicFactory(name="Not indexed yet", slug="not-indexed-yet", parent=world.llm)
    built = topics_index.topic_index

    def index_without_the_new_topic():
        index = built()
        kept = [t for t in index.topics if t.name != "Not indexed yet"]
        return dataclasses.replace(index, topics=kept)

    monkeypatch.setattr(topics_index, "topic_index", index_without_the_new_topic)
    direct = api_client.get(f"/api/v1/topics/?{query}")
    monkeypatch.setattr(
        topic_serializers.TopicSerializer,
        "to_representation",
        serializers.ModelSerializer.to_representation,
    )
    monkeypatch.setattr(topic_serializers, "momentum_data", _drf_momentum)
    by_drf = api_client.get(f"/api/v1/topics/?{query}")
    assert direct.status_code == by_drf.status_code == 200
    assert direct.content == by_drf.content
    results = direct.json()["results"]
    if "page_size" not in query:
        assert sum(t["momentum"] is None for t in results) == 1
        assert sum(t["momentum"] is not None for t in results) == 3
    if "parent" in results[0]:
        assert {t["parent"] for t in results} >= {None, "llm"}
