"""The API's OpenAPI 3.1 description, generated from the route table and the request models.

The one place the document is built: every path, method, path and query parameter, success status and
access comes from `contract.ROUTES`, every request body's schema from its request model in `edges/requests/`
(its pydantic mirror's `model_json_schema()`, held to the same answers as the model by
tests/unit/test_request_validation.py, so what is published is what is validated), and every error from
the catalogue.
Served at `GET /agent_api/v1/openapi.json`; the property-based fuzz (tests/http/test_fuzz.py) drives
every route from it. A success body's schema is its route's answer model (edges/answers.py) where it has
one, else a JSON object; each body, asked and answered, carries an example built from its fields' examples.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any, Literal

from pydantic.json_schema import models_json_schema

from agent_memory.api.contract import ROUTES, UUID_PATTERN, RouteSpec, parameter_rule, path_parameters
from agent_memory.api.errors import CATALOGUE
from agent_memory.edges.answers import ANSWERS, answer_model
from agent_memory.edges.requests.schemas import mirror
from agent_memory.edges.requests.validation import Model
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
    # The console's session routes: the session cookie (signing in takes a Human's token in the body).
    "console": [{"consoleSession": []}],
}


def example(schema: Json, schemas: Json) -> Any:
    """An example value of `schema`, built from the `examples` its fields declare, else from its type.

    An object holds its required fields and any optional field that names an example, so an example
    shows what a field is for without a second copy of it here: the models declare examples once.
    """
    if "examples" in schema:
        return schema["examples"][0]
    if "$ref" in schema:
        return example(schemas[schema["$ref"].rsplit("/", 1)[1]], schemas)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for either in ("anyOf", "oneOf"):
        if either in schema:
            branches = [b for b in schema[either] if b.get("type") != "null"] or schema[either]
            return example(branches[0], schemas)
    kind = schema.get("type")
    if kind == "object":
        required = schema.get("required", [])
        props: Json = schema.get("properties", {})
        return {k: example(v, schemas) for k, v in props.items() if k in required or "examples" in v}
    if kind == "array":
        return [example(schema["items"], schemas)] if "items" in schema else []
    if kind == "string":
        return "notes"
    if kind == "integer":
        return max(schema.get("minimum", 1), 1) if schema.get("maximum", 1) >= 1 else schema.get("minimum", 0)
    if kind == "number":
        return schema.get("minimum", 1)
    if kind == "boolean":
        return True
    return None


def request_model(name: str) -> type[Model]:
    """The request model class a contract entry names."""
    for area in _INPUT_MODULES:
        module = importlib.import_module(f"agent_memory.edges.requests.{area}")
        found = getattr(module, name, None)
        if isinstance(found, type) and issubclass(found, Model):
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


def _success(route: RouteSpec, status: int, schemas: Json) -> Json:
    success: Json = {"description": "Done."}
    if status != 204:
        if route.name in ANSWERS:
            ref = {"$ref": _REF.format(model=ANSWERS[route.name])}
            success["content"] = {route.media: {"schema": ref, "example": example(ref, schemas)}}
            return success
        schema: Json = {"type": "object"} if route.media == "application/json" else {"type": "string"}
        success["content"] = {route.media: {"schema": schema}}
    return success


def _responses(route: RouteSpec, schemas: Json) -> Json:
    successes = {str(s): _success(route, s, schemas) for s in (route.status, *route.also)}
    # Every status of the catalogue: a refusal's status is its code's, whichever route gives it.
    refused = {"$ref": "#/components/responses/Refused"}
    return {**successes, **{str(s): refused for s in sorted({c.status for c in CATALOGUE.values()})}}


def _summary(route: RouteSpec) -> str:
    """A short line for an index: the description's first sentence, or its start."""
    first = route.description.split(". ", 1)[0].removesuffix(".")
    return first if len(first) <= 80 else first[:77].rsplit(" ", 1)[0] + "..."


def _operation(route: RouteSpec, bodies: dict[str, Json], schemas: Json) -> Json:
    op: Json = {
        "operationId": route.name,
        "summary": _summary(route),
        "description": route.description,
        "security": _SECURITY[route.access],
        "responses": _responses(route, schemas),
    }
    if route.door:
        op["tags"] = [f"{route.door} door"]
    params = _parameters(route)
    if params:
        op["parameters"] = params
    if route.request:
        schema = bodies[route.request]
        ref = {"$ref": _REF.format(model=route.request)}
        op["requestBody"] = {
            "required": bool(schema.get("required")),
            "content": {"application/json": {"schema": ref, "example": example(ref, schemas)}},
        }
    return op


@cache
def document() -> Json:
    """The whole OpenAPI 3.1 document (built once per container: it never changes while one runs)."""
    names = sorted({r.request for r in ROUTES if r.request})
    mode: Literal["validation"] = "validation"
    answers = sorted(set(ANSWERS.values()))
    models = [(mirror(request_model(n)), mode) for n in names] + [(answer_model(n), mode) for n in answers]
    # Each body refers to its own definition by name, so only the shared definitions are kept.
    _, top = models_json_schema(models, ref_template=_REF)
    schemas: dict[str, Json] = dict(top.get("$defs", {}))
    bodies = {n: schemas[request_model(n).__name__] for n in names}
    schemas["Error"] = ERROR_SCHEMA
    paths: dict[str, Json] = {}
    for route in ROUTES:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route, bodies, schemas)
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
                "consoleSession": {
                    "type": "apiKey",
                    "in": "cookie",
                    "name": "am_console",
                    "description": "The console's session (POST /console/api/session); changes also send X-CSRF-Token.",
                },
            },
        },
    }
