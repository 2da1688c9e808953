"""Claude's memory tool backed by the service: the SDK's own command types against the local gateway."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from agent_memory.store import aws_clients
from agent_memory_sdk.client import MemoryClient
from agent_memory_sdk.integrations.anthropic import MemoryTool
from agent_memory_sdk.local.mcp_server import MEMORY_TOOL
from agent_memory_sdk.local.runtime import LocalService
from anthropic.lib.tools import ToolError
from anthropic.types.beta import (
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)
from mcp import ClientSession
from mcp.types import CallToolResult, TextContent

from ..aws_errors import dynamodb_error
from ..support import bindings, client_room
from .test_mcp import Setup, _args, in_session, setup  # noqa: F401 (setup is a fixture)


@dataclass
class Desk:
    owner: MemoryClient
    ws: str
    conv: str
    ex: str
    tool: MemoryTool
    runbooks: str
    policies: str

    def run(self, cmd: Any) -> str:
        out = self.tool.execute(cmd)
        assert isinstance(out, str)
        return out

    def refused(self, cmd: Any) -> str:
        with pytest.raises(ToolError) as err:
            self.tool.execute(cmd)
        return str(err.value.content)


def view(path: str, view_range: list[int] | None = None) -> BetaMemoryTool20250818ViewCommand:
    return BetaMemoryTool20250818ViewCommand(command="view", path=path, view_range=view_range)


def create(path: str, text: str) -> BetaMemoryTool20250818CreateCommand:
    return BetaMemoryTool20250818CreateCommand(command="create", path=path, file_text=text)


def replace(path: str, old: str, new: str) -> BetaMemoryTool20250818StrReplaceCommand:
    return BetaMemoryTool20250818StrReplaceCommand(command="str_replace", path=path, old_str=old, new_str=new)


def insert(path: str, line: int, text: str) -> BetaMemoryTool20250818InsertCommand:
    return BetaMemoryTool20250818InsertCommand(command="insert", path=path, insert_line=line, insert_text=text)


def delete(path: str) -> BetaMemoryTool20250818DeleteCommand:
    return BetaMemoryTool20250818DeleteCommand(command="delete", path=path)


def rename(old: str, new: str) -> BetaMemoryTool20250818RenameCommand:
    return BetaMemoryTool20250818RenameCommand(command="rename", old_path=old, new_path=new)


@pytest.fixture
def desk(fresh: LocalService) -> Desk:
    return make_desk(fresh)


def make_desk(fresh: LocalService) -> Desk:
    """An execution of a conversation binding conversation/ and user/ read-write and workspace/ read-only,
    with a Memory mounted read-write at /workspace/runbooks and one read-only at /workspace/policies."""
    _, owner, ws = client_room(fresh.url, fresh.operator_key)
    context = bindings(
        {"name": "conversation", "scope": "conversation", "access": "read_write"},
        {"name": "workspace", "scope": "workspace", "access": "read"},
        {"name": "user", "scope": "user", "access": "read_write"},
    )
    conv = owner.create_conversation(ws, memory_context=context)["public_id"]
    runbooks = owner.create_memory("runbooks", files={"deploy.md": "step one\n"})["memory_id"]
    policies = owner.create_memory("policies", files={"leave.md": "ask first\n"})["memory_id"]
    mounts = [
        {"memory": runbooks, "path": "/workspace/runbooks", "mode": "readwrite"},
        {"memory": policies, "path": "/workspace/policies", "mode": "readonly"},
    ]
    body = {"execution": {"capabilities": [{"ref": "memory", "config": {"mounts": mounts}}]}}
    params = {"workspace_public_id": ws, "conversation_public_id": conv}
    ex = owner.call("create_execution", params, body)["execution"]["public_id"]
    assert owner.token
    tool = MemoryTool(url=fresh.url, token=owner.token, execution_public_id=ex)
    return Desk(owner, ws, conv, ex, tool, runbooks, policies)


NOTES = "/memories/conversation/notes.md"


def _door(d: Desk) -> Any:
    return d.owner.conversation_memory(d.ws, d.conv)


def _revision(d: Desk) -> int:
    return int(d.owner.show_conversation(d.ws, d.conv)["context_revision"])


def _conversation_rows(d: Desk) -> list[dict[str, Any]]:
    return [r for r in _door(d).ls() if r["path"].startswith("conversation/")]


@contextmanager
def aws_hook(hook: Callable[..., Any], event: str = "before-call") -> Iterator[None]:
    """A botocore hook on the service's own clients (the gateway runs in this process)."""
    clients = aws_clients()
    for c in clients:
        c.meta.events.register(event, hook, unique_id="test-anthropic-hook")
    try:
        yield
    finally:
        for c in clients:
            c.meta.events.unregister(event, unique_id="test-anthropic-hook")


