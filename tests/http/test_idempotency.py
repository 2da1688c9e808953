"""Idempotency-Key (issue 12): a keyed mutation happens once, and its retry answers the first answer again.

Every case is sent twice with the same key through the local gateway. The second answer must carry the
first one's status and body (secrets withheld) with `Idempotency-Replayed: true`, and storage must be
exactly as the first left it: every table row and every content object is compared, so "nothing was
written twice" is checked row by row, not inferred. AWS requests are counted with botocore event hooks
on the very clients the in-process gateway's handlers use (`agent_memory.store.aws_clients()`).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
import requests
from agent_memory.core.settings import settings
from agent_memory.edges.tools.lambda_entry import handler as tool_lambda
from agent_memory.store import aws_clients
from agent_memory_sdk.client import NEW as CLIENT_NEW
from agent_memory_sdk.client import MemoryClient
from agent_memory_sdk.local.mcp_server import MemoryRelay
from agent_memory_sdk.local.runtime import LocalService
from botocore.exceptions import EndpointConnectionError

from ..support import API, CONV, WORKSPACE, Api, Who, bindings, code, conv_base, created, ws_base
from .test_rate_limit import BUDGET, metered
from .world import aws_calls, bucket_objects, scan_table

REPLAYED = "Idempotency-Replayed"


# ---- what storage holds ----------------------------------------------------------------------------


def kind(pk: str, sk: str) -> str:
    """A row's kind: its partition key's prefix, with an anchor's and a workspace's items told apart."""
    head = pk.split("#", 1)[0]
    if head == "ANCHOR":
        return "ANCHOR:" + ("META" if sk == "#META" else sk.split("#", 1)[0])
    if head == "WS":
        return "WS:" + sk.split("#", 1)[0]
    return head


def table() -> dict[tuple[str, str], dict[str, Any]]:
    return {(str(i["pk"]), str(i["sk"])): i for i in scan_table()}


def census(rows: dict[tuple[str, str], dict[str, Any]] | None = None) -> Counter[str]:
    """How many rows of each kind the table holds."""
    return Counter(kind(pk, sk) for pk, sk in (rows if rows is not None else table()))


@dataclass(frozen=True)
class Storage:
    """Everything the service stores: every row, every object."""

    rows: dict[tuple[str, str], dict[str, Any]]
    objects: dict[str, str]

    @property
    def kinds(self) -> Counter[str]:
        return census(self.rows)


def storage() -> Storage:
    return Storage(table(), bucket_objects())


def grown(before: Storage, after: Storage) -> Counter[str]:
    """Rows added, by kind (removed rows count negative), plus new content objects as "s3"."""
    delta = Counter(after.kinds)
    delta.subtract(before.kinds)
    delta["s3"] = len(after.objects) - len(before.objects)
    return Counter({k: v for k, v in delta.items() if v})


def idem_rows() -> list[dict[str, Any]]:
    return [row for (pk, _), row in table().items() if pk.startswith("IDEM#")]


@contextmanager
def hooked(event: str, fn: Callable[..., Any], uid: str) -> Iterator[None]:
    """Register `fn` on `event` of both service clients for the block."""
    clients = aws_clients()
    for c in clients:
        c.meta.events.register(event, fn, unique_id=uid)
    try:
        yield
    finally:
        for c in clients:
            c.meta.events.unregister(event, unique_id=uid)


# ---- the world -------------------------------------------------------------------------------------


@dataclass
class World:
    """Ada's account: her room (workspace ws, conversation conv answered by the program agent alpha),
    Bob a member of it, Cy a Human of the account who is not; conversation/plan.md at lock_version 1
    (v0 "ship friday", v1 "ship monday"), workspace/team.md at lock_version 0."""

    api: Api
    ada: Who
    bob: Who
    cy: Who
    alpha: Who
    ws: str
    conv: str
    plan: tuple[str, int]
    team: tuple[str, int]

    @property
    def base(self) -> str:
        return conv_base(self.ws, self.conv)

    @property
    def conv_url(self) -> str:
        return f"/workspaces/{self.ws}/conversations/{self.conv}"

    def execution(self, **fields: Any) -> dict[str, Any]:
        r = self.api.post(f"{self.conv_url}/executions", self.alpha, {"execution": fields})
        assert r.status_code == 201, r.text
        return {**r.json()["execution"], "secret": r.json()["secret"]}


def make_world(api: Api) -> World:
    ada = api.account()
    ws = api.workspace(ada)
    alpha = api.agent(ada, "alpha")
    api.member(ada, ws, alpha)
    bob = api.human(ada, "bob")
    api.member(ada, ws, bob)
    cy = api.human(ada, "cy")
    conv = api.conversation(ada, ws, answering_agent_public_id=alpha.public_id)
    base = conv_base(ws, conv)
    v0 = created(api.write(ada, base, "conversation/plan.md", "ship friday"))
    plan = created(api.write(ada, base, "conversation/plan.md", "ship monday", v0))
    team = created(api.write(ada, ws_base(ws), "workspace/team.md", "the team"))
    return World(api, ada, bob, cy, alpha, ws, conv, plan, team)


@pytest.fixture
def world(api: Api) -> World:
    return make_world(api)


def key() -> str:
    return f"k-{uuid.uuid4()}"


def keyed(k: str, **more: str) -> dict[str, str]:
    return {"Idempotency-Key": k, **more}


def body(r: requests.Response) -> Any:
    return r.json() if r.content else None


# ---- the cases: one per kind of mutation -------------------------------------------------------------

# A case prepares what it needs (outside the counted storage), then answers the sender: key -> response.
Send = Callable[[str], requests.Response]


@dataclass(frozen=True)
class Case:
    prepare: Callable[[World], Send]
    status: int
    # The answer's secret fields, withheld on replay.
    secrets: tuple[str, ...] = ()


def _post(
    path: str, who: Callable[[World], Who], payload: Callable[[World], Any] = lambda w: None
) -> Callable[[World], Send]:
    def prepare(w: World) -> Send:
        return lambda k: w.api.post(path.format(w=w), who(w), payload(w), headers=keyed(k))

    return prepare


def _memory(
    verb: str, door: Callable[[World], str], fields: Callable[[World], dict[str, Any]]
) -> Callable[[World], Send]:
    suffix = "" if verb == "write" else f"/{verb}"

    def prepare(w: World) -> Send:
        return lambda k: w.api.post(f"{door(w)}{suffix}", w.ada, {"memory": fields(w)}, headers=keyed(k))

    return prepare


def _expect(p: tuple[str, int]) -> dict[str, Any]:
    return {"expected_public_id": p[0], "expected_lock_version": p[1]}


NEW = {"expected_public_id": None, "expected_lock_version": None}


def _conv_door(w: World) -> str:
    return w.base


def _ws_door(w: World) -> str:
    return ws_base(w.ws)


def _profile_door(w: World) -> str:
    return "/profile/memory"


def _tool_call(in_body: bool) -> Callable[[World], Send]:
    def prepare(w: World) -> Send:
        ex = w.execution()
        url = f"/executions/{ex['public_id']}/tools/memory_write"
        inp = {"path": "conversation/tool.md", "content": "from the model", **NEW}
        if in_body:
            return lambda k: w.api.post(url, w.alpha, {"input": inp, "idempotency_key": k})
        return lambda k: w.api.post(url, w.alpha, {"input": inp}, headers=keyed(k))

    return prepare


def _session_rename(w: World) -> Send:
    # A session's file moved from its conversation root to a new path, in one transaction
    ex = w.execution()
    url = f"/executions/{ex['public_id']}/files/rename"
    file = {"path": "conversation/plan.md", "new_path": "conversation/renamed.md", **_expect(w.plan)}
    return lambda k: w.api.post(url, w.alpha, {"file": file}, headers=keyed(k))


def _patch_workspace(w: World) -> Send:
    overrides = {"workspace": {"tool_provider_overrides": {"nexus.memory": "acme-mem"}}}
    return lambda k: w.api.call("PATCH", f"/workspaces/{w.ws}", w.ada, overrides, headers=keyed(k))


def _create_account(w: World) -> Send:
    payload = {"account": {"name": "beta"}, "human": {"name": "eve"}}
    return lambda k: w.api.post("/accounts", json=payload, headers=keyed(k, **{"X-Operator-Key": w.api.operator_key}))


def _self_rotation(w: World) -> Send:
    # Bob rotates his own token: the replay is sent with the token the first answer returned, since the
    # old one stopped working (the key is scoped to the principal, not to the token).
    tokens = [w.bob.token]

    def send(k: str) -> requests.Response:
        r = w.api.post(f"/humans/{w.bob.public_id}/credentials/rotate", tokens[-1], headers=keyed(k))
        if r.status_code == 201 and r.json()["token"]:
            tokens.append(r.json()["token"])
        return r

    return send


CASES: dict[str, Case] = {
    "conversation_write_create": Case(
        _memory("write", _conv_door, lambda w: {"path": "conversation/new.md", "content": "fresh", **NEW}), 201
    ),
    "conversation_write_replace": Case(
        _memory("write", _conv_door, lambda w: {"path": "conversation/plan.md", "content": "v2", **_expect(w.plan)}),
        201,
    ),
    "workspace_write_replace": Case(
        _memory("write", _ws_door, lambda w: {"path": "workspace/team.md", "content": "v1", **_expect(w.team)}), 201
    ),
    "profile_write_create": Case(
        _memory("write", _profile_door, lambda w: {"path": "user/prefs.md", "content": "tea", **NEW}), 201
    ),
    "conversation_edit": Case(
        _memory(
            "edit",
            _conv_door,
            lambda w: {"path": "conversation/plan.md", "old_text": "monday", "new_text": "tuesday", **_expect(w.plan)},
        ),
        200,
    ),
    "conversation_delete": Case(
        _memory("delete", _conv_door, lambda w: {"path": "conversation/plan.md", **_expect(w.plan)}), 204
    ),
    "workspace_delete": Case(
        _memory("delete", _ws_door, lambda w: {"path": "workspace/team.md", **_expect(w.team)}), 204
    ),
    "rollback": Case(
        _memory(
            "rollback", _conv_door, lambda w: {"path": "conversation/plan.md", "lock_version": 0, **_expect(w.plan)}
        ),
        201,
    ),
    "redact": Case(
        _memory(
            "versions/redact",
            _conv_door,
            lambda w: {"path": "conversation/plan.md", "lock_version": 0, **_expect(w.plan)},
        ),
        200,
    ),
    "promote": Case(
        _post(
            "/workspaces/{w.ws}/memory/promote",
            lambda w: w.ada,
            lambda w: {
                "promote": {
                    "source": {"conversation_public_id": w.conv, "path": "conversation/plan.md", "lock_version": 0},
                    "target_path": "workspace/promoted.md",
                    **NEW,
                }
            },
        ),
        201,
    ),
    "create_human": Case(_post("/humans", lambda w: w.ada, lambda w: {"human": {"name": "dee"}}), 201, ("token",)),
    "rotate_human_credentials": Case(
        _post("/humans/{w.bob.public_id}/credentials/rotate", lambda w: w.ada), 201, ("token",)
    ),
    "rotate_own_credentials": Case(_self_rotation, 201, ("token",)),
    "revoke_human_credentials": Case(_post("/humans/{w.cy.public_id}/credentials/revoke", lambda w: w.ada), 204),
    "create_workspace": Case(_post("/workspaces", lambda w: w.ada, lambda w: {"workspace": {"name": "lab"}}), 201),
    "update_workspace": Case(_patch_workspace, 200),
    "add_member": Case(
        _post(
            "/workspaces/{w.ws}/members",
            lambda w: w.ada,
            lambda w: {"member": {"human_public_id": w.cy.public_id, "role": "viewer"}},
        ),
        201,
    ),
    "create_conversation": Case(
        _post("/workspaces/{w.ws}/conversations", lambda w: w.ada, lambda w: {"conversation": {}}), 201
    ),
    "fork": Case(_post("/workspaces/{w.ws}/conversations/{w.conv}/fork", lambda w: w.ada), 201),
    "archive": Case(_post("/workspaces/{w.ws}/conversations/{w.conv}/archive", lambda w: w.ada), 200),
    "replace_memory_context": Case(
        _post(
            "/workspaces/{w.ws}/conversations/{w.conv}/memory_context",
            lambda w: w.ada,
            lambda w: {"memory_context": bindings(CONV, {**WORKSPACE, "name": "room"})},
        ),
        200,
    ),
    "create_agent_program": Case(
        _post("/agents", lambda w: w.ada, lambda w: {"agent": {"name": "scout", "kind": "program"}}), 201, ("token",)
    ),
    "create_agent_definition": Case(
        _post("/agents", lambda w: w.ada, lambda w: {"agent": {"name": "tutor", "kind": "definition"}}), 201
    ),
    "rotate_agent_credentials": Case(
        _post("/agents/{w.alpha.public_id}/credentials/rotate", lambda w: w.ada), 200, ("token",)
    ),
    "create_speaker": Case(
        _post(
            "/speakers",
            lambda w: w.ada,
            lambda w: {"speaker": {"name": "visitor", "agent_public_id": w.alpha.public_id}},
        ),
        201,
    ),
    "create_execution": Case(
        _post("/workspaces/{w.ws}/conversations/{w.conv}/executions", lambda w: w.alpha, lambda w: {"execution": {}}),
        201,
        ("secret",),
    ),
    "execution_file_rename": Case(_session_rename, 201),
    "call_tool_header": Case(_tool_call(in_body=False), 200),
    "call_tool_body_key": Case(_tool_call(in_body=True), 200),
    "create_account": Case(_create_account, 201, ("token",)),
}


def withheld(answer: Any, secrets: tuple[str, ...]) -> Any:
    """What a replay answers for `answer`: each secret field null, and the answer saying so."""
    if not secrets:
        return answer
    out = dict(answer)
    for name in secrets:
        assert out[name], f"the first answer carries its {name}"
        out[name] = None
    return {**out, "secret_withheld": True}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_keyed_mutation_sent_twice_answers_the_same_and_writes_nothing_twice(world: World, name: str) -> None:
    case = CASES[name]
    send = case.prepare(world)
    k = key()
    start = storage()

    # When the mutation is sent with a key
    first = send(k)
    assert first.status_code == case.status, first.text
    assert REPLAYED not in first.headers
    after_first = storage()
    # Then it changed something, and one idempotency record rides with the change
    assert grown(start, after_first)["IDEM"] == 1, grown(start, after_first)
    assert after_first.rows != start.rows

    # When the very same request is sent again with the same key
    second = send(k)

    # Then it answers the first answer again (secrets withheld), says it is a replay, and changed nothing
    assert second.status_code == first.status_code, second.text
    assert second.headers.get(REPLAYED) == "true"
    assert body(second) == withheld(body(first), case.secrets)
    if not case.secrets:
        assert "secret_withheld" not in (body(second) or {})
    after = storage()
    assert grown(after_first, after) == Counter()
    assert after.rows == after_first.rows
    assert after.objects == after_first.objects

    # And a third send, still with that key, is a replay too
    third = send(k)
    assert (third.status_code, third.headers.get(REPLAYED), body(third)) == (
        second.status_code,
        "true",
        body(second),
    )
    assert storage() == after


# ---- secrets are never stored, and the first answer's secret is the real one ------------------------------


def test_a_replayed_account_creation_withholds_the_token_and_the_first_token_works(api: Api) -> None:
    k = key()
    headers = keyed(k, **{"X-Operator-Key": api.operator_key})
    payload = {"account": {"name": "beta"}, "human": {"name": "eve"}}
    first = api.post("/accounts", json=payload, headers=headers)
    second = api.post("/accounts", json=payload, headers=headers)
    assert first.status_code == second.status_code == 201
    token = first.json()["token"]
    assert second.json() == {**first.json(), "token": None, "secret_withheld": True}
    # The first token is real; no stored row holds it in the clear
    ws = api.workspace(Who(token, first.json()["human"]["public_id"]))
    assert ws
    assert all(token not in json.dumps(row, default=str) for row in scan_table())


def test_replayed_human_agent_and_rotation_answers_withhold_their_tokens_and_the_first_ones_work(
    world: World,
) -> None:
    api = world.api

    def twice(method: str, path: str, who: Who, payload: Any = None) -> tuple[dict[str, Any], dict[str, Any]]:
        k = key()
        a = api.call(method, path, who, payload, headers=keyed(k))
        b = api.call(method, path, who, payload, headers=keyed(k))
        assert a.status_code == b.status_code and a.status_code in (200, 201), a.text
        assert b.headers.get(REPLAYED) == "true"
        assert b.json() == {**a.json(), "token": None, "secret_withheld": True}
        out: dict[str, Any] = a.json()
        return out, b.json()

    # A new Human's token authenticates
    human, _ = twice("POST", "/humans", world.ada, {"human": {"name": "dee"}})
    assert api.get("/profile/memory", human["token"]).status_code == 200
    # A new program agent's token authenticates
    agent, _ = twice("POST", "/agents", world.ada, {"agent": {"name": "scout", "kind": "program"}})
    assert api.get("/profile/memory", agent["token"]).status_code == 200
    # A rotated agent token authenticates, and the token it replaced does not
    rotated, _ = twice("POST", f"/agents/{world.alpha.public_id}/credentials/rotate", world.ada)
    assert api.get("/profile/memory", rotated["token"]).status_code == 200
    assert code(api.get("/profile/memory", world.alpha)) == (401, "not_authenticated")
    # A rotated Human token too
    bob, _ = twice("POST", f"/humans/{world.bob.public_id}/credentials/rotate", world.ada)
    assert api.get("/profile/memory", bob["token"]).status_code == 200
    assert code(api.get("/profile/memory", world.bob)) == (401, "not_authenticated")
    stored = json.dumps(list(table().values()), default=str)
    for secret in (human["token"], agent["token"], rotated["token"], bob["token"]):
        assert secret not in stored


def test_a_replayed_execution_withholds_its_secret_and_the_first_secret_drives_the_tool_function(
    world: World,
) -> None:
    k = key()
    url = f"{world.conv_url}/executions"
    first = world.api.post(url, world.alpha, {"execution": {}}, headers=keyed(k))
    second = world.api.post(url, world.alpha, {"execution": {}}, headers=keyed(k))
    assert first.status_code == second.status_code == 201
    assert second.json() == {**first.json(), "secret": None, "secret_withheld": True}
    ex = first.json()["execution"]["public_id"]
    out = tool_lambda({"execution": ex, "tool": "memory_ls", "input": {}, "secret": first.json()["secret"]})
    assert out["is_error"] is False, out
    assert first.json()["secret"] not in json.dumps(list(table().values()), default=str)


# ---- same key, another request -------------------------------------------------------------------


def test_the_same_key_with_a_different_body_is_idempotency_conflict_and_changes_nothing(world: World) -> None:
    k = key()
    a = world.api.post(
        world.base, world.ada, {"memory": {"path": "conversation/a.md", "content": "one", **NEW}}, headers=keyed(k)
    )
    assert a.status_code == 201, a.text
    before = storage()
    # Another body under the key: refused, and nothing is written
    b = world.api.post(
        world.base, world.ada, {"memory": {"path": "conversation/a.md", "content": "two", **NEW}}, headers=keyed(k)
    )
    assert code(b) == (409, "idempotency_conflict")
    assert REPLAYED not in b.headers
    assert storage() == before
    # Another route under the key (same principal): refused too
    c = world.api.post("/workspaces", world.ada, {"workspace": {"name": "lab"}}, headers=keyed(k))
    assert code(c) == (409, "idempotency_conflict")
    # Another path parameter (the workspace door of the same body shape): refused too
    d = world.api.post(
        ws_base(world.ws), world.ada, {"memory": {"path": "workspace/a.md", "content": "one", **NEW}}, headers=keyed(k)
    )
    assert code(d) == (409, "idempotency_conflict")
    assert storage() == before
    # And the original request still replays
    again = world.api.post(
        world.base, world.ada, {"memory": {"path": "conversation/a.md", "content": "one", **NEW}}, headers=keyed(k)
    )
    assert (again.status_code, again.headers.get(REPLAYED), again.json()) == (201, "true", a.json())


def test_the_same_body_in_another_key_order_or_spacing_is_the_same_request(world: World) -> None:
    k = key()
    url = f"{world.api.url}{API}{world.base}"
    h = {"Authorization": f"Bearer {world.ada.token}", "Content-Type": "application/json", **keyed(k)}
    text = (
        '{"memory": {"path": "conversation/a.md", "content": "one", "expected_public_id": null, '
        '"expected_lock_version": null}}'
    )
    reordered = (
        '{ "memory" :{\n  "expected_lock_version":null,"content" : "one",\t"expected_public_id": null,'
        '"path":"conversation/a.md"}\n}'
    )
    a = requests.post(url, data=text, headers=h, timeout=30)
    assert a.status_code == 201, a.text
    before = storage()
    b = requests.post(url, data=reordered, headers=h, timeout=30)
    assert (b.status_code, b.headers.get(REPLAYED)) == (201, "true"), b.text
    assert b.json() == a.json()
    assert storage() == before
    # A body that differs in a value, however laid out, is another request
    other = reordered.replace('"one"', '"one "')
    assert code(requests.post(url, data=other, headers=h, timeout=30)) == (409, "idempotency_conflict")


def test_the_header_is_case_insensitive_and_an_expired_record_lets_the_key_run_again(world: World) -> None:
    k = key()
    payload = {"workspace": {"name": "lab"}}
    a = world.api.post("/workspaces", world.ada, payload, headers={"idempotency-key": k})
    b = world.api.post("/workspaces", world.ada, payload, headers={"IDEMPOTENCY-KEY": k})
    assert b.headers.get(REPLAYED) == "true" and b.json() == a.json()
    # When the record's 24 hours are over (its expiry moved into the past, as time would)
    (row,) = idem_rows()
    ddb, _ = aws_clients()
    ddb.update_item(
        TableName=settings().table_name,
        Key={"pk": {"S": row["pk"]}, "sk": {"S": row["sk"]}},
        UpdateExpression="SET expires_at = :past",
        ExpressionAttributeValues={":past": {"N": str(int(time.time()) - 1)}},
    )
    # Then the key is free again: the request runs as new, and its new record replaces the old
    c = world.api.post("/workspaces", world.ada, payload, headers=keyed(k))
    assert c.status_code == 201 and REPLAYED not in c.headers
    assert c.json()["workspace"]["public_id"] != a.json()["workspace"]["public_id"]
    (row2,) = idem_rows()
    assert int(row2["expires_at"]) > time.time() + 23 * 3600


# ---- refusals are replayed; 429 and 5xx are not --------------------------------------------------------


def test_a_refused_write_replays_its_refusal_even_once_the_same_write_would_succeed(world: World) -> None:
    k = key()
    path = "conversation/plan.md"
    create = {"memory": {"path": path, "content": "mine", **NEW}}
    # Given a create refused stale_object (the document exists) under key K
    refused = world.api.post(world.base, world.ada, create, headers=keyed(k))
    assert code(refused) == (409, "stale_object")
    assert REPLAYED not in refused.headers
    assert len(idem_rows()) == 1
    # When the document is deleted, so that the very same create would now succeed
    assert world.api.delete(world.ada, world.base, path, world.plan).status_code == 204
    before = storage()
    # Then the retry with K answers the same refusal, and the create never happens
    again = world.api.post(world.base, world.ada, create, headers=keyed(k))
    assert code(again) == (409, "stale_object")
    assert again.headers.get(REPLAYED) == "true"
    assert again.json() == refused.json()
    assert storage() == before
    assert world.api.show(world.ada, world.base, path).status_code == 404
    # While the same create with a new key does succeed
    assert world.api.post(world.base, world.ada, create, headers=keyed(key())).status_code == 201


def test_refusals_of_every_kind_are_replayed(world: World) -> None:
    api = world.api
    cases: list[tuple[str, str, Who, Any, tuple[int, str]]] = [
        # not_found, memory_path_invalid, parameter_invalid, not_authorized
        (
            "POST",
            f"/workspaces/{world.ws}/conversations/01990000-0000-7000-8000-0000000000ff/fork",
            world.ada,
            None,
            (404, "not_found"),
        ),
        (
            "POST",
            world.base,
            world.ada,
            {"memory": {"path": "nowhere/x.md", "content": "x", **NEW}},
            (422, "memory_path_invalid"),
        ),
        ("POST", world.base, world.ada, {"memory": "nothing"}, (400, "parameter_invalid")),
        # Cy, not its first Human, may not rotate Bob's credentials
        ("POST", f"/humans/{world.bob.public_id}/credentials/rotate", world.cy, None, (403, "not_authorized")),
    ]
    for method, path, who, payload, expected in cases:
        k = key()
        a = api.call(method, path, who, payload, headers=keyed(k))
        assert code(a) == expected, (path, a.text)
        b = api.call(method, path, who, payload, headers=keyed(k))
        assert code(b) == expected and b.headers.get(REPLAYED) == "true" and b.json() == a.json(), (path, b.text)


def test_a_rate_limited_answer_is_not_recorded_and_the_retry_runs(world: World) -> None:
    api = world.api
    with metered("AGENT_MEMORY_WRITES_PER_MINUTE"):
        for i in range(BUDGET):
            assert api.write(world.ada, world.base, f"conversation/{i}.md", "x").status_code == 201
        k = key()
        payload = {"memory": {"path": "conversation/late.md", "content": "late", **NEW}}
        limited = api.post(world.base, world.ada, payload, headers=keyed(k))
        assert code(limited) == (429, "rate_limited")
        assert idem_rows() == []
    # When the caller may write again, the retry with the key runs (and is no replay)
    again = api.post(world.base, world.ada, payload, headers=keyed(k))
    assert again.status_code == 201, again.text
    assert REPLAYED not in again.headers
    assert api.show(world.ada, world.base, "conversation/late.md").json()["memory"]["content"] == "late"


def test_a_storage_fault_is_not_recorded_and_the_retry_runs(world: World) -> None:
    k = key()
    payload = {"memory": {"path": "conversation/new.md", "content": "fresh", **NEW}}

    def down(event_name: str, **_: Any) -> None:
        raise EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com/")

    with hooked("before-call.dynamodb.TransactWriteItems", down, "test-idem-down"):
        failed = world.api.post(world.base, world.ada, payload, headers=keyed(k))
    assert code(failed) == (503, "storage_unavailable")
    assert idem_rows() == []
    again = world.api.post(world.base, world.ada, payload, headers=keyed(k))
    assert again.status_code == 201 and REPLAYED not in again.headers, again.text
    assert again.json()["memory"]["lock_version"] == 0


# ---- keys belong to their principal --------------------------------------------------------------


def test_another_principal_using_the_same_key_gets_its_own_answer(world: World) -> None:
    api = world.api
    k = key()
    payload = {"workspace": {"name": "lab"}}
    ada = api.post("/workspaces", world.ada, payload, headers=keyed(k))
    bob = api.post("/workspaces", world.bob, payload, headers=keyed(k))
    # Bob's own new workspace, not Ada's answer
    assert ada.status_code == bob.status_code == 201
    assert REPLAYED not in bob.headers
    assert bob.json()["workspace"]["public_id"] != ada.json()["workspace"]["public_id"]
    # On a memory route: Ada's create lands; Bob's same request under her key is his own (stale) answer
    create = {"memory": {"path": "conversation/a.md", "content": "one", **NEW}}
    k2 = key()
    first = api.post(world.base, world.ada, create, headers=keyed(k2))
    assert first.status_code == 201
    his = api.post(world.base, world.bob, create, headers=keyed(k2))
    assert code(his) == (409, "stale_object") and REPLAYED not in his.headers
    # And Bob with another body under a key only Ada used is no conflict either: his own write
    k3 = key()
    assert (
        api.post(
            world.base,
            world.ada,
            create | {"memory": {**create["memory"], "path": "conversation/c.md"}},
            headers=keyed(k3),
        ).status_code
        == 201
    )
    other = {"memory": {"path": "conversation/b.md", "content": "two", **NEW}}
    mine = api.post(world.base, world.bob, other, headers=keyed(k3))
    assert mine.status_code == 201 and REPLAYED not in mine.headers
    # While his own key is his: another body under the key he used is his conflict
    assert code(api.post(world.base, world.bob, other, headers=keyed(k2))) == (409, "idempotency_conflict")
    # Each principal has its own records: Ada's three, Bob's three
    assert len(idem_rows()) == 6
    # And the operator's key space is not a Human's: the same key on create_account runs
    acct = api.post(
        "/accounts",
        json={"account": {"name": "beta"}, "human": {"name": "eve"}},
        headers=keyed(k, **{"X-Operator-Key": api.operator_key}),
    )
    assert acct.status_code == 201 and REPLAYED not in acct.headers


def test_a_replay_is_never_shown_to_an_unproven_caller(world: World) -> None:
    api = world.api
    k = key()
    payload = {"account": {"name": "beta"}, "human": {"name": "eve"}}
    assert api.post("/accounts", json=payload, headers=keyed(k, **{"X-Operator-Key": api.operator_key})).ok
    # A wrong operator key is refused as before, never answered the recorded account
    wrong = api.post("/accounts", json=payload, headers=keyed(k, **{"X-Operator-Key": "nope"}))
    assert wrong.status_code in (401, 403) and REPLAYED not in wrong.headers
    assert "account" not in wrong.json()
    # A bad token on a keyed route is 401, whatever the key
    w = api.post("/workspaces", world.ada, {"workspace": {"name": "lab"}}, headers=keyed(k))
    assert w.status_code == 201
    bad = api.post("/workspaces", "am_h_nobody_secret", {"workspace": {"name": "lab"}}, headers=keyed(k))
    assert code(bad) == (401, "not_authenticated")


# ---- the in-progress race ---------------------------------------------------------------------------


class HeldCommit:
    """Holds the first decisive commit (the transaction carrying a keyed request's record) until the
    second one has landed: the duplicate overtakes the first inside its commit."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sent = 0
        self.first_in = threading.Event()
        self.release = threading.Event()

    def before(self, event_name: str, context: dict[str, Any], params: dict[str, Any], **_: Any) -> None:
        if b'"IDEM#' not in params["body"]:
            return  # a transaction ahead of the change (a fork's history records): not the commit
        with self.lock:
            index = self.sent
            self.sent += 1
        context["test_held_index"] = index
        if index == 0:
            self.first_in.set()
            assert self.release.wait(timeout=30), "the duplicate never landed"

    def after(self, event_name: str, context: dict[str, Any], **_: Any) -> None:
        if context.get("test_held_index") == 1:
            self.release.set()


RACED: dict[str, Callable[[World], tuple[str, Any, Who]]] = {
    "memory_write": lambda w: (w.base, {"memory": {"path": "conversation/race.md", "content": "once", **NEW}}, w.ada),
    "create_workspace": lambda w: ("/workspaces", {"workspace": {"name": "lab"}}, w.ada),
    "fork": lambda w: (f"{w.conv_url}/fork", None, w.ada),
    "create_execution": lambda w: (f"{w.conv_url}/executions", {"execution": {}}, w.alpha),
    "execution_file_rename": lambda w: (
        f"/executions/{w.execution()['public_id']}/files/rename",
        {"file": {"path": "conversation/plan.md", "new_path": "conversation/renamed.md", **_expect(w.plan)}},
        w.alpha,
    ),
}


@pytest.mark.parametrize("name", sorted(RACED))
def test_two_identical_keyed_requests_at_once_change_things_once(world: World, name: str) -> None:
    path, payload, who = RACED[name](world)
    k = key()
    start = storage()
    held = HeldCommit()
    with (
        hooked("before-call.dynamodb.TransactWriteItems", held.before, "test-idem-hold-b"),
        hooked("after-call.dynamodb.TransactWriteItems", held.after, "test-idem-hold-a"),
        ThreadPoolExecutor(max_workers=2) as pool,
    ):
        first = pool.submit(Api(world.api.url, world.api.operator_key).post, path, who, payload, headers=keyed(k))
        assert held.first_in.wait(timeout=30)
        # The first is inside its commit: the duplicate starts now, reads no record, and commits first
        second = pool.submit(Api(world.api.url, world.api.operator_key).post, path, who, payload, headers=keyed(k))
        a, b = first.result(timeout=60), second.result(timeout=60)
    assert held.sent >= 2, "both reached their commit"
    # Then both answer the same body: the duplicate ran, the first answers its answer as a replay
    assert a.status_code == b.status_code and a.status_code in (200, 201), (a.text, b.text)
    assert body(a) == withheld(body(b), ("secret",) if name == "create_execution" else ())
    assert (a.headers.get(REPLAYED), b.headers.get(REPLAYED)) == ("true", None)
    # And exactly one change landed: one record, and the rows of one run
    after = storage()
    delta = grown(start, after)
    assert delta["IDEM"] == 1, delta
    live = {k2 for k2 in after.objects if any(row.get("content_key") == k2 for row in after.rows.values())}
    new_live = live - set(start.objects)
    assert len(new_live) == (1 if name == "memory_write" else 0), new_live
    expect = {
        "memory_write": {"ANCHOR:DOC": 1, "ANCHOR:VER": 1, "CONV": 0},
        "create_workspace": {"WS:WS": 1, "WS:MEMBER": 1},
        "fork": {"CONV": 1},
        "create_execution": {"EXEC": 1},
        # The old pointer gone, the new one made, one version record
        "execution_file_rename": {"ANCHOR:DOC": 0, "ANCHOR:VER": 1, "CONV": 0},
    }[name]
    for kind_, n in expect.items():
        assert delta[kind_] == n, (kind_, delta)


def test_many_identical_keyed_requests_at_once_land_once_and_all_answer_alike(world: World) -> None:
    k = key()
    payload = {"memory": {"path": "conversation/crowd.md", "content": "once", **NEW}}
    barrier = threading.Barrier(8)

    def go(_: int) -> requests.Response:
        mine = Api(world.api.url, world.api.operator_key)
        barrier.wait(timeout=30)
        return mine.post(world.base, world.ada, payload, headers=keyed(k))

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(go, range(8)))
    assert {r.status_code for r in answers} == {201}, [r.text for r in answers]
    assert len({json.dumps(r.json(), sort_keys=True) for r in answers}) == 1
    assert sum(r.headers.get(REPLAYED) is None for r in answers) == 1
    rows = table()
    assert sum(sk.endswith("crowd.md") and sk.startswith("DOC#") for _, sk in rows) == 1
    assert len(idem_rows()) == 1
    assert world.api.show(world.ada, world.base, "conversation/crowd.md").json()["memory"]["lock_version"] == 0


