"""The memory tools as Strands Agents tools, driven by a scripted model, against the local gateway."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from agent_memory_sdk.client import MemoryClient
from agent_memory_sdk.integrations.strands import MemoryBlockHook, memory_system_prompt, memory_tools
from agent_memory_sdk.local.runtime import LocalService
from strands import Agent
from strands.models.model import Model

from ..support import bindings, client_room


@dataclass
class Turn:
    """What the scripted model answers on one call: a tool use, or text."""

    tool: str | None = None
    input: dict[str, Any] = field(default_factory=dict)
    text: str = ""


class ScriptedModel(Model):
    """A Strands model that answers from a script and keeps what it was shown."""

    def __init__(self, turns: list[Turn]) -> None:
        self.turns = list(turns)
        self.prompts: list[str | None] = []
        self.specs: list[list[Any]] = []
        self.seen: list[Any] = []
        self.calls = 0

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> Any:
        return {}

    def structured_output(self, output_model: Any, prompt: Any, system_prompt: str | None = None, **kw: Any) -> Any:
        raise NotImplementedError

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: str | None = None, **kw: Any
    ) -> AsyncIterator[Any]:
        self.prompts.append(system_prompt)
        self.specs.append(list(tool_specs or []))
        self.seen.append(json.loads(json.dumps(messages, default=str)))
        turn = self.turns.pop(0)
        self.calls += 1
        yield {"messageStart": {"role": "assistant"}}
        if turn.tool:
            use = {"toolUseId": f"tooluse_{self.calls}", "name": turn.tool}
            yield {"contentBlockStart": {"start": {"toolUse": use}}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(turn.input)}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
        else:
            yield {"contentBlockDelta": {"delta": {"text": turn.text}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}


@dataclass
class Room:
    owner: MemoryClient
    ws: str
    conv: str
    execution: dict[str, Any]


@pytest.fixture
def room(fresh: LocalService) -> Room:
    _, owner, ws = client_room(fresh.url, fresh.operator_key)
    context = bindings({"name": "conversation", "scope": "conversation", "access": "read_write"})
    conv = owner.create_conversation(ws, memory_context=context)["public_id"]
    owner.conversation_memory(ws, conv).write("conversation/plan.md", "ship on friday\n", (None, None))
    return Room(owner, ws, conv, owner.create_execution(ws, conv)["execution"])


def _tool_results(messages: list[Any]) -> list[dict[str, Any]]:
    return [b["toolResult"] for m in messages for b in m["content"] if "toolResult" in b]


def test_the_tools_have_the_services_names_and_schemas(room: Room) -> None:
    tools = memory_tools(room.owner, room.execution["public_id"])
    schemas = {s["name"]: s for s in room.owner.tool_schemas("anthropic")}
    assert [t.tool_name for t in tools] == list(schemas)
    for t in tools:
        assert t.tool_spec["description"] == schemas[t.tool_name]["description"]
        assert t.tool_spec["inputSchema"] == {"json": schemas[t.tool_name]["input_schema"]}
    picked = memory_tools(room.owner, room.execution["public_id"], tools=["memory_read", "memory_edit"])
    assert [t.tool_name for t in picked] == ["memory_read", "memory_edit"]


def test_a_strands_agent_reads_and_edits_memory_and_starts_from_the_block(room: Room) -> None:
    ex = room.execution["public_id"]
    door = room.owner.conversation_memory(room.ws, room.conv)
    plan = door.show("conversation/plan.md")
    model = ScriptedModel(
        [
            Turn("memory_read", {"path": "conversation/plan.md"}),
            Turn(
                "memory_edit",
                {
                    "path": "conversation/plan.md",
                    "old_text": "friday",
                    "new_text": "monday",
                    "expected_public_id": plan["public_id"],
                    "expected_lock_version": plan["lock_version"],
                },
            ),
            # A stale pair: the service refuses, and the model reads that as an error result
            Turn(
                "memory_edit",
                {
                    "path": "conversation/plan.md",
                    "old_text": "monday",
                    "new_text": "sunday",
                    "expected_public_id": plan["public_id"],
                    "expected_lock_version": plan["lock_version"],
                },
            ),
            Turn(text="Moved to monday."),
            Turn(text="It is on monday."),
        ]
    )
    agent = Agent(
        model=model,
        tools=memory_tools(room.owner, ex, tools=room.execution["tools"]),
        hooks=[MemoryBlockHook(room.owner, ex, instructions="You plan releases.")],
        callback_handler=None,
    )
    # When the agent runs a turn that reads, edits, and tries an edit on a stale pair
    reply = agent("Move the release to monday.")
    assert str(reply).strip() == "Moved to monday."
    # Then the model was offered the service's tools, and started from the instructions and the block
    assert {s["name"] for s in model.specs[0]} == set(room.execution["tools"])
    first_prompt = model.prompts[0] or ""
    assert first_prompt.startswith("You plan releases.") and "ship on friday" in first_prompt
    # And each tool result is the service's: the read, the edit, the stale refusal as an error
    results = _tool_results(model.seen[-1])
    assert [r["status"] for r in results] == ["success", "success", "error"]
    assert "ship on friday" in results[0]["content"][0]["text"]
    assert "stale_object" in results[2]["content"][0]["text"]
    # And the edit landed once, through the service
    shown = door.show("conversation/plan.md")
    assert (shown["content"], shown["lock_version"]) == ("ship on monday\n", plan["lock_version"] + 1)
    # And the next invocation starts from the block as it is now
    agent("When is it?")
    assert "ship on monday" in (model.prompts[-1] or "")
    assert memory_system_prompt(room.owner, ex) in (model.prompts[-1] or "")


def test_a_refused_call_is_an_error_result_not_a_crash(room: Room, fresh: LocalService) -> None:
    ex = room.execution["public_id"]
    room.owner.stop_execution(ex)
    model = ScriptedModel([Turn("memory_read", {"path": "conversation/plan.md"}), Turn(text="I could not.")])
    agent = Agent(model=model, tools=memory_tools(room.owner, ex), callback_handler=None)
    assert str(agent("Read the plan.")).strip() == "I could not."
    (result,) = _tool_results(model.seen[-1])
    assert result["status"] == "error" and "execution_stopped" in result["content"][0]["text"]


def test_a_resent_write_answers_its_first_answer(room: Room) -> None:
    # The tool_use id is the Idempotency-Key: Strands sending the same call again changes nothing more
    ex = room.execution["public_id"]
    (write,) = memory_tools(room.owner, ex, tools=["memory_write"])
    use = {
        "toolUseId": "tooluse_same",
        "name": "memory_write",
        "input": {
            "path": "conversation/new.md",
            "content": "x\n",
            "expected_public_id": None,
            "expected_lock_version": None,
        },
    }
    call = write._tool_func
    first, second = call(use), call(use)
    assert first["status"] == second["status"] == "success"
    assert first["content"][0]["text"] == second["content"][0]["text"]
    versions = room.owner.conversation_memory(room.ws, room.conv).versions("conversation/new.md")["versions"]
    assert len(versions) == 1
