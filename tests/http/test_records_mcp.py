"""`agent-memory mcp`: memory_append and memory_search through a real MCP client session, over stdio."""

from __future__ import annotations

from typing import Any

import pytest
from agent_memory.edges.tools.dispatch import tool_schemas
from agent_memory_sdk.client import MemoryClient
from agent_memory_sdk.local.runtime import LocalService
from mcp import ClientSession
from mcp.types import CallToolResult, ListToolsResult, TextContent

from ..support import client_room
from .test_mcp import Setup, in_session

INVOICES = "Invoice numbers are generated with a year prefix, sequentially per tenant"
SEED_FIELDS = {
    "content",
    "type",
    "run_id",
    "visibility",
    "user_id",
    "facet",
    "source_kind",
    "source_ref",
    "observed_at",
    "valid_from",
    "valid_to",
    "idempotency_key",
    "supersedes",
}


@pytest.fixture
def setup(fresh: LocalService) -> Setup:
    _, owner, ws = client_room(fresh.url, fresh.operator_key)
    program = owner.create_agent("helper")
    owner.add_member(ws, agent_public_id=program["agent"]["public_id"])
    conv = owner.create_conversation(ws, answering_agent_public_id=program["agent"]["public_id"])["public_id"]
    return Setup(fresh.url, owner, owner.with_token(program["token"]), ws, conv)


def _args(s: Setup) -> list[str]:
    assert s.agent.token
    return ["-m", "agent_memory_sdk.local.cli", "mcp", "--url", s.url, "--token", s.agent.token]


def _server(s: Setup) -> list[str]:
    return [*_args(s), "--workspace", s.ws, "--conversation", s.conv]


def _text(result: CallToolResult) -> str:
    first = result.content[0]
    assert isinstance(first, TextContent)
    return first.text