# ---- the header's rules --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    ["", "x" * 129, "caf\u00e9", "ab\x01cd", "tab\there", "del\x7f"],
    ids=["empty", "129_chars", "non_ascii", "control", "tab", "delete"],
)
def test_a_malformed_key_is_parameter_invalid_and_changes_nothing(world: World, value: str) -> None:
    before = storage()
    r = world.api.post(
        world.base,
        world.ada,
        {"memory": {"path": "conversation/new.md", "content": "fresh", **NEW}},
        headers={"Idempotency-Key": value},
    )
    assert code(r) == (400, "parameter_invalid"), r.text
    assert "Idempotency-Key" in r.json()["error"]["message"]
    assert storage() == before


def test_the_key_takes_128_printable_characters(world: World) -> None:
    k = ("~ !" + "a" * 200)[:128]
    assert len(k) == 128
    payload = {"memory": {"path": "conversation/new.md", "content": "fresh", **NEW}}
    a = world.api.post(world.base, world.ada, payload, headers=keyed(k))
    b = world.api.post(world.base, world.ada, payload, headers=keyed(k))
    assert a.status_code == b.status_code == 201
    assert b.headers.get(REPLAYED) == "true"


def test_a_malformed_key_in_a_tool_calls_body_is_parameter_invalid(world: World) -> None:
    ex = world.execution()
    url = f"/executions/{ex['public_id']}/tools/memory_write"
    inp = {"path": "conversation/tool.md", "content": "x", **NEW}
    before = storage()
    r = world.api.post(url, world.alpha, {"input": inp, "idempotency_key": "x" * 129})
    assert code(r) == (400, "parameter_invalid")
    assert storage() == before
    # A key that is no string is refused too (it was once ignored, and the call ran unkeyed)
    r = world.api.post(url, world.alpha, {"input": inp, "idempotency_key": 5})
    assert code(r) == (400, "parameter_invalid") and "idempotency_key" in r.json()["error"]["message"], r.text
    assert storage() == before
    assert idem_rows() == []


