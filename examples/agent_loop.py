"""A scripted agent loop against a running service: the memory block, the tools, a stale write done right, a fork.

No LLM is called: the model's turns are a script that reacts to tool results the way a model should. Start
the service with `make run`, then, with the operator key it prints:

    .venv/bin/python examples/agent_loop.py --operator-key KEY      # or set AGENT_MEMORY_OPERATOR_KEY

What it shows, in order:
1. the setup a deployment does once: an account, a workspace, a paired agent program, a conversation;
2. one agent turn: start an execution (bindings frozen), fetch the memory block for the prompt, offer the
   model its tools (the schemas' names), run the model's tool calls;
3. a stale write handled right: someone else changes the document between the model's read and its edit,
   the edit is refused `stale_object`, and the model reads again and redoes its change on the new text
   rather than resending the old change with a fresh pair;
4. a fork: the child starts with the parent's documents and goes its own way.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from collections.abc import Callable, Generator
from typing import Any

from agent_memory_sdk import MemoryClient
from agent_memory_sdk.client import NEW, MemoryClientError, expectation

ToolCall = tuple[str, dict[str, Any]]
Model = Generator[ToolCall, dict[str, Any], str]

PLAN = "conversation/plan.md"


def say(step: str, text: str = "") -> None:
    print(f"== {step}" + (f"\n{text}" if text else ""), flush=True)


def scripted_model(meanwhile: Callable[[], None]) -> Model:
    """The model's turns. Each `yield` is a tool call; what comes back is the tool's result."""
    created = yield (
        "memory_write",
        {
            "path": PLAN,
            "content": "# Plan\n- outline the talk\n",
            "expected_public_id": None,
            "expected_lock_version": None,
        },
    )
    pair = expectation(created["data"])  # the version this turn's change is computed on
    meanwhile()  # a person edits the plan while the model is thinking
    edited = yield (
        "memory_edit",
        {"path": PLAN, "old_text": "- outline the talk", "new_text": "- outline the talk (done)", **pair},
    )
    if edited["is_error"] and edited["code"] == "stale_object":
        # Right: look at what is there now and decide again. Wrong: resend the same edit with a new pair
        # without reading, which would apply a change computed on text that no longer exists.
        current = yield ("memory_read", {"path": PLAN})
        text = current["data"]["content"]
        pair = expectation(current["data"])
        if "- outline the talk\n" in text:
            edited = yield (
                "memory_edit",
                {"path": PLAN, "old_text": "- outline the talk\n", "new_text": "- outline the talk (done)\n", **pair},
            )
    if edited["is_error"]:
        return f"I could not update the plan: {edited['content']}"
    return "The outline is done; the plan is up to date."


def run_turn(agent: MemoryClient, execution: dict[str, Any], model: Model) -> str:
    """The runtime's loop: hand each tool call to the service, hand each result back to the model."""
    call = next(model)
    while True:
        name, tool_input = call
        result = agent.call_tool(execution["public_id"], name, tool_input)
        status = f"refused {result['code']}" if result["is_error"] else "ok"
        print(f"   model -> {name}({json.dumps(tool_input)[:90]}) -> {status}")
        print(textwrap.indent(result["content"][:400].rstrip(), "      "))
        try:
            call = model.send(result)
        except StopIteration as done:
            return str(done.value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--url", default=os.environ.get("AGENT_MEMORY_URL", "http://127.0.0.1:3000"))
    parser.add_argument("--operator-key", default=os.environ.get("AGENT_MEMORY_OPERATOR_KEY"))
    args = parser.parse_args(argv)
    if not args.operator_key:
        parser.error("pass --operator-key (make run prints it) or set AGENT_MEMORY_OPERATOR_KEY")
    try:
        run(args.url, args.operator_key)
    except MemoryClientError as err:
        print(f"failed: {err}", file=sys.stderr)
        return 1
    return 0


def run(url: str, operator_key: str) -> None:
    # 1. Setup, done once by a person or a deployment script.
    admin = MemoryClient(url, operator_key=operator_key)
    ada = admin.with_token(admin.create_account("example", "ada")["token"])
    ws = ada.create_workspace("launch")["public_id"]
    program = ada.create_agent("planner")
    agent_id = program["agent"]["public_id"]
    ada.add_member(ws, agent_public_id=agent_id)
    conv = ada.create_conversation(ws, answering_agent_public_id=agent_id)["public_id"]
    ada.workspace_memory(ws).write("workspace/team.md", "The team ships on Fridays.\n", NEW)
    say("setup", f"workspace {ws}\nconversation {conv} answered by agent {agent_id}")

    # 2. One turn of the agent runtime, acting with the agent's own token.
    agent = ada.with_token(program["token"])
    execution = agent.create_execution(ws, conv)["execution"]
    block = agent.memory_block(ws, conv)
    say("memory block for the prompt", block["text"])
    offered = [t["name"] for t in agent.tool_schemas("anthropic") if t["name"] in execution["tools"]]
    say("tools offered to the model", ", ".join(offered))

    def ada_edits_the_plan() -> None:
        door = ada.conversation_memory(ws, conv)
        doc = door.show(PLAN)
        door.edit(PLAN, "- outline the talk\n", "- outline the talk\n- book the venue (ada)\n", doc)
        print("   meanwhile ada adds a line to the plan, so the model's version is now stale")

    say("the model's turn")
    answer = run_turn(agent, execution, scripted_model(ada_edits_the_plan))
    say("the model answers", answer)
    plan = ada.conversation_memory(ws, conv).show(PLAN)
    revision = ada.show_conversation(ws, conv)["context_revision"]
    say("the plan now (both changes kept)", f"{plan['content']}context_revision {revision}")
    say("memory block for the next turn", agent.memory_block(ws, conv)["text"])

    # 4. A fork starts from the parent's documents and is independent from then on.
    child = ada.fork_conversation(ws, conv)["public_id"]
    child_door = ada.conversation_memory(ws, child)
    copy = child_door.show(PLAN)
    child_door.write(PLAN, copy["content"] + "- try a shorter talk (fork only)\n", copy)
    parent_plan = ada.conversation_memory(ws, conv).show(PLAN)["content"]
    say(
        "fork",
        f"child {child}\nchild's plan:\n{child_door.show(PLAN)['content']}parent's plan unchanged: "
        f"{parent_plan == plan['content']}",
    )


if __name__ == "__main__":
    sys.exit(main())