# ---- view --------------------------------------------------------------------------------------------


def test_view_lists_the_roots_and_mounts_as_folders_and_shows_files_with_line_numbers(desk: Desk) -> None:
    # Given an empty execution with two Memory mounts, /memories lists its roots and mount folders
    assert desk.run(view("/memories")) == "\n".join(
        [
            "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:",
            "0B\t/memories",
            "0B\t/memories/conversation/",
            "0B\t/memories/user/",
            "0B\t/memories/workspace/",
            "0B\t/memories/workspace/policies/",
            "0B\t/memories/workspace/runbooks/",
        ]
    )
    # When files are created, the listing shows them two levels deep with their sizes, hidden ones left out
    desk.run(create(NOTES, "one\ntwo\nthree\n"))
    desk.run(create("/memories/conversation/deep/er/x.md", "x"))
    desk.run(create("/memories/conversation/.hidden", "h"))
    listed = desk.run(view("/memories/conversation/"))
    assert listed.splitlines()[1:] == [
        "16B\t/memories/conversation",
        "1B\t/memories/conversation/deep/",
        "1B\t/memories/conversation/deep/er/",
        "14B\t/memories/conversation/notes.md",
    ]
    # A file shows with the SDK's numbering (six columns, a tab), its trailing newline an empty last line
    assert desk.run(view(NOTES)) == (
        f"Here's the content of {NOTES} with line numbers:\n     1\tone\n     2\ttwo\n     3\tthree\n     4\t"
    )
    # And view_range picks lines, -1 meaning to the end
    assert desk.run(view(NOTES, [2, 3])).splitlines()[1:] == ["     2\ttwo", "     3\tthree"]
    assert desk.run(view(NOTES, [3, -1])).splitlines()[1:] == ["     3\tthree", "     4\t"]
    # A mounted Memory's file is its mount's, and the mount lists as a folder
    assert desk.run(view("/memories/workspace/runbooks/deploy.md")).splitlines()[1] == "     1\tstep one"
    assert (
        desk.run(view("/memories/workspace/runbooks")).splitlines()[2] == "9B\t/memories/workspace/runbooks/deploy.md"
    )
    # And what is not there is refused in the SDK's words
    missing = "The path /memories/conversation/nope.md does not exist. Please provide a valid path."
    assert desk.refused(view("/memories/conversation/nope.md")) == missing
    assert desk.refused(view("/etc/passwd")) == "Path must start with /memories, got: /etc/passwd"
    assert desk.refused(view("/memories/../x")) == "Path /memories/../x would escape /memories directory"


# ---- create ------------------------------------------------------------------------------------------


def test_create_writes_absent_files_on_null_null_and_refuses_present_ones_as_the_reference_does(desk: Desk) -> None:
    assert desk.run(create(NOTES, "first\n")) == f"File created successfully at: {NOTES}"
    before = _door(desk).show("conversation/notes.md")
    assert (before["content"], before["lock_version"]) == ("first\n", 0)
    # A create of a present file is refused in the reference's words, and changes nothing
    assert desk.refused(create(NOTES, "second\n")) == f"File {NOTES} already exists"
    after = _door(desk).show("conversation/notes.md")
    assert (after["public_id"], after["lock_version"], after["content"]) == (before["public_id"], 0, "first\n")


def test_create_beaten_by_a_concurrent_create_is_refused_and_keeps_the_other_writers_text(desk: Desk) -> None:
    files = desk.tool.commands.files
    real_write = files.write

    def racing_write(path: str, content: str, expected: Any, *, overwrite: bool = False) -> dict[str, Any]:
        # Someone else creates the file just before the tool's write arrives
        _door(desk).write("conversation/notes.md", "theirs\n", (None, None))
        return real_write(path, content, expected, overwrite=overwrite)

    files.write = racing_write  # type: ignore[method-assign]
    assert desk.refused(create(NOTES, "mine\n")) == f"File {NOTES} already exists"
    shown = _door(desk).show("conversation/notes.md")
    assert (shown["content"], shown["lock_version"]) == ("theirs\n", 0)