def test_the_header_on_a_read_route_is_ignored(world: World) -> None:
    before = storage()
    for value in ("", "x" * 500, key()):
        listing = world.api.get(world.base, world.ada, headers={"Idempotency-Key": value})
        assert listing.status_code == 200, listing.text
        shown = world.api.post(
            f"{world.base}/show",
            world.ada,
            {"memory": {"path": "conversation/plan.md"}},
            headers={"Idempotency-Key": value},
        )
        assert shown.status_code == 200 and REPLAYED not in shown.headers
        block = world.api.post(f"{world.conv_url}/memory_block", world.ada, {}, headers={"Idempotency-Key": value})
        assert block.status_code == 200
        conv = world.api.get(world.conv_url, world.ada, headers={"Idempotency-Key": value})
        assert conv.status_code == 200
    assert storage() == before


# ---- what it costs -------------------------------------------------------------------------------------


def test_a_key_costs_one_read_on_the_first_attempt_and_a_replay_costs_one_read(world: World) -> None:
    # A conversation nobody answers: its writes resolve in one batch read (an answering agent's row
    # would be one GetItem more, key or no key)
    base = conv_base(world.ws, world.api.conversation(world.ada, world.ws))
    payload = {"memory": {"path": "conversation/a.md", "content": "one", **NEW}}
    # Without a key: what a write always cost
    with aws_calls() as plain:
        assert world.api.post(base, world.ada, payload).status_code == 201
    assert plain == Counter({"dynamodb:BatchGetItem": 1, "s3:PutObject": 1, "dynamodb:TransactWriteItems": 1})
    # With a key: one more batch read (the token and the record), and the record rides in the same commit
    k = key()
    payload_b = {"memory": {"path": "conversation/b.md", "content": "two", **NEW}}
    with aws_calls() as first:
        assert world.api.post(base, world.ada, payload_b, headers=keyed(k)).status_code == 201
    assert first == Counter({"dynamodb:BatchGetItem": 2, "s3:PutObject": 1, "dynamodb:TransactWriteItems": 1})
    # A replay: that one read, and the version read that brings its text back (the key record keeps no
    # text, issue 26): one batch more, and the object unless this container has it cached already
    with aws_calls() as replay:
        r = world.api.post(base, world.ada, payload_b, headers=keyed(k))
    assert r.headers.get(REPLAYED) == "true"
    assert r.json()["memory"]["content"] == "two" and "text_withheld" not in r.json()
    assert replay["dynamodb:BatchGetItem"] == 2 and replay["s3:GetObject"] <= 1
    assert set(replay) <= {"dynamodb:BatchGetItem", "s3:GetObject"}
    # A conflict: the same one read
    with aws_calls() as conflict:
        assert code(world.api.post(base, world.ada, payload, headers=keyed(k))) == (409, "idempotency_conflict")
    assert conflict == Counter({"dynamodb:BatchGetItem": 1})


