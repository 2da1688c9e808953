"""Typed requests: one validation system for HTTP bodies and tool inputs, each refusal with its code."""

from __future__ import annotations

from typing import Any

import pytest
from agent_memory.api.errors import ApiError
from agent_memory.edges.requests.base import parse
from agent_memory.edges.requests.directory import CreateAccount, UpdateWorkspace
from agent_memory.edges.requests.executions import CreateExecution
from agent_memory.edges.requests.memory import MemoryEdit, MemoryGrep, MemoryWrite
from agent_memory.edges.requests.tools import MemoryWriteInput
from agent_memory.edges.requests.validation import Model

PID = "01990000-0000-7000-8000-000000000001"


def _write(**memory: Any) -> dict[str, Any]:
    base = {"path": "conversation/a.md", "content": "x", "expected_public_id": None, "expected_lock_version": None}
    return {"memory": {**base, **memory}}


def refusal(model: type[Model], data: Any, prefix: str = "") -> tuple[str, str]:
    with pytest.raises(ApiError) as info:
        parse(model, data, prefix)
    return info.value.code, info.value.message


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({}, "parameter_missing"),
        ({"memory": "text"}, "parameter_invalid"),
        ({"memory": {"content": "x"}}, "parameter_missing"),
        (_write(path=7), "memory_path_invalid"),
        (_write(path="conversation/../x.md"), "memory_path_invalid"),
        (_write(path="workspace/skills/Bad Name"), "skill_name_invalid"),
        (_write(content=["x"]), "memory_content_invalid"),
        (_write(expected_public_id="not-a-uuid", expected_lock_version=0), "parameter_invalid"),
        (_write(expected_public_id=PID, expected_lock_version=None), "parameter_invalid"),
        (_write(expected_public_id=PID, expected_lock_version=10**40), "parameter_invalid"),
        (_write(expected_public_id=PID, expected_lock_version=True), "parameter_invalid"),
        (_write(expected_public_id=PID, expected_lock_version="3"), "parameter_invalid"),
        (_write(description=5), "memory_description_invalid"),
        (_write(speaker_public_id="x"), "parameter_invalid"),
        (_write(expected_context_revision=-1), "parameter_invalid"),
    ],
)
def test_a_write_body_is_refused_with_the_code_of_its_first_fault(body: dict[str, Any], code: str) -> None:
    # When a write body is wrong in one way, then the refusal carries that fault's code and a sentence
    got, message = refusal(MemoryWrite, body)
    assert got == code
    assert len(message) > 10


def test_the_first_fault_in_field_order_wins() -> None:
    # Given a body with a bad path and a bad expectation, the path (read first) is what is refused
    assert refusal(MemoryWrite, _write(path="", expected_public_id="x", expected_lock_version=1))[0] == (
        "memory_path_invalid"
    )
    # And a missing field names where it is
    assert refusal(MemoryEdit, {"memory": {"path": "conversation/a.md"}}) == (
        "parameter_missing",
        "memory.expected_public_id is required.",
    )


def test_a_valid_body_is_typed() -> None:
    m = parse(MemoryWrite, _write(expected_public_id=PID, expected_lock_version=3)).memory
    assert (m.path.root, m.path.rest, m.expected, m.description_given) == ("conversation", "a.md", (PID, 3), False)
    g = parse(MemoryGrep, {"memory": {"pattern": "x", "path": "workspace/"}}).memory
    assert (g.path is not None and g.path.root, g.limit, g.ignore_case) == ("workspace", 100, False)


def test_tool_inputs_share_the_rules_and_refuse_unknown_fields() -> None:
    # Given the same faults sent as a model's tool input
    pair = {"path": "conversation/a.md", "content": "x", "expected_public_id": PID, "expected_lock_version": None}
    assert refusal(MemoryWriteInput, pair, "input")[0] == "parameter_invalid"
    assert refusal(MemoryWriteInput, {**pair, "expected_lock_version": 10**40}, "input")[0] == "parameter_invalid"
    assert refusal(MemoryWriteInput, {**pair, "content": 3}, "input")[0] == "memory_content_invalid"
    # And a field the tool does not have is the model's mistake, named in the refusal
    code, message = refusal(MemoryWriteInput, {**pair, "expected_lock_version": 0, "colour": "red"}, "input")
    assert code == "parameter_invalid" and "colour" in message


@pytest.mark.parametrize(
    ("model", "body", "code"),
    [
        (CreateAccount, {"account": {"name": "a"}}, "parameter_missing"),
        (CreateAccount, {"account": {"name": " "}, "human": {"name": "b"}}, "parameter_invalid"),
        (CreateAccount, {"account": {"name": "a" * 201}, "human": {"name": "b"}}, "parameter_invalid"),
        (CreateAccount, {"account": {"name": "\ud800"}, "human": {"name": "b"}}, "parameter_invalid"),
        (UpdateWorkspace, {"workspace": {"tool_provider_overrides": []}}, "parameter_invalid"),
        (CreateExecution, {"execution": {"tools": ["memory_ls", "memory_ls"]}}, "parameter_invalid"),
        (CreateExecution, {"execution": {"tools": ["rm -rf"]}}, "parameter_invalid"),
        (CreateExecution, {"execution": {"parent_execution_public_id": 1}}, "parameter_invalid"),
    ],
)
def test_directory_and_execution_bodies(model: type[Model], body: dict[str, Any], code: str) -> None:
    assert refusal(model, body)[0] == code
