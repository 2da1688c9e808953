"""Bad input never becomes a 500: each request here was one, and now gets a 4xx with its code and a
sentence, and changes nothing (the rows, the content objects and the revision are as they were)."""

from __future__ import annotations

import base64
import json
import threading
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import requests

from ..support import API, CONV, WORKSPACE, Api, bindings, code, conv_base
from .runs import Run, make_run
from .world import World, bucket_objects, make_world, scan_table

MAX_BODY_BYTES = 512 * 1024


@pytest.fixture
def w(api: Api) -> World:
    return make_world(api)


def _stored() -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Everything behind the gateway: every table item and every content object."""
    return sorted(scan_table(), key=lambda i: (str(i["pk"]), str(i["sk"]))), bucket_objects()


def _raw(api: Api, method: str, path: str, token: str | None, data: bytes, **headers: str) -> requests.Response:
    h = {"content-type": "application/json", **headers}
    if token:
        h["authorization"] = f"Bearer {token}"
    return api.http.request(method, f"{api.url}{API}{path}", data=data, headers=h, timeout=60)


@contextmanager
def _aws_calls() -> Iterator[list[str]]:
    """The AWS operations the service makes meanwhile (the gateway runs in this process, on these clients)."""
    from agent_memory.store import aws_clients

    seen: list[str] = []
    lock = threading.Lock()

    def count(event_name: str, **_: Any) -> None:
        with lock:
            seen.append(event_name)

    clients = aws_clients()
    for client in clients:
        client.meta.events.register("before-call", count)
    try:
        yield seen
    finally:
        for client in clients:
            client.meta.events.unregister("before-call", count)


def _sentence(r: requests.Response) -> str:
    message: str = r.json()["error"]["message"]
    assert message.endswith(".") and " " in message, message
    return message


# ---- a path whose sort key would pass DynamoDB's 1024 bytes --------------------------------------------


def test_a_path_whose_sort_key_would_exceed_1024_bytes_is_refused_and_stores_nothing(w: World) -> None:
    # Given a conversation with a one-letter root, so a 1024-byte path leaves 1022 bytes for the sort key
    assert w.configure(bindings(CONV, WORKSPACE, {**CONV, "name": "a"})).status_code == 200
    before = _stored()
    # When a document is written at a path of exactly 1024 bytes (the sort key DOC#<rest> would be 1026)
    path = "a/" + "x" * 1022
    r = w.api.write(w.owner, w.base, path, "too long a key")
    # Then it is memory_path_invalid with a sentence naming the bound, and nothing was stored
    assert code(r) == (422, "memory_path_invalid"), r.text
    assert "1020 bytes" in _sentence(r)
    assert _stored() == before
    # And the longest rest that fits is accepted, under a short root as under a long one
    assert w.api.write(w.owner, w.base, "a/" + "x" * 1020, "fits").status_code == 201
    assert w.api.write(w.owner, w.base, "conversation/" + "y" * 1011, "fits").status_code == 201
    # And show, grep and delete refuse the over-long path the same way
    assert code(w.api.show(w.owner, w.base, path)) == (422, "memory_path_invalid")
    assert code(w.api.grep(w.owner, w.base, "x", path=path)) == (422, "memory_path_invalid")
    assert code(w.api.delete(w.owner, w.base, path, ("01990000-0000-7000-8000-000000000001", 1))) == (
        422,
        "memory_path_invalid",
    )


# ---- numbers past DynamoDB's 38 digits through a tool ---------------------------------------------------


@pytest.fixture
def run(api: Api) -> Run:
    return make_run(api)


def test_a_tool_input_lock_version_of_ten_to_the_fortieth_is_a_refusal_the_model_reads(run: Run) -> None:
    # Given an execution and a document
    ex = run.execution()
    written = run.ok(
        ex,
        "memory_write",
        path="conversation/a.md",
        content="a",
        **{
            "expected_public_id": None,
            "expected_lock_version": None,
        },
    )
    pid = written["data"]["public_id"]
    before = _stored()
    # When the model edits it with a 41-digit lock_version
    out = run.tool(
        ex,
        "memory_edit",
        path="conversation/a.md",
        old_text="a",
        new_text="b",
        **{
            "expected_public_id": pid,
            "expected_lock_version": 10**40,
        },
    )
    # Then it is a parameter_invalid result naming the range, and nothing changed
    assert out["is_error"] is True and out["code"] == "parameter_invalid", out
    assert "2**53" in out["content"] or str(2**53) in out["content"], out
    assert _stored() == before


# ---- a body nested 200,000 deep ------------------------------------------------------------------------


@pytest.mark.parametrize(("opener", "closer", "depth"), [("[", "]", 200_000), ('{"a":', "}", 80_000)])
def test_a_body_nested_past_64_levels_is_parameter_invalid(w: World, opener: str, closer: str, depth: int) -> None:
    # Given a body nesting 200,000 arrays (or 80,000 objects, as many as fit the cap) inside memory_context
    body = ('{"memory_context":' + opener * depth + "1" + closer * depth + "}").encode()
    assert len(body) <= MAX_BODY_BYTES
    before = _stored()
    # When it is posted
    r = _raw(w.api, "POST", f"/workspaces/{w.ws}/conversations/{w.conv}/memory_context", w.owner.token, body)
    # Then it is parameter_invalid, naming the bound, and nothing changed
    assert code(r) == (400, "parameter_invalid"), r.text
    assert "64 levels" in _sentence(r)
    assert _stored() == before


def _parsed(text: str) -> dict[str, Any]:
    from agent_memory.api.contract import BY_NAME
    from agent_memory.edges.http.glue import to_request

    req = to_request(BY_NAME["create_workspace"], {"body": text, "headers": {}})
    # The glue keeps a body's refusal until the caller is authenticated; here it is what is asserted.
    if req.body_error is not None:
        raise req.body_error
    return req.body


def test_nesting_is_counted_outside_strings_and_64_levels_parse() -> None:
    from agent_memory.api.errors import ApiError

    # Brackets inside strings (escaped quotes included) are text, not nesting
    text = json.dumps({"a": '\\"[' * 5000 + "{" * 5000, "b": ["]"] * 100})
    assert _parsed(text) == json.loads(text)
    # 64 levels parse: the body object and 63 arrays inside it
    assert _parsed('{"a":' + "[" * 63 + "]" * 63 + "}")["a"] == json.loads("[" * 63 + "]" * 63)
    # 65 do not
    with pytest.raises(ApiError) as info:
        _parsed('{"a":' + "[" * 64 + "]" * 64 + "}")
    assert info.value.code == "parameter_invalid" and "64 levels" in info.value.message


# ---- a non-ASCII operator key ---------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["clé", "\u00ff" * 48])
def test_a_non_ascii_operator_key_is_not_authenticated(api: Api, key: str) -> None:
    before = _stored()
    # When an account is created with an operator key outside ASCII (HTTP carries it as Latin-1)
    r = api.http.post(
        f"{api.url}{API}/accounts",
        json={"account": {"name": "acme"}, "human": {"name": "ada"}},
        headers={"X-Operator-Key": key.encode("latin-1")},
        timeout=30,
    )
    # Then it is a wrong key like any other, and nothing was created
    assert code(r) == (401, "not_authenticated"), r.text
    assert _stored() == before


# ---- URL ids that are not UUIDs ---------------------------------------------------------------------------


NOT_UUIDS = [
    "x" * 3000,
    "not-a-uuid",
    "01990000-0000-7000-8000-00000000000G",
    "01990000-0000-7000-8000-000000000001%0A",
]


@pytest.mark.parametrize("bad", NOT_UUIDS)
def test_a_url_id_that_is_not_a_uuid_is_not_found(w: World, bad: str) -> None:
    before = _stored()
    # When any route's id parameter is not a UUID: workspace, conversation, agent, execution
    with _aws_calls() as seen:
        calls = [
            w.api.get(f"/workspaces/{bad}/conversations/{w.conv}", w.owner),
            w.api.get(f"/workspaces/{w.ws}/conversations/{bad}", w.owner),
            w.api.ls(w.owner, f"/workspaces/{bad}/memory"),
            w.api.write(w.owner, conv_base(w.ws, bad), "conversation/a.md", "x"),
            w.api.post(f"/workspaces/{bad}/conversations", w.owner, {}),
            w.api.post(f"/agents/{bad}/credentials/rotate", w.owner),
            w.api.post(f"/executions/{bad}/tools/memory_ls", w.owner, {"input": {}}),
            w.api.call("PATCH", f"/workspaces/{bad}", w.owner, {"workspace": {"tool_provider_overrides": {}}}),
        ]
    # Then each is 404 not_found with a sentence, storage was never asked, and nothing changed
    for r in calls:
        assert code(r) == (404, "not_found"), r.text
        _sentence(r)
    assert seen == []
    assert _stored() == before


def test_a_url_id_check_still_answers_401_first(w: World) -> None:
    assert code(w.api.get(f"/workspaces/{'x' * 3000}/memory", None)) == (401, "not_authenticated")


@pytest.mark.parametrize(
    "path",
    [f"/profile/agents/{'n' * 3000}/memory", "/executions/01990000-0000-7000-8000-000000000001/tools/" + "t" * 3000],
)
def test_names_in_the_url_have_their_own_bound(w: World, path: str) -> None:
    # A definition name or tool name longer than any that can exist names nothing, and is not looked up
    with _aws_calls() as seen:
        r = w.api.get(path, w.owner) if "profile" in path else w.api.post(path, w.owner, {"input": {}})
    assert code(r) == (404, "not_found"), r.text
    assert seen == []


# ---- tool_provider_overrides keys --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides",
    [
        {f"nexus.tool{i}": "acme" for i in range(1000)},  # too many keys
        {"k" * 100_000: "acme"},  # one key too long; a few of these were past DynamoDB's 400 KB item
        {"nexus\nmemory": "acme"},
        {"": "acme"},
    ],
    ids=["many", "long", "control", "empty"],
)
def test_tool_provider_overrides_keys_are_bounded(w: World, overrides: dict[str, str]) -> None:
    before = _stored()
    r = w.api.call("PATCH", f"/workspaces/{w.ws}", w.owner, {"workspace": {"tool_provider_overrides": overrides}})
    assert code(r) == (400, "parameter_invalid"), r.text
    assert "tool_provider_overrides" in _sentence(r)
    assert _stored() == before


def test_overrides_merged_over_many_requests_stay_bounded(w: World) -> None:
    url = f"/workspaces/{w.ws}"
    for batch in range(2):
        keys = {f"nexus.tool{batch}-{i}": "acme" for i in range(16)}
        r = w.api.call("PATCH", url, w.owner, {"workspace": {"tool_provider_overrides": keys}})
        assert r.status_code == 200, r.text
    before = _stored()
    r = w.api.call("PATCH", url, w.owner, {"workspace": {"tool_provider_overrides": {"nexus.more": "acme"}}})
    assert code(r) == (400, "parameter_invalid"), r.text
    assert "32" in _sentence(r)
    assert _stored() == before
    # And clearing one makes room again
    r = w.api.call("PATCH", url, w.owner, {"workspace": {"tool_provider_overrides": {"nexus.tool0-0": None}}})
    assert r.status_code == 200, r.text
    r = w.api.call("PATCH", url, w.owner, {"workspace": {"tool_provider_overrides": {"nexus.more": "acme"}}})
    assert r.status_code == 200, r.text


# ---- the body cap counts bytes -------------------------------------------------------------------------------


def test_the_body_cap_counts_utf8_bytes_not_characters(w: World) -> None:
    # Given a body of fewer than 512 Ki characters but more than 512 KiB of UTF-8
    name = "日" * (MAX_BODY_BYTES // 3 + 10)
    body = json.dumps({"workspace": {"tool_provider_overrides": {name: "acme"}}}, ensure_ascii=False).encode()
    assert len(body.decode()) < MAX_BODY_BYTES < len(body)
    before = _stored()
    r = _raw(w.api, "PATCH", f"/workspaces/{w.ws}", w.owner.token, body)
    # Then it is refused for its size, and nothing changed
    assert code(r) == (400, "parameter_invalid"), r.text
    assert f"{MAX_BODY_BYTES} bytes" in _sentence(r)
    assert _stored() == before


def test_the_body_cap_counts_bytes_of_a_base64_body() -> None:
    # API Gateway base64-encodes bodies it does not take for text: the cap is on the decoded bytes
    from agent_memory.api.contract import BY_NAME
    from agent_memory.api.errors import ApiError
    from agent_memory.edges.http.glue import to_request

    def event(raw: bytes) -> dict[str, Any]:
        return {"body": base64.b64encode(raw).decode(), "isBase64Encoded": True, "headers": {}}

    ok = json.dumps({"a": "x" * (MAX_BODY_BYTES - 20)}).encode()
    assert len(ok) <= MAX_BODY_BYTES
    assert to_request(BY_NAME["create_workspace"], event(ok)).body["a"]
    over = json.dumps({"a": "é" * (MAX_BODY_BYTES // 2)}, ensure_ascii=False).encode()
    # (the glue keeps the refusal until the caller is authenticated)
    refused = to_request(BY_NAME["create_workspace"], event(over)).body_error
    assert isinstance(refused, ApiError)
    assert refused.code == "parameter_invalid" and f"{MAX_BODY_BYTES} bytes" in refused.message


# ---- paths look like what they are: NFC, no bidi or zero-width characters -------------------------------------


def test_paths_are_stored_and_answered_in_nfc(w: World) -> None:
    # Given a path written decomposed (e + combining acute)
    decomposed = unicodedata.normalize("NFD", "conversation/café.md")
    composed = unicodedata.normalize("NFC", decomposed)
    assert decomposed != composed
    r = w.api.write(w.owner, w.base, decomposed, "one document")
    # Then it is answered in NFC, and either spelling names the same document
    assert r.status_code == 201, r.text
    assert r.json()["memory"]["path"] == composed
    shown = w.api.show(w.owner, w.base, composed)
    assert shown.status_code == 200 and shown.json()["memory"]["content"] == "one document"
    assert code(w.api.write(w.owner, w.base, composed, "a second?")) == (409, "stale_object")
    assert [m["path"] for m in w.listing()] == [composed]


@pytest.mark.parametrize("ch", ["\u200b", "\u200f", "\u202e", "\u2066", "\u2069", "\u2060", "\ufeff", "\u061c"])
def test_bidi_and_zero_width_characters_are_refused_in_paths(w: World, ch: str) -> None:
    before = _stored()
    r = w.api.write(w.owner, w.base, f"conversation/pl{ch}an.md", "looks like plan.md")
    assert code(r) == (422, "memory_path_invalid"), r.text
    assert "invisible" in _sentence(r)
    assert _stored() == before