def test_a_keyed_directory_change_costs_one_more_read_and_no_more_writes(world: World) -> None:
    payload = {"workspace": {"name": "lab"}}
    with aws_calls() as plain:
        assert world.api.post("/workspaces", world.ada, payload).status_code == 201
    k = key()
    with aws_calls() as first:
        assert world.api.post("/workspaces", world.ada, payload, headers=keyed(k)).status_code == 201
    extra = Counter(first)
    extra.subtract(plain)
    assert +extra == Counter({"dynamodb:BatchGetItem": 1}), (plain, first)
    with aws_calls() as replay:
        assert world.api.post("/workspaces", world.ada, payload, headers=keyed(k)).headers.get(REPLAYED) == "true"
    assert replay == Counter({"dynamodb:BatchGetItem": 1})


# ---- the tool function ---------------------------------------------------------------------------------


def test_the_tool_function_replays_a_keyed_call_proven_by_the_secret_or_the_token(world: World) -> None:
    ex = world.execution()
    k = key()
    inp = {"path": "conversation/tool.md", "content": "from the model", **NEW}
    event = {"execution": ex["public_id"], "tool": "memory_write", "input": inp, "idempotency_key": k}

    # Proven by the execution's secret: the second call answers the first result and writes nothing
    first = tool_lambda({**event, "secret": ex["secret"]})
    assert (first["is_error"], first["code"]) == (False, None), first
    before = storage()
    second = tool_lambda({**event, "secret": ex["secret"]})
    assert second == first
    assert storage() == before
    # The same key under another proof is another caller's key: that call runs (and is stale: it exists)
    by_token = tool_lambda({**event, "token": world.alpha.token})
    assert (by_token["is_error"], by_token["code"]) == (True, "stale_object")
    # And that refusal is itself replayed under the token's scope, even once the write would succeed
    created_pair = (first["data"]["public_id"], first["data"]["lock_version"])
    assert world.api.delete(world.ada, world.base, "conversation/tool.md", created_pair).status_code == 204
    before = storage()
    assert tool_lambda({**event, "token": world.alpha.token}) == by_token
    assert storage() == before

    # Proven by the token, on a fresh key: the same replay
    k2 = key()
    inp2 = {"path": "conversation/tool2.md", "content": "again", **NEW}
    ev2 = {"execution": ex["public_id"], "tool": "memory_write", "input": inp2, "idempotency_key": k2}
    a = tool_lambda({**ev2, "token": world.alpha.token})
    assert a["is_error"] is False, a
    before = storage()
    assert tool_lambda({**ev2, "token": world.alpha.token}) == a
    assert storage() == before
    # Another input under that key is a conflict, told as the tool function tells refusals of the call
    clash = tool_lambda({**ev2, "input": {**inp2, "content": "other"}, "token": world.alpha.token})
    assert clash == {"error": clash["error"]} and clash["error"]["code"] == "idempotency_conflict"
    assert storage() == before


