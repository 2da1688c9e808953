"""Claude's memory tool side by side with the SDK's own reference (`BetaLocalFilesystemMemoryTool`).

The same command script runs through the reference on a temporary folder and through ours over HTTP (the
conversation/ root of an execution), and every answer and refusal must read the same. What differs on
purpose is listed in `DELIBERATE` and each one is played below too, so the list cannot go stale; each has its
paragraph in docs/decisions.md (issue 29).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests
from agent_memory_sdk.integrations.anthropic import MemoryTool
from agent_memory_sdk.local.runtime import LocalService
from anthropic.lib.tools import ToolError
from anthropic.tools.memory import BetaLocalFilesystemMemoryTool

from .test_anthropic_memory_tool import Desk, create, delete, insert, make_desk, rename, replace, view

C = "/memories/conversation"

#: What our tool answers differently from the reference, on purpose.
DELIBERATE = {
    "folder sizes": "a folder's size is the bytes of the files under it, not the directory inode's (4.0K)",
    "top-level files": "/memories holds only the session's roots and mount folders; a file there is refused",
    "folder rename": "a rename moves one file in one transaction; a folder is refused, not moved",
    "empty folders": "a folder exists while a file is under it: deleting its last file removes it",
    "trailing slash": "a folder viewed with a trailing slash lists its entries without a doubled slash",
}


@pytest.fixture
def desk(fresh: LocalService) -> Desk:
    return make_desk(fresh)


def _outcome(run: Callable[[Any], Any], cmd: Any) -> tuple[str, str]:
    try:
        return "ok", str(run(cmd))
    except ToolError as err:
        return "refused", str(err.content)


def _folder_sizes_masked(text: str) -> str:
    """A listing with each folder's size (the one deliberate difference in a listing) blanked: the folder
    itself (the line after the header) and every entry ending in '/'."""
    lines = text.split("\n")
    if not lines[0].startswith("Here're the files and directories"):
        return text
    return "\n".join(
        "<dir>\t" + line.split("\t", 1)[1] if i == 1 or line.endswith("/") else line for i, line in enumerate(lines)
    )


def script() -> list[Any]:
    notes, dup, moved = f"{C}/notes.md", f"{C}/dup.md", f"{C}/moved.md"
    return [
        view(notes),  # nothing there yet
        create(notes, "one\ntwo\nthree\n"),
        create(notes, "again\n"),  # exists: refused
        view(notes),
        view(notes, [2, 3]),
        view(notes, [2, -1]),
        replace(notes, "two", "TWO"),
        replace(notes, "four", "4"),
        create(dup, "x\ny\nx\n"),
        replace(dup, "x", "z"),
        insert(notes, 0, "zero"),
        insert(notes, 2, "one and a half\n"),
        insert(notes, 99, "past the end"),
        insert(f"{C}/absent.md", 0, "x"),
        replace(f"{C}/absent.md", "a", "b"),
        create(f"{C}/sub/a.md", "a\n"),
        create(f"{C}/sub/deeper/b.md", "bb\n"),
        create(f"{C}/sub/.hidden", "h"),
        view(f"{C}/sub"),
        view(C),
        replace(f"{C}/sub", "a", "b"),
        insert(f"{C}/sub", 0, "x"),
        create(f"{C}/sub", "a folder is there"),
        create(C, "so is a root"),
        replace(C, "a", "b"),
        replace("/memories/top.md", "a", "b"),  # nothing can be there
        view(notes),
        rename(notes, moved),
        rename(notes, moved),  # gone: refused
        rename(dup, moved),  # destination exists: refused
        view(moved),
        delete(moved),
        delete(moved),  # gone: refused
        delete(f"{C}/sub"),
        view(f"{C}/sub/a.md"),
        view("/etc/passwd"),
        view("/memories/../outside"),
        create("/elsewhere/x.md", "x"),
        delete("/memories"),
        rename("/memories", f"{C}/x"),
    ]


def test_every_command_answers_as_the_reference_does(desk: Desk, tmp_path: Path) -> None:
    # Given the SDK's reference tool on an empty temporary folder, and ours on an execution's conversation/
    reference = BetaLocalFilesystemMemoryTool(base_path=str(tmp_path))
    # When the same script runs through both
    theirs = [_outcome(reference.execute, cmd) for cmd in script()]
    ours = [_outcome(desk.tool.execute, cmd) for cmd in script()]
    # Then every answer and refusal is the same text, folder sizes aside
    for cmd, a, b in zip(script(), theirs, ours, strict=True):
        assert (b[0], _folder_sizes_masked(b[1])) == (a[0], _folder_sizes_masked(a[1])), cmd
    # And the script did exercise both sides of the tool
    assert [k for k, _ in ours].count("refused") == 22
    # And the files left behind are the same
    left = {p.relative_to(tmp_path / "memories").as_posix() for p in tmp_path.rglob("*") if p.is_file()}
    assert left == {"conversation/dup.md"}
    assert [d["path"] for d in desk.owner.conversation_memory(desk.ws, desk.conv).ls()] == ["conversation/dup.md"]


def test_the_deliberate_differences_are_these_and_no_more(desk: Desk, tmp_path: Path) -> None:
    reference = BetaLocalFilesystemMemoryTool(base_path=str(tmp_path))

    def both(cmd: Any) -> tuple[tuple[str, str], tuple[str, str]]:
        return _outcome(reference.execute, cmd), _outcome(desk.tool.execute, cmd)

    for cmd in (create(f"{C}/f/a.md", "12345"), create(f"{C}/f/g/b.md", "1")):
        both(cmd)
    # folder sizes: the reference prints the directory's inode size, ours the bytes under it
    theirs, ours = both(view(f"{C}/f"))
    assert ours[1].splitlines()[1] == f"6B\t{C}/f" and theirs[1].splitlines()[1] != ours[1].splitlines()[1]
    assert _folder_sizes_masked(theirs[1]) == _folder_sizes_masked(ours[1])
    # trailing slash: the reference doubles the slash in each entry, ours does not
    theirs, ours = both(view(f"{C}/f/"))
    assert f"{C}/f//a.md" in theirs[1] and f"{C}/f/a.md" in ours[1] and "//" not in ours[1]
    # top-level files: the reference makes one, ours names the folders a file can go in
    theirs, ours = both(create("/memories/top.md", "x"))
    assert theirs == ("ok", "File created successfully at: /memories/top.md")
    assert ours[0] == "refused" and ours[1].startswith("The path /memories/top.md is not inside a folder")
    # folder rename: the reference moves the tree, ours moves one file at a time
    theirs, ours = both(rename(f"{C}/f/g", f"{C}/h"))
    assert theirs == ("ok", f"Successfully renamed {C}/f/g to {C}/h")
    assert ours[0] == "refused" and "rename the files inside it one at a time" in ours[1]
    both(rename(f"{C}/f/g/b.md", f"{C}/h/b.md"))  # ours, one file at a time (the reference's is gone already)
    # empty folders: the reference keeps a folder whose last file was deleted, ours has no such folder
    both(delete(f"{C}/f/a.md"))
    theirs, ours = both(view(f"{C}/f"))
    assert theirs[0] == "ok" and ours == ("refused", f"The path {C}/f does not exist. Please provide a valid path.")
    # And that is the whole list
    assert len(DELIBERATE) == 5


BIG = ("a line of a runbook, long enough to matter\n" * 14_300)[: 600 * 1024 - 15] + "the last line.\n"


def test_the_session_routes_take_a_memory_files_size(desk: Desk) -> None:
    # Given a file larger than the API's usual 512 KiB body and within a Memory file's 1 MiB, sent unkeyed
    base = f"{desk.owner.base_url}/agent_api/v1/executions/{desk.ex}"
    url = f"{base}/files"
    auth = {"Authorization": f"Bearer {desk.owner.token}"}
    body = {"file": {"path": "/workspace/runbooks/big.md", "content": BIG, **_new()}}
    # When it is written into the read-write Memory mount and edited there
    written = requests.post(f"{url}/write", json=body, headers=auth, timeout=30)
    assert written.status_code == 201, written.text
    pair = {"expected_public_id": written.json()["file"]["public_id"], "expected_lock_version": 0}
    edit = {
        "file": {"path": "/workspace/runbooks/big.md", "old_text": "the last line.", "new_text": "the end.", **pair}
    }
    assert requests.post(f"{url}/edit", json=edit, headers=auth, timeout=30).status_code == 200
    # Then the Memory holds it whole
    shown = desk.owner.memory_files(desk.runbooks).show("big.md")
    assert shown["content"] == BIG.replace("the last line.", "the end.") and len(BIG) == 600 * 1024
    # And a model's tool call carries it too
    tool_input = {"input": {"path": "/workspace/runbooks/tool.md", "content": BIG, **_new()}}
    called = requests.post(f"{base}/tools/memory_write", json=tool_input, headers=auth, timeout=30)
    assert called.status_code == 200 and called.json()["is_error"] is False, called.text[:300]
    # And a body past 4 MiB is still refused, changing nothing
    huge = {"file": {"path": "/workspace/runbooks/huge.md", "content": "x" * (4 * 1024 * 1024), **_new()}}
    refused = requests.post(f"{url}/write", json=huge, headers=auth, timeout=30)
    assert (refused.status_code, refused.json()["error"]["code"]) == (400, "parameter_invalid")
    assert [f["path"] for f in desk.owner.memory_files(desk.runbooks).ls()["files"]] == [
        "big.md",
        "deploy.md",
        "tool.md",
    ]


def _new() -> dict[str, None]:
    return {"expected_public_id": None, "expected_lock_version": None}


def test_a_600_kb_file_goes_into_a_memory_mount_through_the_tool(desk: Desk) -> None:
    # Given a file larger than the API's usual 512 KiB body and within a Memory file's 1 MiB
    text = BIG
    path = "/memories/workspace/runbooks/big.md"
    # When the model creates it in the read-write Memory mount, and edits it
    assert desk.run(create(path, text)) == f"File created successfully at: {path}"
    assert desk.run(replace(path, "the last line.", "the end.")).startswith("The memory file has been edited.")
    # Then the Memory holds it whole
    shown = desk.owner.memory_files(desk.runbooks).show("big.md")
    assert shown["content"] == text.replace("the last line.", "the end.") and shown["lock_version"] == 1
    # And a conversation document keeps its own 64 KiB bound, said as the service says it
    said = desk.refused(create(f"{C}/big.md", text))
    assert "memory_document_too_large" in said


def test_racing_creates_of_one_path_make_one_file(desk: Desk) -> None:
    # Given eight threads creating the same file at once, each with its own text and its own tool
    path = f"{C}/race.md"
    tools = [MemoryTool(url=desk.owner.base_url, token=desk.owner.token, execution_public_id=desk.ex) for _ in range(8)]
    start = threading.Barrier(8)
    outcomes: list[tuple[str, str, str]] = []

    def create_it(i: int) -> None:
        start.wait()
        kind, text = _outcome(tools[i].execute, create(path, f"writer {i}\n"))
        outcomes.append((kind, text, f"writer {i}\n"))

    threads = [threading.Thread(target=create_it, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Then exactly one created it, the others were told it exists, and the file holds the winner's text
    won = [o for o in outcomes if o[0] == "ok"]
    assert len(won) == 1 and won[0][1] == f"File created successfully at: {path}"
    assert sorted(o[1] for o in outcomes if o[0] == "refused") == [f"File {path} already exists"] * 7
    shown = desk.owner.conversation_memory(desk.ws, desk.conv).show("conversation/race.md")
    assert (shown["content"], shown["lock_version"]) == (won[0][2], 0)