def test_create_at_the_top_of_memories_names_the_folders_a_file_can_go_in(desk: Desk) -> None:
    said = desk.refused(create("/memories/toplevel.md", "x"))
    assert said == (
        "The path /memories/toplevel.md is not inside a folder: /memories holds only the folders "
        "/memories/conversation/, /memories/user/, /memories/workspace/, and files go in them, such as "
        "/memories/conversation/toplevel.md."
    )
    # And a rename there is refused the same way, while an edit finds nothing there, as in the reference
    desk.run(create(NOTES, "x"))
    assert desk.refused(rename(NOTES, "/memories/toplevel.md")) == said
    missing = "The path /memories/toplevel.md does not exist. Please provide a valid path."
    assert desk.refused(replace("/memories/toplevel.md", "a", "b")) == missing
    assert desk.refused(insert("/memories/toplevel.md", 0, "b")) == missing
    # A root itself is a folder: it already exists to create, and is not a file to edit
    assert desk.refused(create("/memories/conversation", "x")) == "File /memories/conversation already exists"
    assert desk.refused(replace("/memories/conversation", "a", "b")) == "The path /memories/conversation is not a file."


# ---- str_replace and insert -----------------------------------------------------------------------------


def test_str_replace_is_the_services_edit_with_the_sdks_refusals(desk: Desk) -> None:
    desk.run(create(NOTES, "alpha\nbeta\ngamma\nbeta\ndelta\n"))
    said = desk.run(replace(NOTES, "gamma", "GAMMA"))
    assert said == (
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
        "     1\talpha\n     2\tbeta\n     3\tGAMMA\n     4\tbeta\n     5\tdelta"
    )
    shown = _door(desk).show("conversation/notes.md")
    assert shown["content"] == "alpha\nbeta\nGAMMA\nbeta\ndelta\n"
    assert _door(desk).versions("conversation/notes.md")["versions"][0]["operation"] == "edit"
    assert desk.refused(replace(NOTES, "omega", "x")) == (
        f"No replacement was performed, old_str `omega` did not appear verbatim in {NOTES}."
    )
    assert desk.refused(replace(NOTES, "beta", "x")) == (
        "No replacement was performed. Multiple occurrences of old_str `beta` in lines: 2, 4. "
        "Please ensure it is unique"
    )
    assert _door(desk).show("conversation/notes.md")["lock_version"] == shown["lock_version"]
    missing = "The path /memories/conversation/nope.md does not exist. Please provide a valid path."
    assert desk.refused(replace("/memories/conversation/nope.md", "a", "b")) == missing


def test_insert_splices_a_line_at_the_top_the_middle_and_the_end_and_refuses_past_it(desk: Desk) -> None:
    desk.run(create(NOTES, "one\ntwo\n"))
    assert desk.run(insert(NOTES, 0, "zero")) == f"The file {NOTES} has been edited."
    desk.run(insert(NOTES, 2, "one and a half\n"))
    desk.run(insert(NOTES, 4, "three"))
    assert _door(desk).show("conversation/notes.md")["content"] == "zero\none\none and a half\ntwo\nthree\n"
    assert desk.refused(insert(NOTES, 6, "x")) == (
        "Invalid `insert_line` parameter: 6. It should be within the range [0, 5]."
    )
    assert desk.refused(insert(NOTES, -1, "x")).startswith("Invalid `insert_line` parameter: -1.")
    assert _door(desk).show("conversation/notes.md")["lock_version"] == 3


# ---- delete ----------------------------------------------------------------------------------------------


def test_delete_removes_a_file_or_a_folders_files(desk: Desk) -> None:
    desk.run(create(NOTES, "x"))
    desk.run(create("/memories/conversation/old/a.md", "a"))
    desk.run(create("/memories/conversation/old/b.md", "b"))
    assert desk.run(delete(NOTES)) == f"Successfully deleted {NOTES}"
    assert desk.run(delete("/memories/conversation/old")) == "Successfully deleted /memories/conversation/old"
    assert _conversation_rows(desk) == []
    assert desk.refused(delete(NOTES)) == f"The path {NOTES} does not exist"
    assert desk.refused(delete("/memories")) == "Cannot delete the /memories directory itself"


