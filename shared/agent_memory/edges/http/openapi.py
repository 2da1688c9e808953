"""The API's OpenAPI 3.1 description, generated from the route table and the request models.

The one place the document is built: every path, method, path and query parameter, success status and
access comes from `contract.ROUTES`, every request body's schema from its pydantic model in `edges/requests/`
(`model_json_schema()`, so what is published is what is validated), and every error from the catalogue.
Served at `GET /agent_api/v1/openapi.json`; the property-based fuzz (tests/http/test_fuzz.py) drives
every route from it. Success bodies are described as JSON objects; the views are not spelled out yet.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from agent_memory.api.contract import ROUTES, UUID_PATTERN, RouteSpec, parameter_rule, path_parameters
from agent_memory.api.errors import CATALOGUE
from agent_memory.edges.tools.dispatch import SCHEMA_FORMATS

Json = dict[str, Any]

# Where the contract's request model names live: each route imports only its own area's module.
_INPUT_MODULES = ("directory", "memory", "executions", "memories", "records", "conversations")
_REF = "#/components/schemas/{model}"

ERROR_SCHEMA: Json = {
    "type": "object",
    "required": ["error"],
    "additionalProperties": False,
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "additionalProperties": False,
            "properties": {
                "code": {"enum": sorted(CATALOGUE)},
                "message": {"type": "string", "minLength": 1},
                "details": {"type": "object"},
            },
        }
    },
}
_QUERY_SCHEMAS: dict[str, Json] = {
    "memory[speaker_public_id]": {"type": "string", "pattern": UUID_PATTERN},
    "skill[speaker_public_id]": {"type": "string", "pattern": UUID_PATTERN},
    "format": {"enum": list(SCHEMA_FORMATS), "default": SCHEMA_FORMATS[0]},
    # An export's next page, exactly as its Export-Next-Cursor header gave it.
    "cursor": {"type": "string", "maxLength": 400},
    "limit": {"type": "integer", "minimum": 1, "maximum": 1000},
    "prefix": {"type": "string", "maxLength": 1024},
}
_SECURITY: dict[str, list[Json]] = {
    "read": [{"bearer": []}],
    "write": [{"bearer": []}],
    "operator": [{"operatorKey": []}],
    "public": [],
}


def request_model(name: str) -> type[BaseModel]:
    """The request model class a contract entry names."""
    for area in _INPUT_MODULES:
        module = importlib.import_module(f"agent_memory.edges.requests.{area}")
        found = getattr(module, name, None)
        if isinstance(found, type) and issubclass(found, BaseModel):
            return found
    raise LookupError(f"no request model {name!r} in agent_memory.edges.requests")


def _parameters(route: RouteSpec) -> list[Json]:
    out: list[Json] = []
    for name in path_parameters(route.path):
        rule = parameter_rule(name)
        out.append(
            {
                "name": name,
                "in": "path",
                "required": True,
                "description": f"Must be {rule.description}; anything else is 404 not_found.",
                "schema": {"type": "string", "pattern": rule.pattern},
            }
        )
    out += [{"name": q, "in": "query", "required": False, "schema": _QUERY_SCHEMAS[q]} for q in route.query]
    return out


def _success(route: RouteSpec, status: int) -> Json:
    success: Json = {"description": "Done."}
    if status != 204:
        schema: Json = {"type": "object"} if route.media == "application/json" else {"type": "string"}
        success["content"] = {route.media: {"schema": schema}}
    return success


def _responses(route: RouteSpec) -> Json:
    successes = {str(s): _success(route, s) for s in (route.status, *route.also)}
    # Every status of the catalogue: a refusal's status is its code's, whichever route gives it.
    refused = {"$ref": "#/components/responses/Refused"}
    return {**successes, **{str(s): refused for s in sorted({c.status for c in CATALOGUE.values()})}}


def _operation(route: RouteSpec, bodies: dict[str, Json]) -> Json:
    op: Json = {
        "operationId": route.name,
        "summary": route.name.replace("_", " "),
        "security": _SECURITY[route.access],
        "responses": _responses(route),
    }
    if route.door:
        op["tags"] = [f"{route.door} door"]
    params = _parameters(route)
    if params:
        op["parameters"] = params
    if route.request:
        schema = bodies[route.request]
        op["requestBody"] = {
            "required": bool(schema.get("required")),
            "content": {"application/json": {"schema": {"$ref": _REF.format(model=route.request)}}},
        }
    return op


@cache
def document() -> Json:
    """The whole OpenAPI 3.1 document (built once per container: it never changes while one runs)."""
    names = sorted({r.request for r in ROUTES if r.request})
    mode: Literal["validation"] = "validation"
    models = [(request_model(n), mode) for n in names]
    # Each body refers to its own definition by name, so only the shared definitions are kept.
    _, top = models_json_schema(models, ref_template=_REF)
    schemas: dict[str, Json] = dict(top.get("$defs", {}))
    bodies = {n: schemas[request_model(n).__name__] for n in names}
    schemas["Error"] = ERROR_SCHEMA
    paths: dict[str, Json] = {}
    for route in ROUTES:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route, bodies)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Agent memory",
            "version": "1",
            "description": "Scoped, conditionally written markdown documents for AI agents. Generated from "
            "shared/agent_memory/contract.py and the request models.",
        },
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "responses": {
                "Refused": {
                    "description": "A refusal: the catalogue's code and a sentence (errors.py).",
                    "content": {"application/json": {"schema": {"$ref": _REF.format(model="Error")}}},
                }
            },
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "A token am_<h|a>_<id>_<secret>."},
                "operatorKey": {"type": "apiKey", "in": "header", "name": "X-Operator-Key"},
            },
        },
    }
