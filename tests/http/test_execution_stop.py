"""Stopping an execution (issue 16).

`POST /executions/{e}/stop` (the execution's principal, or anyone with write standing on its conversation)
answers 200 `{"execution": {..., "stopped": true}}`. From then on its tool calls (over HTTP, through the
in-account function and through the MCP server), its block, its files and any spawn from it are 409
`execution_stopped`, and so are those of every execution spawned from it, however deep. A stop is final and
stopping twice answers 200. A write whose batch read came before the stop cannot land after it: its commit
checks the stop marks.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from agent_memory.core.model import MAX_SPAWN_DEPTH
from agent_memory.store import aws_clients
from agent_memory_sdk.client import ExecutionStopped, MemoryClient
from agent_memory_sdk.local.runtime import LocalService

from ..support import Api, Who, client_room, code, conv_base
from .runs import Run, create, make_run, version
from .test_executions import EXECUTION_KEYS
from .world import scan_table

pytestmark = pytest.mark.http


@pytest.fixture
def run(api: Api) -> Run:
    return make_run(api)


def stop(run: Run, ex: dict[str, Any], who: Who | None = None) -> Any:
    return run.api.post(f"/executions/{ex['public_id']}/stop", who if who is not None else run.principal(ex), {})


def refused_everywhere(run: Run, ex: dict[str, Any]) -> None:
    """Every door of a stopped execution answers 409 execution_stopped."""
    e = ex["public_id"]
    principal = run.principal(ex)
    answers = [
        run.call(ex, "memory_ls"),
        run.call(ex, "memory_read", path="conversation/a.md"),
        run.call(ex, "memory_write", **create("conversation/late.md", "x")),
        run.call(ex, "skill", name="deploy"),
        run.api.post(f"/executions/{e}/memory_block", principal, {}),
        run.api.get(f"/executions/{e}/mounts", principal),
        run.api.post(f"/executions/{e}/files/list", principal, {"file": {"path": "/"}}),
        run.start(principal, conv=ex["conversation_public_id"], parent_execution_public_id=e),
    ]
    assert [code(r) for r in answers] == [(409, "execution_stopped")] * len(answers)


def test_a_stopped_executions_tools_and_block_refuse_and_a_second_stop_answers_the_same(run: Run) -> None:
    # Given a running execution that wrote a document
    ex = run.execution()
    run.ok(ex, "memory_write", **create("conversation/a.md", "before"))

    # When its principal stops it
    r = stop(run, ex)

    # Then the answer is the execution, stopped
    assert r.status_code == 200, r.text
    view = r.json()["execution"]
    assert set(view) == EXECUTION_KEYS
    assert view["stopped"] is True
    assert {k: v for k, v in view.items() if k != "stopped"} == {
        k: v for k, v in ex.items() if k not in ("stopped", "secret")
    }
    assert ex["stopped"] is False  # a new execution runs
    # And its tools, its block, its files and any spawn from it are 409 execution_stopped
    refused_everywhere(run, ex)
    # And a stop is final: stopping again answers 200, still stopped
    again = stop(run, ex)
    assert again.status_code == 200 and again.json()["execution"]["stopped"] is True
    refused_everywhere(run, ex)
    # And what it wrote before the stop stays
    shown = run.api.show(run.ada, conv_base(run.ws, run.conv), "conversation/a.md")
    assert shown.json()["memory"]["content"] == "before"
    # And the conversation takes new executions, which run
    fresh = run.execution()
    assert run.ok(fresh, "memory_ls")


def test_who_may_stop_an_execution(run: Run) -> None:
    ex = run.execution()  # alpha's
    outsider = run.api.account("other", "olga")
    # Then a viewer of its conversation is refused not_authorized, and someone who cannot see it not_found
    assert code(stop(run, ex, run.vic)) == (403, "not_authorized")
    assert code(stop(run, ex, outsider)) == (404, "not_found")
    assert code(run.api.post(f"/executions/{ex['public_id']}/stop", None, {})) == (401, "not_authenticated")
    unknown = "01990000-0000-7000-8000-00000000dead"
    assert code(run.api.post(f"/executions/{unknown}/stop", run.ada, {})) == (404, "not_found")
    # And none of that stopped it
    assert run.ok(ex, "memory_ls")
    # And a member with write standing on its conversation (not its principal) stops it
    assert stop(run, ex, run.bob).status_code == 200
    assert code(run.call(ex, "memory_ls")) == (409, "execution_stopped")
    # And its principal stops its own (Bob's execution, stopped by Bob)
    own = run.execution(run.bob)
    assert stop(run, own, run.bob).status_code == 200
    # And a stop is metered and keyed as any mutation: a resend under the same key answers the same
    mine = run.execution()
    key = {"Idempotency-Key": "stop-once"}
    first = run.api.post(f"/executions/{mine['public_id']}/stop", run.alpha, {}, headers=key)
    second = run.api.post(f"/executions/{mine['public_id']}/stop", run.alpha, {}, headers=key)
    assert first.status_code == second.status_code == 200
    assert first.json() == second.json()


def test_executions_spawned_from_a_stopped_one_stop_with_it_and_not_the_other_way(run: Run) -> None:
    # Given a parent, a child in another conversation, a grandchild, and an unrelated sibling run
    parent = run.execution()
    other = run.conversation()
    child = run.execution(conv=other, parent_execution_public_id=parent["public_id"])
    grandchild = run.execution(parent_execution_public_id=child["public_id"])
    sibling = run.execution()
    for e in (parent, child, grandchild):
        assert run.ok(e, "memory_ls")

    # When the child is stopped, its own descendants stop with it, and its parent runs on
    assert stop(run, child).status_code == 200
    refused_everywhere(run, child)
    refused_everywhere(run, grandchild)
    assert run.ok(parent, "memory_ls")

    # When the parent is stopped, every execution below it is refused too, and the sibling runs on
    late_child = run.execution(parent_execution_public_id=parent["public_id"])
    assert stop(run, parent).status_code == 200
    refused_everywhere(run, parent)
    refused_everywhere(run, late_child)
    assert run.ok(sibling, "memory_ls")
    # And a descendant answers its own stop route (200, stopped)
    assert stop(run, grandchild).json()["execution"]["stopped"] is True


def test_spawning_is_bounded_in_depth(run: Run) -> None:
    # Given a chain of executions as deep as spawning goes
    chain = [run.execution()]
    for _ in range(MAX_SPAWN_DEPTH):
        chain.append(run.execution(parent_execution_public_id=chain[-1]["public_id"]))
    assert run.ok(chain[-1], "memory_ls")
    # Then the deepest spawns nothing more
    assert code(run.start(parent_execution_public_id=chain[-1]["public_id"])) == (400, "parameter_invalid")
    # And a stop at the root reaches the deepest in its own batch read
    assert stop(run, chain[0]).status_code == 200
    assert code(run.call(chain[-1], "memory_ls")) == (409, "execution_stopped")


def test_the_in_account_function_and_the_stop_mark(run: Run) -> None:
    from .test_tools import lambda_handler

    ex = run.execution()
    invoke = lambda_handler()
    event = {"execution": ex["public_id"], "tool": "memory_ls", "input": {}, "secret": ex["secret"]}
    assert "error" not in invoke(event, None)
    assert stop(run, ex).status_code == 200
    # Then the in-account function refuses it too, by its secret or by the principal's token
    assert invoke(event, None)["error"]["code"] == "execution_stopped"
    by_token = {k: v for k, v in event.items() if k != "secret"} | {"token": run.alpha.token}
    assert invoke(by_token, None)["error"]["code"] == "execution_stopped"
    keyed = {**event, "idempotency_key": "call-1"}
    assert invoke(keyed, None)["error"]["code"] == "execution_stopped"
    # And the mark is an item beside the execution's row, kept past the execution's own expiry
    (mark,) = [i for i in scan_table() if i["pk"] == f"EXEC#{ex['public_id']}" and i["sk"] == "STOP"]
    assert mark["stopped_by"] == run.alpha.public_id
    row = next(i for i in scan_table() if i["pk"] == f"EXEC#{ex['public_id']}" and i["sk"] == "EXEC")
    assert mark["expires_at"] > row["expires_at"]


def test_a_write_that_read_before_the_stop_does_not_land_after_it(run: Run) -> None:
    # Given a write whose batch read ran before the stop, the stop landing while it stores its content
    ex = run.execution()
    first = run.ok(ex, "memory_write", **create("conversation/a.md", "v0"))
    _, s3 = aws_clients()
    stopped = threading.Event()

    def stopper(**_: Any) -> None:
        if not stopped.is_set():
            stopped.set()
            assert stop(run, ex).status_code == 200

    s3.meta.events.register("before-call.s3.PutObject", stopper, unique_id="test-stop-race")
    try:
        late = run.call(ex, "memory_write", path="conversation/a.md", content="v1", **version(first))
    finally:
        s3.meta.events.unregister("before-call.s3.PutObject", unique_id="test-stop-race")
    # Then its commit is refused 409 execution_stopped and the document is as it was
    assert stopped.is_set()
    assert code(late) == (409, "execution_stopped")
    shown = run.api.show(run.ada, conv_base(run.ws, run.conv), "conversation/a.md").json()["memory"]
    assert (shown["content"], shown["lock_version"]) == ("v0", 0)


def test_tool_calls_in_flight_while_a_stop_lands_none_succeeds_after_it_is_acknowledged(run: Run) -> None:
    # Given an execution and four threads writing through it as fast as they can
    ex = run.execution()
    base = conv_base(run.ws, run.conv)
    acknowledged = threading.Event()
    lock = threading.Lock()
    results: list[tuple[float, float, int, str | None]] = []  # (sent, answered, status, code)
    ack_at: list[float] = []

    def writer(n: int) -> None:
        i = 0
        while True:
            sent = time.monotonic()
            after_ack = acknowledged.is_set()
            r = run.call(ex, "memory_write", **create(f"conversation/t{n}/{i}.md", "x"))
            answered = time.monotonic()
            status, err = code(r)
            if status == 200 and r.json()["is_error"]:
                status, err = 422, r.json()["code"]
            with lock:
                results.append((sent, answered, status, err))
            i += 1
            if after_ack:
                return

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    time.sleep(0.5)

    # When the stop lands while they run
    r = stop(run, ex)
    assert r.status_code == 200
    ack_at.append(time.monotonic())
    acknowledged.set()
    for t in threads:
        t.join(30)

    # Then some writes landed before the stop and every call sent after it was acknowledged is refused
    ok = [x for x in results if x[2] == 200]
    after = [x for x in results if x[0] > ack_at[0]]
    assert ok, "no write landed before the stop"
    assert after and all(x[2:] == (409, "execution_stopped") for x in after)
    assert all(x[2] in (200, 409) for x in results), {x[2:] for x in results}
    assert all(x[3] == "execution_stopped" for x in results if x[2] == 409)
    # And exactly the acknowledged writes landed: nothing refused is stored, nothing lands later
    docs = [m["path"] for m in run.api.ls(run.ada, base).json()["memory"]]
    assert len(docs) == len(ok)
    time.sleep(0.2)
    assert len(run.api.ls(run.ada, base).json()["memory"]) == len(ok)


def test_stopping_through_the_python_client_and_the_mcp_server(fresh: LocalService) -> None:
    from .test_mcp import Setup, _args, _text, in_session

    _, owner, ws = client_room(fresh.url, fresh.operator_key)
    program = owner.create_agent("helper")
    owner.add_member(ws, agent_public_id=program["agent"]["public_id"])
    conv = owner.create_conversation(ws, answering_agent_public_id=program["agent"]["public_id"])["public_id"]
    agent: MemoryClient = owner.with_token(program["token"])
    setup = Setup(fresh.url, owner, agent, ws, conv)
    ex = agent.create_execution(ws, conv)["execution"]
    assert ex["stopped"] is False
    # When it is stopped through the client (by the workspace's owner, who has write standing there)
    stopped = owner.stop_execution(ex["public_id"])
    assert stopped["stopped"] is True and stopped["public_id"] == ex["public_id"]
    assert agent.stop_execution(ex["public_id"])["stopped"] is True
    # Then the client raises ExecutionStopped for its calls
    with pytest.raises(ExecutionStopped):
        agent.call_tool(ex["public_id"], "memory_ls", {})
    with pytest.raises(ExecutionStopped):
        agent.execution_memory_block(ex["public_id"])

    # And an MCP server running in it refuses its calls, as errors the model reads
    async def body(session: Any) -> Any:
        return await session.call_tool("memory_ls", {})

    result = in_session(_args(setup, "--execution", ex["public_id"]), body)
    assert result.is_error and "execution_stopped" in _text(result)