# ---- rename ----------------------------------------------------------------------------------------------


def test_rename_moves_a_file_in_one_transaction_without_moving_bytes(desk: Desk) -> None:
    desk.run(create(NOTES, "keep me\n"))
    before = _door(desk).show("conversation/notes.md")
    revision = _revision(desk)
    seen: list[tuple[str, Any]] = []

    def count(event_name: str, params: dict[str, Any], **_: Any) -> None:
        seen.append((event_name.split(".", 2)[2], params))

    with aws_hook(count, "provide-client-params"):
        said = desk.run(rename(NOTES, "/memories/conversation/renamed.md"))
    assert said == f"Successfully renamed {NOTES} to /memories/conversation/renamed.md"
    ops = [op for op, _ in seen]
    # One TransactWriteItems holding the new pointer and the old one's delete; no S3 request at all
    assert ops.count("TransactWriteItems") == 1 and "PutObject" not in ops and "GetObject" not in ops
    (items,) = [p["TransactItems"] for op, p in seen if op == "TransactWriteItems"]
    assert any("Delete" in i and "DOC#notes.md" in str(i["Delete"]["Key"]) for i in items)
    assert any("Put" in i and i["Put"]["Item"]["sk"]["S"] == "DOC#renamed.md" for i in items)
    moved = _door(desk).show("conversation/renamed.md")
    assert moved["content"] == "keep me\n" and moved["lock_version"] == 0
    assert moved["public_id"] != before["public_id"]
    assert [d["path"] for d in _conversation_rows(desk)] == ["conversation/renamed.md"]
    (v,) = _door(desk).versions("conversation/renamed.md")["versions"]
    assert (v["operation"], v["renamed_from"]) == ("rename", "conversation/notes.md")
    # The conversation moved one revision, as one write does
    assert _revision(desk) == revision + 1


def test_a_cancelled_rename_leaves_both_paths_as_they_were(desk: Desk) -> None:
    desk.run(create(NOTES, "stay\n"))
    before = [(d["path"], d["public_id"], d["lock_version"]) for d in _conversation_rows(desk)]

    def cancel(event_name: str, **_: Any) -> Any:
        if event_name.endswith("TransactWriteItems"):
            return dynamodb_error("InternalServerError", "injected")
        return None

    with aws_hook(cancel):
        said = desk.refused(rename(NOTES, "/memories/user/notes.md"))
    assert "storage_unavailable" in said
    assert [(d["path"], d["public_id"], d["lock_version"]) for d in _conversation_rows(desk)] == before
    assert desk.refused(view("/memories/user/notes.md")).startswith("The path /memories/user/notes.md does not exist")


def test_rename_refuses_an_existing_destination_and_a_missing_source(desk: Desk) -> None:
    desk.run(create(NOTES, "a"))
    desk.run(create("/memories/conversation/other.md", "b"))
    said = desk.refused(rename(NOTES, "/memories/conversation/other.md"))
    assert said == "The destination /memories/conversation/other.md already exists"
    assert {d["path"] for d in _conversation_rows(desk)} == {"conversation/notes.md", "conversation/other.md"}
    assert desk.refused(rename("/memories/conversation/gone.md", "/memories/conversation/x.md")) == (
        "The path /memories/conversation/gone.md does not exist"
    )


def test_rename_across_roots_and_from_a_mounted_memory_moves_the_counters(desk: Desk) -> None:
    desk.run(create(NOTES, "travels\n"))
    assert desk.run(rename(NOTES, "/memories/user/notes.md")).startswith("Successfully renamed")
    assert desk.run(view("/memories/user/notes.md")).splitlines()[1] == "     1\ttravels"
    assert _conversation_rows(desk) == []
    # A Memory's file renamed into the conversation leaves the Memory's count and bytes
    runbooks = desk.owner.memory_files(desk.runbooks)
    assert desk.run(rename("/memories/workspace/runbooks/deploy.md", "/memories/conversation/deploy.md"))
    assert runbooks.ls()["files"] == []
    assert desk.owner.show_memory(desk.runbooks)["file_count"] == 0
    assert _door(desk).show("conversation/deploy.md")["content"] == "step one\n"
    # ...and back into the Memory
    desk.run(rename("/memories/conversation/deploy.md", "/memories/workspace/runbooks/deploy2.md"))
    assert [f["path"] for f in runbooks.ls()["files"]] == ["deploy2.md"]
    assert desk.owner.show_memory(desk.runbooks)["file_count"] == 1


