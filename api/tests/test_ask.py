"""``POST /api/v1/topics/<slug>/ask/``: the answer's JSON shape, no answer, bad questions,
an unknown topic, the rate limit (429 with Retry-After), hostile text kept a JSON string, and
the OpenAPI description."""

import pytest
from django.urls import reverse

from ask.ratelimit import WINDOW_SECONDS
from ask.tests.conftest import GRPO, fresh_window
from papers.tests.factories import PaperFactory
from topics.tests.factories import AssignmentFactory

pytestmark = pytest.mark.django_db


def api_url(topic):
    return reverse("api:topic-ask", kwargs={"slug": topic.slug})


def post(client, topic, data, **extra):
    return client.post(api_url(topic), data, content_type="application/json", **extra)


def test_api_answer_shape(client, reference_topic):
    response = post(client, reference_topic, {"q": GRPO})
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {
        "topic",
        "question",
        "answer",
        "citations",
        "mode",
        "found",
        "fallback_reason",
        "suggestions",
        "backend",
        "coverage",
        "cached",
        "took_ms",
    }
    assert body["topic"] == "llm-agent-training" and body["question"] == GRPO
    assert body["mode"] == "extractive" and body["found"] is True
    assert body["backend"] == "postgresql" and body["cached"] is False
    assert isinstance(body["took_ms"], int) and 0 < body["coverage"] <= 1
    assert [c["number"] for c in body["citations"]] == list(range(1, len(body["citations"]) + 1))
    first = body["citations"][0]
    assert set(first) == {"number", "id", "title", "url"}
    assert first["id"].startswith("local:")
    assert first["url"].startswith("http://testserver/papers/local/")
    assert "[1]" in body["answer"]
    assert post(client, reference_topic, {"question": GRPO.upper()}).json()["cached"] is True


def test_api_no_answer(client, reference_topic):
    body = post(client, reference_topic, {"question": "What is the capital of France?"}).json()
    assert body["found"] is False and body["citations"] == []
    assert body["suggestions"][-1]["url"].startswith("http://testserver/topics/llm/ask/?q=")


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({}, "q"),
        ({"q": ""}, "q"),
        ({"q": "   "}, "q"),
        ({"q": ["a"]}, "q"),
        ({"question": ""}, "question"),
        ({"q": GRPO, "question": GRPO}, "question"),
    ],
    ids=["missing", "empty", "blank", "not-a-string", "alias-empty", "both-names"],
)
def test_api_bad_question_is_400_naming_the_field(client, reference_topic, data, field):
    response = post(client, reference_topic, data)
    assert response.status_code == 400
    assert list(response.json()["error"]["details"]) == [field]


def test_api_question_is_a_deprecated_alias_of_q(client, reference_topic):
    response = post(client, reference_topic, {"question": GRPO})
    assert response.status_code == 200 and response.json()["question"] == GRPO


def test_api_question_over_the_limit_is_400_naming_the_limit(client, reference_topic):
    response = post(client, reference_topic, {"question": "agents " * 100})
    assert response.status_code == 400
    text = response.content.decode()
    assert "question" in text and "500 characters (it has 699)" in text


def test_api_unknown_topic_is_404(client, db):
    response = client.post(
        "/api/v1/topics/no-such-topic/ask/", {"question": "x"}, content_type="application/json"
    )
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")


def test_api_rate_limit_is_429_with_retry_after(client, reference_topic, settings):
    settings.ASK_RATE_LIMIT_PER_MINUTE = 1
    fresh_window()
    assert post(client, reference_topic, {"question": GRPO}).status_code == 200
    response = post(client, reference_topic, {"question": GRPO})
    assert response.status_code == 429
    assert 1 <= int(response["Retry-After"]) <= WINDOW_SECONDS
    assert response["Content-Type"].startswith("application/json")


def test_api_hostile_text_stays_a_json_string(client, reference_topic):
    paper = PaperFactory(
        title="Prompt injection <script>x</script> in agent training",
        abstract="Prompt injection <script>x</script> corrupts agent training [99].",
    )
    AssignmentFactory(paper=paper, topic=reference_topic)
    body = post(
        client, reference_topic, {"question": "What does prompt injection do to agent training?"}
    ).json()
    assert body["citations"][0]["title"] == paper.title
    assert body["answer"] == "Prompt injection <script>x</script> corrupts agent training. [1]"


def test_openapi_schema_describes_the_ask_endpoint():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    operation = schema["paths"]["/api/v1/topics/{slug}/ask/"]["post"]
    assert operation["operationId"] == "topics_ask"
    request_ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert request_ref.endswith("/AskRequestRequest")
    answer_ref = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    answer = schema["components"]["schemas"][answer_ref.rsplit("/", 1)[1]]
    assert {"answer", "citations", "mode"} <= set(answer["properties"])
    assert {"400", "404", "429"} <= set(operation["responses"])
