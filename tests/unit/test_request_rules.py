"""The enums and cross-field rules the request models hold (they once sat in the services): each is
refused at parsing, with the code and sentence the services gave."""

from __future__ import annotations

from typing import Any

import pytest
from agent_memory.api.errors import ApiError
from agent_memory.edges.requests.base import parse
from agent_memory.edges.requests.directory import AddMember, CreateAgent, UpdateWorkspace
from agent_memory.edges.requests.memories import CreateMemory, MemoriesQuery, PatchAgent, PatchMemory
from agent_memory.edges.requests.validation import Model

ID = "0190a1b2-0000-7000-8000-000000000000"
MEM = "mem_" + "a" * 32


def refused(model: type[Model], body: Any) -> tuple[str, str]:
    with pytest.raises(ApiError) as err:
        parse(model, body)
    return err.value.code, err.value.message


def test_a_member_names_one_principal_in_a_known_role() -> None:
    assert refused(AddMember, {"member": {}}) == (
        "parameter_invalid",
        "member needs exactly one of human_public_id and agent_public_id.",
    )
    assert refused(AddMember, {"member": {"human_public_id": ID, "agent_public_id": ID}})[0] == "parameter_invalid"
    assert refused(AddMember, {"member": {"human_public_id": ID, "role": "owner"}}) == (
        "parameter_invalid",
        "member.role must be 'curator', 'member' or 'viewer'.",
    )
    assert parse(AddMember, {"member": {"agent_public_id": ID, "role": "viewer"}}).member.role == "viewer"


def test_an_agent_is_a_program_or_a_definition_named_for_urls() -> None:
    assert refused(CreateAgent, {"agent": {"name": "x", "kind": "robot"}}) == (
        "parameter_invalid",
        "agent.kind must be 'program' or 'definition'.",
    )
    code, message = refused(CreateAgent, {"agent": {"name": "Release Notes", "kind": "definition"}})
    assert (code, message.startswith("A definition's name addresses it in URLs")) == ("parameter_invalid", True)
    # A program's name is free text
    assert parse(CreateAgent, {"agent": {"name": "Release Notes", "kind": "program"}}).agent.kind == "program"


@pytest.mark.parametrize("provider", ["", "  ", 7, "x" * 201])
def test_an_override_is_a_provider_name_or_null(provider: Any) -> None:
    body = {"workspace": {"tool_provider_overrides": {"nexus.memory": provider}}}
    assert refused(UpdateWorkspace, body) == (
        "parameter_invalid",
        "tool_provider_overrides['nexus.memory'] must be a provider name or null.",
    )
    parse(UpdateWorkspace, {"workspace": {"tool_provider_overrides": {"nexus.memory": None, "b": "mem0"}}})


@pytest.mark.parametrize(("name", "word"), [("Team Notes", "is not a Memory name"), ("agent", "is reserved")])
def test_a_memory_name(name: str, word: str) -> None:
    code, message = refused(CreateMemory, {"memory": {"name": name}})
    assert code == "memory_name_invalid" and word in message


def test_a_memory_description_is_bounded_in_bytes() -> None:
    assert refused(PatchMemory, {"memory": {"description": "é" * 513}}) == (
        "memory_description_invalid",
        "memory.description is longer than 1024 bytes.",
    )


def test_a_new_memorys_files() -> None:
    file = {"path": "a.md", "content": "x"}
    git = {"git": {"url": "https://example.com/r.git"}}
    assert refused(CreateMemory, {"memory": {"name": "n", "files": [file], "source": git}}) == (
        "validation_failed",
        "memory.files and memory.source.git exclude each other.",
    )
    many = [{"path": f"f{i}.md", "content": "x"} for i in range(33)]
    assert refused(CreateMemory, {"memory": {"name": "n", "files": many}})[0] == "validation_failed"
    assert refused(CreateMemory, {"memory": {"name": "n", "files": [file, file]}}) == (
        "validation_failed",
        "memory.files[1].path repeats 'a.md'.",
    )


def test_an_access_panel_is_bounded() -> None:
    humans = [f"0190a1b2-0000-7000-8000-{i:012d}" for i in range(33)]
    assert refused(PatchMemory, {"memory": {"access": {"humans": humans}}}) == (
        "validation_failed",
        "memory.access names at most 32 humans and 16 workspaces.",
    )
    # Repeats count once
    parse(PatchMemory, {"memory": {"access": {"humans": [ID] * 40}}})


def test_deployment_labels() -> None:
    assert refused(PatchAgent, {"agent": {"deployment": "Prod EU"}}) == (
        "validation_failed",
        "agent.deployment must be a deployment label: lowercase letters, digits, '-' and '_', at most 64 characters.",
    )
    default = {"reach": "deployment", "deployment": "-eu"}
    assert refused(PatchMemory, {"memory": {"default": default}})[1].startswith("memory.default.deployment must be")


def test_attachments_are_few_and_distinct() -> None:
    one = {"memory_id": MEM, "mode": "readonly"}
    assert refused(PatchAgent, {"agent": {"memories": [one, one]}}) == (
        "validation_failed",
        "agent.memories names a Memory twice.",
    )
    many = [{"memory_id": "mem_" + f"{i:032x}", "mode": "readonly"} for i in range(17)]
    assert refused(PatchAgent, {"agent": {"memories": many}}) == (
        "validation_failed",
        "agent.memories holds at most 16 Memories.",
    )


def test_a_memories_listing_cursor_is_a_memory_id() -> None:
    assert refused(MemoriesQuery, {"cursor": "page-2"}) == (
        "parameter_invalid",
        "cursor is not a cursor this listing gave out.",
    )
    assert parse(MemoriesQuery, {"cursor": MEM}).cursor == MEM
