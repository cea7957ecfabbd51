"""The OpenAPI schema validates (drf-spectacular's own validation, warnings failing) and
describes every read endpoint and its errors, the bearer token and the access endpoints;
the docs pages are served."""

import pytest
import yaml
from django.core.management import call_command

pytestmark = pytest.mark.django_db

READ_PATHS = [
    "/api/v1/papers/",
    "/api/v1/papers/{paper_id}/",
    "/api/v1/papers/{paper_id}/bibtex/",
    "/api/v1/papers/{paper_id}/similar/",
    "/api/v1/topics/",
    "/api/v1/topics/{slug}/",
    "/api/v1/topics/{slug}/papers/",
    "/api/v1/topics/{slug}/trend/",
    "/api/v1/topics/{slug}/papers.bib",
    "/api/v1/topics/{slug}/papers.csv",
    "/api/v1/topics/{slug}/papers.jsonl",
    "/api/v1/categories/",
    "/api/v1/categories/{code}/",
    "/api/v1/search/",
]


@pytest.fixture(scope="module")
def schema(tmp_path_factory):
    path = tmp_path_factory.mktemp("schema") / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(path))
    return yaml.safe_load(path.read_text())


def test_every_read_endpoint_is_described_with_its_errors(schema):
    for path in READ_PATHS:
        operation = schema["paths"][path]["get"]
        assert operation["summary"], path
        for status in ("404", "429", "500"):
            assert operation["responses"][status]["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/Error"
            }
        for parameter in operation.get("parameters", []):
            assert parameter.get("description"), (path, parameter["name"])
    assert "Retry-After" in schema["paths"]["/api/v1/papers/"]["get"]["responses"]["429"]["headers"]
    assert schema["components"]["schemas"]["Error"]["required"] == ["error"]


def test_paper_filters_are_documented(schema):
    names = {p["name"] for p in schema["paths"]["/api/v1/papers/"]["get"]["parameters"]}
    assert names >= {
        "topic",
        "category",
        "primary_category",
        "submitted_after",
        "submitted_before",
        "updated_after",
        "author",
        "affiliation",
        "withdrawn",
        "q",
        "ordering",
        "cursor",
        "page_size",
        "fields",
    }


def test_schema_and_docs_are_served(api_client):
    schema = api_client.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    assert api_client.get("/api/v1/docs/").status_code == 200
    assert api_client.get("/api/v1/docs/redoc/").status_code == 200


def test_the_address_people_guess_leads_to_the_documentation(client):
    response = client.get("/api/")
    assert response.status_code == 302 and response["Location"] == "/api/v1/docs/"


def test_schema_describes_the_bearer_token_and_the_access_endpoints():
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)

    assert schema["components"]["securitySchemes"]["tokenAuth"]["scheme"] == "bearer"
    follows = schema["paths"]["/api/v1/me/follows/"]
    assert {"tokenAuth": []} in follows["post"]["security"]
    assert {} not in follows["get"]["security"]
    assert set(follows["post"]["responses"]) >= {"200", "201", "400", "401"}
    decide = schema["paths"]["/api/v1/assignments/{id}/accept/"]["post"]
    assert set(decide["responses"]) >= {"200", "401", "403", "404"}


def test_search_documents_mode_and_meta(schema):
    operation = schema["paths"]["/api/v1/search/"]["get"]
    parameters = {p["name"]: p for p in operation["parameters"]}
    assert parameters["mode"]["schema"]["enum"] == ["hybrid", "keyword", "semantic"]
    assert "meta.mode" in parameters["mode"]["description"]
    assert parameters["q"]["required"] is True
    body = operation["responses"]["200"]["content"]["application/json"]["schema"]
    name = body["$ref"].rsplit("/", 1)[1]
    meta = schema["components"]["schemas"][name]["properties"]["meta"]
    assert meta["required"] == ["count", "count_exact", "mode", "requested_mode", "fallback"]
    assert "group_by" in schema["components"]["schemas"][name]["required"]
    assert "group_by" in parameters
    assert meta["properties"]["mode"]["enum"] == ["hybrid", "keyword", "semantic"]
    assert "rank" in schema["components"]["schemas"]["SearchResult"]["properties"]
