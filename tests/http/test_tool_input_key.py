"""A tool call's Idempotency-Key inside the tool's input (issue 26, item 9).

The header, the body's `idempotency_key` beside the input, and `input.idempotency_key` (the model's own
argument, which the mutating tools' schemas describe) all mean the one key of the call: any of them alone
makes the call keyed, the same key in several places is one key, and two different keys in one call are
400 `parameter_invalid` naming the places, changing nothing. The in-account tool function takes the event's
key and the input's the same way.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from agent_memory.edges.tools.lambda_entry import handler as tool_lambda

from ..support import Api, Who, code

pytestmark = pytest.mark.http

NEW = {"expected_public_id": None, "expected_lock_version": None}
REPLAYED = "Idempotency-Replayed"


def session(api: Api) -> tuple[Who, Who, str, str, dict[str, Any]]:
    ada = api.account()
    ws = api.workspace(ada)
    alpha = api.agent(ada, "alpha")
    api.member(ada, ws, alpha)
    conv = api.conversation(ada, ws, answering_agent_public_id=alpha.public_id)
    r = api.post(f"/workspaces/{ws}/conversations/{conv}/executions", alpha, {"execution": {}})
    assert r.status_code == 201, r.text
    return ada, alpha, ws, conv, {**r.json()["execution"], "secret": r.json()["secret"]}


def versions(api: Api, who: Who, ws: str, conv: str, path: str) -> list[int]:
    r = api.post(f"/workspaces/{ws}/conversations/{conv}/memory/versions", who, {"memory": {"path": path}})
    if r.status_code == 404:
        return []
    assert r.status_code == 200, r.text
    return [v["lock_version"] for v in r.json()["versions"]]


def test_a_key_inside_the_input_makes_the_call_keyed(api: Api) -> None:
    ada, alpha, ws, conv, ex = session(api)
    url = f"/executions/{ex['public_id']}/tools/memory_write"
    k = f"toolu_{uuid.uuid4().hex}"
    call = {"input": {"path": "conversation/a.md", "content": "once", **NEW, "idempotency_key": k}}
    first = api.post(url, alpha, call)
    assert first.status_code == 200 and first.json()["is_error"] is False, first.text
    second = api.post(url, alpha, call)
    assert second.headers.get(REPLAYED) == "true" and second.json() == first.json()
    # The key moved to the header, or beside the input, is the same key of the same call
    bare = {"input": {"path": "conversation/a.md", "content": "once", **NEW}}
    third = api.post(url, alpha, bare, headers={"Idempotency-Key": k})
    assert third.headers.get(REPLAYED) == "true" and third.json() == first.json()
    fourth = api.post(url, alpha, {**bare, "idempotency_key": k})
    assert fourth.headers.get(REPLAYED) == "true" and fourth.json() == first.json()
    # The same key in all three places is one key
    every = api.post(url, alpha, {**call, "idempotency_key": k}, headers={"Idempotency-Key": k})
    assert every.headers.get(REPLAYED) == "true" and every.json() == first.json()
    assert versions(api, ada, ws, conv, "conversation/a.md") == [0]


def test_two_different_keys_in_one_call_are_refused_and_change_nothing(api: Api) -> None:
    ada, alpha, ws, conv, ex = session(api)
    url = f"/executions/{ex['public_id']}/tools/memory_write"
    inp = {"path": "conversation/b.md", "content": "x", **NEW}
    cases: list[tuple[dict[str, Any], dict[str, str] | None, tuple[str, ...]]] = [
        ({"input": {**inp, "idempotency_key": "k-a"}}, {"Idempotency-Key": "k-b"}, ("header", "input.idempotency_key")),
        ({"input": {**inp, "idempotency_key": "k-a"}, "idempotency_key": "k-b"}, None, ("input.idempotency_key",)),
        ({"input": inp, "idempotency_key": "k-a"}, {"Idempotency-Key": "k-b"}, ("header", "idempotency_key")),
        (
            {"input": {**inp, "idempotency_key": "k-a"}, "idempotency_key": "k-a"},
            {"Idempotency-Key": "k-c"},
            ("header",),
        ),
    ]
    for body, headers, named in cases:
        r = api.post(url, alpha, body, headers=headers)
        assert code(r) == (400, "parameter_invalid"), r.text
        message = r.json()["error"]["message"]
        assert "different Idempotency-Keys" in message and all(n in message for n in named), message
    # Malformed or non-string keys inside the input are the same refusal as elsewhere
    for bad in ("x" * 129, "", "\x00", 5, ["k"], {"k": 1}):
        r = api.post(url, alpha, {"input": {**inp, "idempotency_key": bad}})
        assert code(r) == (400, "parameter_invalid"), (bad, r.text)
    assert versions(api, ada, ws, conv, "conversation/b.md") == []


def test_the_mutating_tools_schemas_offer_the_key(api: Api) -> None:
    r = api.get("/tools/schemas", params={"format": "anthropic"})
    assert r.status_code == 200, r.text
    tools = {t["name"]: t for t in r.json()["tools"]}
    for name in ("memory_write", "memory_edit", "memory_delete", "memory_append"):
        if name in tools:
            assert "idempotency_key" in tools[name]["input_schema"]["properties"], name
    for name in ("memory_read", "memory_ls"):
        assert "idempotency_key" not in tools[name]["input_schema"]["properties"], name


def test_the_tool_function_takes_the_inputs_key_too(api: Api) -> None:
    ada, _, ws, conv, ex = session(api)
    k = f"toolu_{uuid.uuid4().hex}"
    inp = {"path": "conversation/c.md", "content": "lambda", **NEW}
    event = {"execution": ex["public_id"], "tool": "memory_write", "secret": ex["secret"]}
    first = tool_lambda({**event, "input": {**inp, "idempotency_key": k}})
    assert first["is_error"] is False, first
    again = tool_lambda({**event, "input": inp, "idempotency_key": k})
    assert again == first
    assert versions(api, ada, ws, conv, "conversation/c.md") == [0]
    clash = tool_lambda({**event, "input": {**inp, "idempotency_key": k}, "idempotency_key": "other"})
    assert clash["error"]["code"] == "parameter_invalid", clash
    assert "input.idempotency_key" in clash["error"]["message"]
    bad = tool_lambda({**event, "input": {**inp, "idempotency_key": 7}})
    assert bad["error"]["code"] == "parameter_invalid", bad
    assert versions(api, ada, ws, conv, "conversation/c.md") == [0]
