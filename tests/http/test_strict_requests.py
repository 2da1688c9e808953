"""Strict requests: a field no route takes is refused by name, on every route with a body, and nothing changes.

Driven by the contract and the OpenAPI document: each route's published example request (built from the
examples its request model declares) is sent with one unknown field beside its fields, then inside its
first object, as the room's owner (or the operator), with real ids in the path. Each must be 400
parameter_invalid naming that field, and the table and bucket must be as they were.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from agent_memory.api.contract import ROUTES, RouteSpec, path_parameters
from agent_memory.edges.http.openapi import document
from agent_memory.edges.tools.lambda_entry import handler as tool_lambda
from agent_memory_sdk.local.runtime import LocalService

from ..support import Api, code
from .test_fuzz import _world
from .world import bucket_objects, scan_table

BODY_ROUTES = [r for r in ROUTES if r.request]


def _stored() -> tuple[list[dict[str, Any]], dict[str, str]]:
    return sorted(scan_table(), key=lambda i: (str(i["pk"]), str(i["sk"]))), bucket_objects()


def _example(route: RouteSpec) -> dict[str, Any]:
    op = document()["paths"][route.path][route.method.lower()]
    body: dict[str, Any] = op["requestBody"]["content"]["application/json"]["example"]
    return body


def _with_unknown(body: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """The body with a stray field beside its fields, and (when it has one) inside its first object."""
    out = [({**body, "colour": "red"}, "colour")]
    first = next(iter(body), None)
    if first is not None and isinstance(body[first], dict) and first != "input":
        out.append(({**body, first: {**body[first], "colour": "red"}}, f"{first}.colour"))
    return out


def test_every_route_refuses_an_unknown_field_by_name_and_changes_nothing(fresh: LocalService) -> None:
    api = Api(fresh.url, fresh.operator_key)
    # Given a room with real ids for every path parameter, and every route's valid-shaped example body
    token, real = _world(api)
    headers = {"authorization": f"Bearer {token}", "x-operator-key": fresh.operator_key}
    before = _stored()
    refused: dict[str, list[str]] = {}
    for route in BODY_ROUTES:
        path = route.path
        for name in path_parameters(route.path):
            # A parameter the room has no row for (a record) gets a well-formed id: the body is judged first
            given = real[name][0] if name in real else "0193f0c2-a1b2-7c4e-8f5d-6a7b8c9d0e1f"
            path = path.replace("{" + name + "}", given)
        for body, where in _with_unknown(_example(route)):
            # When the body carries one field no route takes
            r = api.http.request(route.method, f"{fresh.url}{path}", json=body, headers=headers, timeout=60)
            message = r.json().get("error", {}).get("message", "") if r.content else ""
            # Then it is refused as parameter_invalid, naming the field where it was
            if code(r) != (400, "parameter_invalid") or f"`{where}`" not in message:
                refused.setdefault(route.name, []).append(f"{where}: {r.status_code} {r.text[:200]}")
    assert not refused, refused
    # And nothing changed anywhere
    assert _stored() == before


def test_a_misspelled_field_is_named_with_the_one_meant(api: Api) -> None:
    owner, ws, _ = api.room()
    agent = api.agent(owner, "helper")
    api.member(owner, ws, agent)
    before = _stored()
    # When a conversation is created with answering_agent_id instead of answering_agent_public_id
    r = api.post(f"/workspaces/{ws}/conversations", owner, {"conversation": {"answering_agent_id": agent.public_id}})
    # Then it is refused, the message naming the field and the spelling it meant, and nothing is created
    assert code(r) == (400, "parameter_invalid"), r.text
    message = r.json()["error"]["message"]
    assert "`conversation.answering_agent_id`" in message and "did you mean `answering_agent_public_id`?" in message
    assert _stored() == before


def test_a_field_far_from_any_lists_the_fields_taken(api: Api) -> None:
    owner, ws, conv = api.room()
    r = api.post(
        f"/workspaces/{ws}/conversations/{conv}/memory/show", owner, {"memory": {"path": "conversation/a.md", "zzz": 1}}
    )
    assert code(r) == (400, "parameter_invalid"), r.text
    message = r.json()["error"]["message"]
    taken = r"`memory\.zzz`: remove it; the fields taken here are: speaker_public_id, path\."
    assert re.search(taken, message), message


@pytest.mark.parametrize("field", ["idempotency_key"])
def test_a_tool_call_keeps_the_fields_it_took(api: Api, field: str) -> None:
    # The tool route's body has always carried its key beside the input (a runtime's tool call has no headers)
    owner, ws, conv = api.room()
    started = api.post(f"/workspaces/{ws}/conversations/{conv}/executions", owner, {"execution": {}})
    execution = started.json()["execution"]["public_id"]
    body = {"input": {"path": "conversation/"}, field: "k-1"}
    r = api.post(f"/executions/{execution}/tools/memory_ls", owner, body)
    assert r.status_code == 200 and not r.json()["is_error"], r.text
    # But a stray field in the tool's input is the model's mistake, named with the field it meant
    r = api.post(f"/executions/{execution}/tools/memory_ls", owner, {"input": {"pth": "conversation/"}})
    assert r.status_code == 200 and r.json()["is_error"], r.text
    assert "input.pth" in r.json()["content"] and "did you mean `path`?" in r.json()["content"], r.text


def test_the_tool_lambda_refuses_a_stray_event_field_by_name(api: Api) -> None:
    owner, ws, conv = api.room()
    started = api.post(f"/workspaces/{ws}/conversations/{conv}/executions", owner, {"execution": {}})
    event = {"execution": started.json()["execution"]["public_id"], "tool": "memory_ls", "input": {}}
    secret = started.json()["secret"]
    assert tool_lambda({**event, "secret": secret})["is_error"] is False
    # When the event misspells a field (the proof, here) it is refused by name, with the field it meant
    out = tool_lambda({**event, "secret": secret, "idempotency-key": "k"})
    assert out["error"]["code"] == "parameter_invalid", out
    assert "`idempotency-key`: did you mean `idempotency_key`?" in out["error"]["message"], out
    # And a stray field in the tool's input is the model's to fix, as a tool result naming it
    out = tool_lambda({**event, "secret": secret, "input": {"pth": "conversation/"}})
    assert out["is_error"] is True and "`input.pth`: did you mean `path`?" in out["content"], out


def test_a_misspelled_binding_field_is_named_with_the_one_meant(api: Api) -> None:
    owner, ws, _ = api.room()
    binding = {"name": "conversation", "scope": "conversation", "acess": "read_write"}
    body = {"conversation": {"memory_context": {"bindings": [binding]}}}
    r = api.post(f"/workspaces/{ws}/conversations", owner, body)
    # The bindings grammar keeps the seed's code for a binding outside it, and names the field meant
    assert code(r) == (422, "validation_failed"), r.text
    assert "bindings[0] has unknown field(s): acess; did you mean `access`?" in r.json()["error"]["message"]


def test_a_field_outside_its_object_is_named_where_it_belongs(api: Api) -> None:
    owner, ws, conv = api.room()
    r = api.post(f"/workspaces/{ws}/conversations/{conv}/memory/show", owner, {"path": "conversation/a.md"})
    assert code(r) == (400, "parameter_invalid"), r.text
    message = r.json()["error"]["message"]
    assert "`path`: did you mean `memory.path`? It belongs inside `memory`." in message, message