def test_read_only_roots_and_mounts_refuse_every_change(desk: Desk) -> None:
    ro_root = "/memories/workspace/x.md"
    ro_mount = "/memories/workspace/policies/leave.md"
    root = "the workspace/ root is bound read-only."
    mount = "the Memory mounted at /workspace/policies is mounted read-only."
    for cmd, why in (
        (create(ro_root, "x"), root),
        (create(ro_mount, "x"), mount),
        (replace(ro_mount, "a", "b"), mount),
    ):
        # Said once, naming the path the model gave and what holds it
        assert desk.refused(cmd) == f"The path {cmd.path} is read-only in this session: {why}"
    assert "read-only" in desk.refused(insert(ro_mount, 0, "x"))
    assert "read-only" in desk.refused(delete(ro_mount))
    assert "read-only" in desk.refused(rename(ro_mount, "/memories/conversation/leave.md"))
    desk.run(create(NOTES, "x"))
    assert "read-only" in desk.refused(rename(NOTES, ro_root))
    assert desk.owner.memory_files(desk.policies).show("leave.md")["lock_version"] == 0
    assert _door(desk).show("conversation/notes.md")["lock_version"] == 0


def test_importing_agent_memory_does_not_import_any_optional_extra() -> None:
    extras = ("anthropic", "langgraph", "strands")
    code = f"import sys, agent_memory, agent_memory_sdk.client; assert not set({extras!r}) & set(sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


# ---- the same commands as one MCP tool ----------------------------------------------------------------


def test_the_mcp_server_offers_the_six_commands_as_one_memory_tool(setup: Setup) -> None:  # noqa: F811
    # Given an MCP client session with `agent-memory mcp` for the agent's conversation
    async def body(session: ClientSession) -> dict[str, Any]:
        listed = await session.list_tools()
        out: dict[str, Any] = {"tool": next(t for t in listed.tools if t.name == MEMORY_TOOL)}
        calls: dict[str, dict[str, Any]] = {
            "create": {"command": "create", "path": NOTES, "file_text": "one\ntwo\n"},
            "replace": {"command": "str_replace", "path": NOTES, "old_str": "two", "new_str": "2"},
            "insert": {"command": "insert", "path": NOTES, "insert_line": 2, "insert_text": "three"},
            "view": {"command": "view", "path": NOTES, "view_range": [2, -1]},
            "rename": {"command": "rename", "old_path": NOTES, "new_path": "/memories/conversation/moved.md"},
            "missing": {"command": "view", "path": NOTES},
            "folder": {"command": "view", "path": "/memories/conversation"},
            "delete": {"command": "delete", "path": "/memories/conversation/moved.md"},
            "unknown": {"command": "undo"},
        }
        for key, arguments in calls.items():
            out[key] = await session.call_tool(MEMORY_TOOL, arguments)
        return out

    got = in_session(_args(setup), body)
    # Then the tool's input is shaped as the memory tool's commands
    schema = got["tool"].input_schema
    assert schema["properties"]["command"]["enum"] == ["view", "create", "str_replace", "insert", "delete", "rename"]
    # And each command answers what the SDK's MemoryTool answers
    assert _mcp_text(got["create"]) == f"File created successfully at: {NOTES}"
    assert _mcp_text(got["replace"]).startswith("The memory file has been edited.")
    assert _mcp_text(got["insert"]) == f"The file {NOTES} has been edited."
    assert _mcp_text(got["view"]).splitlines()[1:] == ["     2\t2", "     3\tthree", "     4\t"]
    assert _mcp_text(got["rename"]) == f"Successfully renamed {NOTES} to /memories/conversation/moved.md"
    assert got["missing"].is_error and "does not exist" in _mcp_text(got["missing"])
    assert "/memories/conversation/moved.md" in _mcp_text(got["folder"])
    assert not got["delete"].is_error
    assert got["unknown"].is_error and _mcp_text(got["unknown"]).startswith("Unknown command 'undo'")
    # And the changes went through the service
    assert [d["path"] for d in setup.owner.conversation_memory(setup.ws, setup.conv).ls()] == []


def _mcp_text(result: CallToolResult) -> str:
    first = result.content[0]
    assert isinstance(first, TextContent)
    return first.text
