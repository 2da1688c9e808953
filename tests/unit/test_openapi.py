"""The OpenAPI document the route table generates: a valid 3.1 document that describes every route."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agent_memory.api.contract import ROUTES, path_parameters
from agent_memory.api.errors import CATALOGUE
from agent_memory.edges.http.openapi import document, request_model
from openapi_spec_validator import validate
from openapi_spec_validator.validation.validators import OpenAPIV31SpecValidator

ROOT = Path(__file__).resolve().parents[2]


def test_the_document_is_valid_openapi_3_1() -> None:
    doc = document()
    assert doc["openapi"].startswith("3.1")
    validate(doc, cls=OpenAPIV31SpecValidator)  # raises on the first violation


def test_every_route_is_described_once_with_its_parameters_body_and_statuses() -> None:
    doc = document()
    operations = [(path, method, op) for path, item in doc["paths"].items() for method, op in item.items()]
    assert sorted(op["operationId"] for _, _, op in operations) == sorted(r.name for r in ROUTES)
    for route in ROUTES:
        op = doc["paths"][route.path][route.method.lower()]
        params = {p["name"]: p for p in op.get("parameters", [])}
        assert set(params) == {*path_parameters(route.path), *route.query}
        assert all(params[n]["schema"]["pattern"] for n in path_parameters(route.path))
        # Its success statuses and every status the catalogue can answer
        assert set(op["responses"]) == {
            str(route.status),
            *(str(s) for s in route.also),
            *(str(c.status) for c in CATALOGUE.values()),
        }
        if route.request:
            ref = op["requestBody"]["content"]["application/json"]["schema"]["$ref"]
            assert ref == f"#/components/schemas/{route.request}"
            assert request_model(route.request).__name__ in doc["components"]["schemas"]
        else:
            assert "requestBody" not in op
        # And a token (or the operator key) everywhere but on the public routes
        assert bool(op["security"]) == (route.access != "public")


def test_the_error_body_names_every_code_of_the_catalogue() -> None:
    error = document()["components"]["schemas"]["Error"]["properties"]["error"]
    assert error["properties"]["code"]["enum"] == sorted(CATALOGUE)
    assert error["required"] == ["code", "message"]


def test_the_committed_document_is_current() -> None:
    committed = json.loads((ROOT / "docs" / "openapi.json").read_text())
    assert committed == document(), "docs/openapi.json is out of date: run `make template`"


def test_the_route_serves_the_document_the_models_generate_without_building_it() -> None:
    # Given a fresh process that answers the openapi route, as its Lambda does
    probe = (
        "import json, sys; from agent_memory.edges.http.handlers.openapi import openapi_document; "
        "doc = openapi_document(None); print(json.dumps({'doc': doc, 'pydantic': 'pydantic' in sys.modules}))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "shared")}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    got = json.loads(done.stdout)
    # Then it answers the document the models generate (`make template` writes the copy it serves),
    assert got["doc"] == document(), "edges/http/openapi.json is out of date: run `make template`"
    # and never imported pydantic to do so.
    assert got["pydantic"] is False


def test_every_operation_is_described_by_its_route() -> None:
    paths = document()["paths"]
    for route in ROUTES:
        op = paths[route.path][route.method.lower()]
        assert op["description"] == route.description and op["description"], route.name
        assert 0 < len(op["summary"]) <= 80 and "\n" not in op["summary"], route.name