def _data(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, _text(result)
    data = result.structured_content
    assert isinstance(data, dict)
    return dict(data)


def _show(owner: MemoryClient, ws: str, record_id: str) -> dict[str, Any]:
    out: dict[str, Any] = owner.call("record_show", {"workspace_public_id": ws, "record_public_id": record_id})
    return dict(out["record"])


def test_memory_append_creates_merges_supersedes_and_memory_search_finds_it(setup: Setup) -> None:
    seed = {
        "content": INVOICES,
        "type": "decision",
        "run_id": "billing-refactor-12",
        "facet": "billing",
        "source_kind": "agent",
        "source_ref": "PR-482",
        "observed_at": "2026-03-02T10:00:00+01:00",
        "valid_from": "2026-03-01",
    }

    async def body(session: ClientSession) -> dict[str, Any]:
        # When an MCP client lists the tools, adds a memory twice, supersedes it and searches
        tools = await session.list_tools()
        first = await session.call_tool("memory_append", seed)
        again = await session.call_tool("memory_append", seed)
        old = _data(first)["record"]["public_id"]
        newer = await session.call_tool(
            "memory_append",
            {
                "content": "Invoice numbers restart at 1 each year, with the year as a prefix, per tenant",
                "type": "decision",
                "facet": "billing",
                "supersedes": old,
            },
        )
        found = await session.call_tool("memory_search", {"query": "invoice numbers year prefix"})
        everything = await session.call_tool(
            "memory_search", {"query": "invoice numbers year prefix", "include_superseded": True, "limit": 5}
        )
        return {"tools": tools, "first": first, "again": again, "newer": newer, "found": found, "all": everything}

    got = in_session(_server(setup), body)
    # Then the record tools are offered under the service's names and fields, one name per tool everywhere
    listed: ListToolsResult = got["tools"]
    names = [t.name for t in listed.tools]
    assert {"memory_append", "memory_search"} <= set(names)
    assert not {"add_memory", "search_memory"} & set(names)
    add = next(t for t in listed.tools if t.name == "memory_append")
    assert set(add.input_schema["properties"]) == SEED_FIELDS | {"labels"}
    assert add.input_schema["required"] == ["content", "type"]
    assert add.input_schema["additionalProperties"] is False
    service = {t["name"]: t["input_schema"] for t in tool_schemas("anthropic")}["memory_append"]
    assert add.input_schema["properties"]["valid_to"] == service["properties"]["valid_to"]
    search = next(t for t in listed.tools if t.name == "memory_search")
    assert {"query", "type", "facet", "run_id", "user_id", "limit", "cursor"} <= set(search.input_schema["properties"])
    assert {"include_superseded", "include_expired"} <= set(search.input_schema["properties"])
    # And the first add made a Workspace record with every seed field, by the agent
    first = _data(got["first"])
    rec = first["record"]
    assert (first["merged"], rec["layer"], rec["type"], rec["mention_count"]) == (False, "Workspace", "decision", 1)
    assert (rec["run_id"], rec["source_kind"], rec["source_ref"]) == ("billing-refactor-12", "agent", "PR-482")
    assert (rec["observed_at"], rec["valid_from"]) == ("2026-03-02T09:00:00.000Z", "2026-03-01T00:00:00.000Z")
    assert rec["tags"]["facet"] == "billing" and rec["workspace_public_id"] == setup.ws
    assert (rec["author"]["kind"], rec["author"]["name"]) == ("agent", "helper")
    # And the identical second add merged into it
    again = _data(got["again"])
    assert again["merged"] is True and again["record"]["public_id"] == rec["public_id"]
    assert again["record"]["mention_count"] == 2
    # And the newer one superseded it at once: search shows the newer one, the old one only when asked
    newer = _data(got["newer"])["record"]
    assert newer["supersedes"] == rec["public_id"]
    assert _show(setup.owner, setup.ws, rec["public_id"])["superseded_by"] == newer["public_id"]
    assert [h["record"]["public_id"] for h in _data(got["found"])["results"]] == [newer["public_id"]]
    assert "<records boundary=" in _text(got["found"]) and newer["content"] in _text(got["found"])
    both = {h["record"]["public_id"]: h["record"] for h in _data(got["all"])["results"]}
    assert set(both) == {rec["public_id"], newer["public_id"]}
    assert both[rec["public_id"]]["superseded_by"] == newer["public_id"]


def test_memory_append_honours_its_idempotency_key_and_refuses_bad_input_by_code(setup: Setup) -> None:
    note = {"content": "Deploys need two approvals", "type": "decision", "idempotency_key": "billing-decision-7"}

    async def body(session: ClientSession) -> dict[str, CallToolResult]:
        return {
            "first": await session.call_tool("memory_append", note),
            "replay": await session.call_tool("memory_append", note),
            "conflict": await session.call_tool("memory_append", {**note, "content": "Deploys need one approval"}),
            "bad_type": await session.call_tool("memory_append", {"content": "x", "type": "opinion"}),
            "raw": await session.call_tool("memory_append", {"content": "x", "type": "raw"}),
            "no_type": await session.call_tool("memory_append", {"content": "x"}),
            "backwards": await session.call_tool(
                "memory_append", {"content": "x", "type": "fact", "valid_from": "2026-02-01", "valid_to": "2026-01-01"}
            ),
            "unknown": await session.call_tool("memory_append", {"content": "x", "type": "fact", "layer": "Session"}),
            "bad_key": await session.call_tool("memory_append", {"content": "x", "type": "fact", "idempotency_key": 7}),
            "search": await session.call_tool("memory_search", {"query": "deploys approvals"}),
        }

    got = in_session(_server(setup), body)
    # Then the same key with the same input answers the first answer again, and counts no mention
    first = _data(got["first"])
    assert got["replay"].model_dump() == got["first"].model_dump()
    assert _show(setup.owner, setup.ws, first["record"]["public_id"])["mention_count"] == 1
    assert [h["record"]["mention_count"] for h in _data(got["search"])["results"]] == [1]
    # And the same key with other input is refused as a tool error naming the code; nothing else was written
    assert got["conflict"].is_error and "idempotency_conflict" in _text(got["conflict"])
    assert len(_data(got["search"])["results"]) == 1
    # And bad input is a tool error naming its code and the service's fields
    for name, expected in (
        ("bad_type", "validation_failed"),
        ("raw", "validation_failed"),
        ("no_type", "parameter_missing"),
        ("backwards", "parameter_invalid"),
        ("unknown", "parameter_invalid"),
        ("bad_key", "parameter_invalid"),
    ):
        assert got[name].is_error and _text(got[name]).startswith(f"{expected}: "), (name, _text(got[name]))
    assert "valid_to must not be before valid_from" in _text(got["backwards"])
    assert "type" in _text(got["bad_type"])


def test_a_named_execution_without_the_record_tools_refuses_them(setup: Setup) -> None:
    execution = setup.agent.create_execution(setup.ws, setup.conv, tools=["memory_ls", "memory_read"])["execution"]

    async def body(session: ClientSession) -> tuple[ListToolsResult, CallToolResult]:
        return await session.list_tools(), await session.call_tool("memory_append", {"content": "x", "type": "fact"})

    tools, refused = in_session([*_server(setup), "--execution", execution["public_id"]], body)
    # A named execution's tool list is not readable here, so every tool is listed and the service refuses
    assert "memory_append" in [t.name for t in tools.tools]
    assert refused.is_error and "not_authorized" in _text(refused)
    assert "memory_append" in _text(refused)