def test_the_tool_function_checks_the_secret_before_it_replays(world: World) -> None:
    ex = world.execution()
    k = key()
    event = {
        "execution": ex["public_id"],
        "tool": "memory_write",
        "idempotency_key": k,
        "input": {"path": "conversation/tool.md", "content": "x", **NEW},
    }
    assert tool_lambda({**event, "secret": ex["secret"]})["is_error"] is False
    wrong = tool_lambda({**event, "secret": "not-the-secret"})
    assert wrong["error"]["code"] == "not_authenticated"
    bad = tool_lambda({**event, "secret": ex["secret"], "idempotency_key": "\x00"})
    assert bad["error"]["code"] == "parameter_invalid"
    bad = tool_lambda({**event, "secret": ex["secret"], "idempotency_key": 7})
    assert bad["error"]["code"] == "parameter_invalid"


def test_a_keyed_tool_call_over_http_and_through_the_function_are_separate_requests(world: World) -> None:
    # The same principal and key on both doors: the function's call is another request (its route), so
    # reusing an HTTP call's key there is a conflict rather than a replay of another door's answer.
    ex = world.execution()
    k = key()
    inp = {"path": "conversation/tool.md", "content": "x", **NEW}
    over_http = world.api.post(
        f"/executions/{ex['public_id']}/tools/memory_write", world.alpha, {"input": inp}, headers=keyed(k)
    )
    assert over_http.status_code == 200 and over_http.json()["is_error"] is False
    via_fn = tool_lambda(
        {
            "execution": ex["public_id"],
            "tool": "memory_write",
            "input": inp,
            "idempotency_key": k,
            "token": world.alpha.token,
        }
    )
    assert via_fn["error"]["code"] == "idempotency_conflict"


# ---- the Python client and the MCP relay ------------------------------------------------------------------


def _lose_first_answer(client: MemoryClient) -> list[dict[str, str]]:
    """The client's first request goes through and lands; its answer is lost (connection reset)."""
    real = client._opener.open
    sent: list[dict[str, str]] = []

    def open_(req: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(dict(req.header_items()))
        if len(sent) == 1:
            with real(req, *args, **kwargs) as resp:
                resp.read()
            raise ConnectionResetError(104, "Connection reset by peer")
        return real(req, *args, **kwargs)

    setattr(client._opener, "open", open_)  # noqa: B010 (shadows the method on this instance only)
    return sent


def test_the_client_retries_a_write_whose_answer_was_lost_and_the_retry_replays(fresh: LocalService) -> None:
    admin = MemoryClient(fresh.url, operator_key=fresh.operator_key, backoff=0.0)
    owner = admin.with_token(admin.create_account("acme", "ada")["token"])
    ws = owner.create_workspace("room")["public_id"]
    conv = owner.create_conversation(ws)["public_id"]
    door = owner.conversation_memory(ws, conv)
    sent = _lose_first_answer(door.client)
    # When a create's answer is lost after it landed
    doc = door.write("conversation/plan.md", "ship friday", CLIENT_NEW)
    # Then the client sent it again with the same key, and got the first answer: lock_version 0, not stale
    assert len(sent) == 2
    keys = [{k.lower(): v for k, v in h.items()}["idempotency-key"] for h in sent]
    assert keys[0] == keys[1]
    assert doc["lock_version"] == 0
    assert door.versions("conversation/plan.md")["versions"].__len__() == 1
    assert door.show("conversation/plan.md")["content"] == "ship friday"
    # And the next write takes a fresh key of its own
    del door.client._opener.open
    again = door.write("conversation/plan.md", "ship monday", (doc["public_id"], doc["lock_version"]))
    assert again["lock_version"] == 1


def test_the_client_retries_a_write_the_service_lost_after_its_commit(fresh: LocalService) -> None:
    admin = MemoryClient(fresh.url, operator_key=fresh.operator_key, backoff=0.0)
    owner = admin.with_token(admin.create_account("acme", "ada")["token"])
    ws = owner.create_workspace("room")["public_id"]
    conv = owner.create_conversation(ws)["public_id"]
    door = owner.conversation_memory(ws, conv)
    crashed: list[int] = []

    def lost(event_name: str, **_: Any) -> None:
        # The commit landed; the function's answer is lost on the way (storage_unavailable, a 503)
        if not crashed:
            crashed.append(1)
            raise EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com/")

    with hooked("after-call.dynamodb.TransactWriteItems", lost, "test-idem-client-lost"):
        doc = door.write("conversation/plan.md", "ship friday", CLIENT_NEW)
    assert crashed == [1]
    assert doc["lock_version"] == 0
    assert len(door.versions("conversation/plan.md")["versions"]) == 1


def _spy(client: MemoryClient) -> list[dict[str, str]]:
    """The headers of every request the client sends (lower-cased names)."""
    real = client._opener.open
    sent: list[dict[str, str]] = []

    def open_(req: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append({k.lower(): v for k, v in req.header_items()})
        return real(req, *args, **kwargs)

    setattr(client._opener, "open", open_)  # noqa: B010 (shadows the method on this instance only)
    return sent


def test_the_client_keys_each_mutation_afresh_and_no_read(world: World) -> None:
    ada = MemoryClient(world.api.url, world.ada.token, backoff=0.0)
    sent = _spy(ada)
    door = ada.conversation_memory(world.ws, world.conv)
    door.write("conversation/a.md", "one", CLIENT_NEW)
    door.write("conversation/b.md", "two", CLIENT_NEW)
    door.show("conversation/a.md")
    ada.create_workspace("lab")
    keys = [h.get("idempotency-key") for h in sent]
    assert keys[0] and keys[1] and keys[3] and len({keys[0], keys[1], keys[3]}) == 3
    assert keys[2] is None  # a read carries none


def test_the_clients_tool_calls_key_changes_but_not_reads(world: World) -> None:
    ex = world.execution()
    alpha = MemoryClient(world.api.url, world.alpha.token, backoff=0.0)
    sent = _spy(alpha)
    # A read-only tool call is resent freely and carries no key, so it costs no record
    with aws_calls() as read_cost:
        out = alpha.call_tool(ex["public_id"], "memory_read", {"path": "conversation/plan.md"})
    assert out["is_error"] is False
    assert "idempotency-key" not in sent[-1]
    assert not {"dynamodb:PutItem", "dynamodb:TransactWriteItems"} & set(read_cost), read_cost
    assert idem_rows() == []
    # A change gets a fresh key, or the runtime's own (the model's tool_use id), which a resend replays
    inp = {"path": "conversation/tool.md", "content": "x", **NEW}
    first = alpha.call_tool(ex["public_id"], "memory_write", inp, idempotency_key="toolu_01")
    assert sent[-1]["idempotency-key"] == "toolu_01" and first["is_error"] is False
    before = storage()
    assert alpha.call_tool(ex["public_id"], "memory_write", inp, idempotency_key="toolu_01") == first
    assert storage() == before
    fresh_key = alpha.call_tool(ex["public_id"], "memory_write", inp)
    assert sent[-1]["idempotency-key"] not in (None, "toolu_01")
    assert fresh_key["code"] == "stale_object"


def test_the_mcp_relay_passes_the_idempotency_key_through(fresh: LocalService) -> None:
    admin = MemoryClient(fresh.url, operator_key=fresh.operator_key, backoff=0.0)
    owner = admin.with_token(admin.create_account("acme", "ada")["token"])
    ws = owner.create_workspace("room")["public_id"]
    program = owner.create_agent("helper")
    owner.add_member(ws, agent_public_id=program["agent"]["public_id"])
    conv = owner.create_conversation(ws, answering_agent_public_id=program["agent"]["public_id"])["public_id"]
    agent = owner.with_token(program["token"])
    execution = agent.create_execution(ws, conv)
    relay = MemoryRelay(agent, ws, conv, execution, agent.tool_schemas())
    args = {"path": "conversation/plan.md", "content": "hello", **NEW, "idempotencyKey": "tool-use-1"}
    first = relay.call("memory_write", args)
    assert not first.is_error, first
    before = storage()
    # The MCP client resends the same call: the key makes it the first call's result, not a stale refusal
    second = relay.call("memory_write", args)
    assert not second.is_error, second
    assert second.model_dump() == first.model_dump()
    assert storage() == before
    # A new key is a new call, which the document now refuses
    third = relay.call("memory_write", {**args, "idempotencyKey": "tool-use-2"})
    assert third.is_error and "stale_object" in third.content[0].text  # type: ignore[union-attr]
    # Without a key the argument is simply absent (the tool's own strict input never sees it)
    plain = relay.call("memory_read", {"path": "conversation/plan.md"})
    assert not plain.is_error


# ---- every new code ------------------------------------------------------------------------------------


def test_every_idempotency_code_is_catalogued_and_conflict_is_provoked(world: World) -> None:
    from agent_memory.api.errors import CATALOGUE

    assert CATALOGUE["idempotency_conflict"].status == 409
    assert CATALOGUE["idempotency_in_progress"].status == 409
    k = key()
    assert world.api.post("/workspaces", world.ada, {"workspace": {"name": "a"}}, headers=keyed(k)).ok
    r = world.api.post("/workspaces", world.ada, {"workspace": {"name": "b"}}, headers=keyed(k))
    assert code(r) == (409, "idempotency_conflict")
    assert "Idempotency-Key" in r.json()["error"]["message"]
