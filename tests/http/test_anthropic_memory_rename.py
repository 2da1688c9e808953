"""Claude's memory tool: rename at its edges (caps, taken paths, read-only sides, deleted Memories, retries),
and what a rename costs in AWS requests. The SDK's own command types against the local gateway."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from agent_memory.store import CACHE
from agent_memory_sdk.client import NEW, MemoryClient, MemoryScopeUnavailable
from agent_memory_sdk.integrations.anthropic import MemoryTool
from agent_memory_sdk.local.runtime import LocalService
from botocore.exceptions import EndpointConnectionError

from ..support import Api, Who
from .test_anthropic_memory_tool import (
    NOTES,
    Desk,
    _door,
    aws_hook,
    create,
    make_desk,
    rename,
    view,
)
from .world import aws_calls

REPLAYED = "Idempotency-Replayed"


@pytest.fixture
def desk(fresh: LocalService) -> Desk:
    return make_desk(fresh)


def _rows(d: Desk, root: str) -> list[tuple[str, str, int]]:
    """(path, public_id, lock_version) of every document of one root, as the conversation's door lists it."""
    return sorted((r["path"], r["public_id"], r["lock_version"]) for r in _door(d).ls() if r["path"].startswith(root))


def _memory_files(d: Desk, memory_id: str) -> list[tuple[str, str, int]]:
    return sorted((f["path"], f["public_id"], f["lock_version"]) for f in d.owner.memory_files(memory_id).ls()["files"])


def _state(d: Desk) -> Any:
    """Everything a rename could move: the roots' documents and both mounted Memories' files and counts."""
    return (
        _rows(d, ""),
        sorted((r["path"], r["public_id"], r["lock_version"]) for r in d.owner.workspace_memory(d.ws).ls()),
        _memory_files(d, d.runbooks),
        _memory_files(d, d.policies),
        d.owner.show_memory(d.runbooks)["file_count"],
        d.owner.show_memory(d.policies)["file_count"],
    )


def _session_with(d: Desk, **memories: str) -> MemoryTool:
    """Another execution of the desk's conversation, each Memory mounted read-write at /workspace/<name>."""
    mounts = [{"memory": m, "path": f"/workspace/{name}", "mode": "readwrite"} for name, m in memories.items()]
    body = {"execution": {"capabilities": [{"ref": "memory", "config": {"mounts": mounts}}]}}
    params = {"workspace_public_id": d.ws, "conversation_public_id": d.conv}
    ex = d.owner.call("create_execution", params, body)["execution"]["public_id"]
    return MemoryTool(client=d.owner, execution_public_id=ex)


def _refused(tool: MemoryTool, cmd: Any) -> str:
    from anthropic.lib.tools import ToolError

    with pytest.raises(ToolError) as err:
        tool.execute(cmd)
    return str(err.value.content)


def _at_commit(action: Any) -> Any:
    """A hook that runs `action` once, just before the first TransactWriteItems that follows (a rename's
    commit, after its batch read found everything in place)."""
    fired = threading.Event()

    def hook(event_name: str, **_: Any) -> None:
        if event_name.endswith("TransactWriteItems") and not fired.is_set():
            fired.set()
            action()

    hook.fired = fired  # type: ignore[attr-defined]
    return hook


# ---- the document cap ----------------------------------------------------------------------------------


def test_a_rename_into_a_root_at_its_cap_is_the_caps_refusal_and_moves_nothing(desk: Desk) -> None:
    # Given the user/ root holding the 64 documents a scope holds, and a note in conversation/
    files = desk.tool.commands.files
    for i in range(64):
        files.write(f"user/f{i:02d}.md", f"file {i}\n", NEW)
    desk.run(create(NOTES, "mine\n"))
    before = _state(desk)
    # When the note is renamed into the full root
    said = desk.refused(rename(NOTES, "/memories/user/notes.md"))
    # Then the tool answers the service's cap refusal, and nothing moved on either side
    assert said == "This scope already holds 64 documents: delete or merge one first. (memory_full)"
    assert _state(desk) == before
    assert desk.refused(view("/memories/user/notes.md")).startswith("The path /memories/user/notes.md does not exist")
    # And a rename inside the full root moves no count, so it is allowed
    assert desk.run(rename("/memories/user/f00.md", "/memories/user/g00.md")).startswith("Successfully renamed")
    # And once a file leaves the root, the note fits
    desk.run(rename("/memories/user/g00.md", "/memories/conversation/g00.md"))
    assert desk.run(rename(NOTES, "/memories/user/notes.md")).startswith("Successfully renamed")
    user = [p for p, _, _ in _rows(desk, "user/")]
    assert len(user) == 64 and "user/notes.md" in user and "user/f00.md" not in user
    assert [p for p, _, _ in _rows(desk, "conversation/")] == ["conversation/g00.md"]


# ---- a taken destination ---------------------------------------------------------------------------------


def test_a_rename_onto_an_existing_path_is_refused_across_roots_and_mounts_and_moves_nothing(desk: Desk) -> None:
    desk.run(create(NOTES, "mine\n"))
    desk.run(create("/memories/user/notes.md", "theirs\n"))
    before = _state(desk)
    # Onto another root's file, and onto a mounted Memory's file
    for target in ("/memories/user/notes.md", "/memories/workspace/runbooks/deploy.md"):
        assert desk.refused(rename(NOTES, target)) == f"The destination {target} already exists"
    assert _state(desk) == before
    assert desk.run(view("/memories/user/notes.md")).splitlines()[1] == "     1\ttheirs"


def test_a_destination_created_between_the_renames_read_and_its_commit_is_refused(desk: Desk) -> None:
    desk.run(create(NOTES, "mine\n"))
    user = desk.owner.profile_memory()
    # Someone writes user/notes.md after the rename found it absent, before the rename's transaction
    hook = _at_commit(lambda: user.write("user/notes.md", "theirs\n", NEW))
    with aws_hook(hook):
        said = desk.refused(rename(NOTES, "/memories/user/notes.md"))
    assert hook.fired.is_set()
    assert said == "The destination /memories/user/notes.md already exists"
    # Then their file is the one there, and the note never left
    assert user.show("user/notes.md")["content"] == "theirs\n"
    assert [(p, lv) for p, _, lv in _rows(desk, "conversation/")] == [("conversation/notes.md", 0)]


# ---- read-only sides --------------------------------------------------------------------------------------


def test_a_rename_out_of_or_into_a_read_only_root_or_mount_names_that_side_and_moves_nothing(desk: Desk) -> None:
    # Given a file of the read-only workspace/ root, one of the read-only policies mount, and a note
    desk.owner.workspace_memory(desk.ws).write("workspace/team.md", "the team\n", NEW)
    desk.run(create(NOTES, "mine\n"))
    before = _state(desk)
    root = "the workspace/ root is bound read-only."
    mount = "the Memory mounted at /workspace/policies is mounted read-only."
    cases = [
        # out of a read-only root, into one
        ("/memories/workspace/team.md", "/memories/conversation/team.md", "/memories/workspace/team.md", root),
        (NOTES, "/memories/workspace/notes.md", "/memories/workspace/notes.md", root),
        # out of a read-only mount, into one
        (
            "/memories/workspace/policies/leave.md",
            "/memories/user/leave.md",
            "/memories/workspace/policies/leave.md",
            mount,
        ),
        (NOTES, "/memories/workspace/policies/notes.md", "/memories/workspace/policies/notes.md", mount),
    ]
    for old, new, named, why in cases:
        # Then the refusal names the read-only side and why, once
        assert desk.refused(rename(old, new)) == f"The path {named} is read-only in this session: {why}", (old, new)
    # And nothing moved anywhere
    assert _state(desk) == before


# ---- a Memory deleted meanwhile ----------------------------------------------------------------------------


def test_a_rename_under_a_memory_deleted_meanwhile_is_the_tools_error_and_moves_nothing(desk: Desk) -> None:
    owner = desk.owner
    alpha = owner.create_memory("alpha", files={"a.md": "a\n"})["memory_id"]
    beta = owner.create_memory("beta", files={})["memory_id"]
    gamma = owner.create_memory("gamma", files={})["memory_id"]
    tool = _session_with(desk, alpha=alpha, beta=beta, gamma=gamma)
    desk.run(create(NOTES, "mine\n"))
    notes = _rows(desk, "conversation/")
    gone = "has been deleted since the session began."

    # Out of a Memory deleted after the rename read it, before its commit
    hook = _at_commit(lambda: owner.delete_memory(alpha))
    with aws_hook(hook):
        said = _refused(tool, rename("/memories/workspace/alpha/a.md", "/memories/conversation/a.md"))
    assert hook.fired.is_set()
    assert said == (
        "The path /memories/workspace/alpha/a.md does not exist. Please provide a valid path. "
        f"(The Memory mounted at /workspace/alpha {gone})"
    )
    assert _rows(desk, "conversation/") == notes
    # Into one
    hook = _at_commit(lambda: owner.delete_memory(beta))
    with aws_hook(hook):
        said = _refused(tool, rename(NOTES, "/memories/workspace/beta/notes.md"))
    assert hook.fired.is_set()
    assert said == (
        "The path /memories/workspace/beta/notes.md does not exist. Please provide a valid path. "
        f"(The Memory mounted at /workspace/beta {gone})"
    )
    assert _rows(desk, "conversation/") == notes
    # The route itself answers the session's refusal, 422 memory_scope_unavailable (the Memory's own door
    # would say not_found): a model's tool must not read it as the execution being gone
    hook = _at_commit(lambda: owner.delete_memory(gamma))
    files = tool.commands.files
    with aws_hook(hook), pytest.raises(MemoryScopeUnavailable) as refused:
        files.rename("conversation/notes.md", "/workspace/gamma/notes.md", (notes[0][1], notes[0][2]))
    assert refused.value.status == 422 and refused.value.message == f"The Memory mounted at /workspace/gamma {gone}"
    # And once deleted, renames out of and into them are the same refusals, before any commit
    assert _refused(tool, rename("/memories/workspace/alpha/a.md", "/memories/conversation/a.md")).endswith(
        f"(The Memory mounted at /workspace/alpha {gone})"
    )
    assert _refused(tool, rename(NOTES, "/memories/workspace/beta/n.md")).startswith(
        "The path /memories/workspace/beta/n.md does not exist."
    )
    assert _rows(desk, "conversation/") == notes


def test_a_rename_between_two_memories_one_deleted_meanwhile_names_both_mounts(desk: Desk) -> None:
    delta = desk.owner.create_memory("delta", files={"d.md": "d\n"})["memory_id"]
    epsilon = desk.owner.create_memory("epsilon", files={})["memory_id"]
    tool = _session_with(desk, delta=delta, epsilon=epsilon)
    hook = _at_commit(lambda: desk.owner.delete_memory(epsilon))
    with aws_hook(hook):
        said = _refused(tool, rename("/memories/workspace/delta/d.md", "/memories/workspace/epsilon/d.md"))
    assert hook.fired.is_set()
    # Then the commit cannot tell which of the two went, so the refusal names both mounts
    assert said == (
        "The path /memories/workspace/epsilon/d.md does not exist. Please provide a valid path. (The Memory "
        "mounted at /workspace/delta or the one at /workspace/epsilon has been deleted since the session began.)"
    )
    assert [p for p, _, _ in _memory_files(desk, delta)] == ["d.md"]
    assert desk.owner.show_memory(delta)["file_count"] == 1


def test_a_create_under_a_memory_deleted_meanwhile_is_the_tools_error(desk: Desk) -> None:
    alpha = desk.owner.create_memory("alpha", files={})["memory_id"]
    tool = _session_with(desk, alpha=alpha)
    hook = _at_commit(lambda: desk.owner.delete_memory(alpha))
    with aws_hook(hook):
        said = _refused(tool, create("/memories/workspace/alpha/new.md", "x"))
    assert hook.fired.is_set()
    assert said == (
        "The path /memories/workspace/alpha/new.md does not exist. Please provide a valid path. "
        "(The Memory mounted at /workspace/alpha has been deleted since the session began.)"
    )


# ---- retries and replays -------------------------------------------------------------------------------------


def _post_rename(api: Api, d: Desk, old: str, new: str, pair: tuple[str, int], **headers: str) -> Any:
    body = {"file": {"path": old, "new_path": new, "expected_public_id": pair[0], "expected_lock_version": pair[1]}}
    return api.post(f"/executions/{d.ex}/files/rename", Who(d.owner.token or "", ""), body, headers=headers)


def test_a_keyed_rename_sent_again_answers_the_same_and_moves_nothing_twice(desk: Desk, api: Api) -> None:
    desk.run(create(NOTES, "once\n"))
    ((_, pid, lv),) = _rows(desk, "conversation/")
    first = _post_rename(api, desk, "conversation/notes.md", "user/notes.md", (pid, lv), **{"Idempotency-Key": "r-1"})
    assert first.status_code == 201, first.text
    moved = _state(desk)
    # When the very same request is sent again with its key
    with aws_calls() as replay_cost:
        again = _post_rename(
            api, desk, "conversation/notes.md", "user/notes.md", (pid, lv), **{"Idempotency-Key": "r-1"}
        )
    # Then it answers the first answer, says so, costs one read and moves nothing
    assert (again.status_code, again.headers.get(REPLAYED), again.json()) == (201, "true", first.json())
    assert dict(replay_cost) == {"dynamodb:BatchGetItem": 1}
    assert _state(desk) == moved
    assert len(desk.owner.profile_memory().versions("user/notes.md")["versions"]) == 1
    # And the same key for another rename is a conflict; without a key the resend is stale (the file moved)
    other = _post_rename(api, desk, "conversation/notes.md", "user/other.md", (pid, lv), **{"Idempotency-Key": "r-1"})
    assert (other.status_code, other.json()["error"]["code"]) == (409, "idempotency_conflict")
    plain = _post_rename(api, desk, "conversation/notes.md", "user/notes.md", (pid, lv))
    assert (plain.status_code, plain.json()["error"]["code"]) == (409, "stale_object")
    assert _state(desk) == moved


def test_a_rename_whose_answer_was_lost_after_its_commit_is_retried_by_the_client_and_lands_once(
    desk: Desk,
) -> None:
    desk.run(create(NOTES, "once\n"))
    tool = MemoryTool(
        client=MemoryClient(desk.owner.base_url, desk.owner.token, backoff=0.0), execution_public_id=desk.ex
    )
    lost: list[int] = []

    def lose(event_name: str, **_: Any) -> None:
        # The transaction landed; the function's answer is lost on the way back (a 503)
        if event_name.endswith("TransactWriteItems") and not lost:
            lost.append(1)
            raise EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com/")

    with aws_hook(lose, "after-call"):
        said = tool.execute(rename(NOTES, "/memories/conversation/moved.md"))
    # Then the client sent it again under its key, was answered the first answer, and the model reads success
    assert lost == [1]
    assert said == f"Successfully renamed {NOTES} to /memories/conversation/moved.md"
    assert [p for p, _, _ in _rows(desk, "conversation/")] == ["conversation/moved.md"]
    (version,) = _door(desk).versions("conversation/moved.md")["versions"]
    assert version["renamed_from"] == "conversation/notes.md"


# ---- what it costs ---------------------------------------------------------------------------------------------


def test_a_rename_costs_one_batch_read_and_one_transaction_a_mounted_side_included(desk: Desk, api: Api) -> None:
    desk.run(create(NOTES, "x\n"))
    files = desk.tool.commands.files

    def cost(old: str, new: str) -> dict[str, int]:
        shown = files.show(old)
        with aws_calls() as seen:
            r = _post_rename(api, desk, old, new, (shown["public_id"], shown["lock_version"]))
        assert r.status_code == 201, r.text
        return dict(seen)

    one = {"dynamodb:BatchGetItem": 1, "dynamodb:TransactWriteItems": 1}
    # Both sides a root's, one root or two: both documents ride in the batch that reads the caller; no S3
    assert cost("conversation/notes.md", "conversation/b.md") == one
    assert cost("conversation/b.md", "user/b.md") == one
    # A side in a mounted Memory: the Memory's row and the file ride in that same batch too (the warm
    # function knows the execution, and so the mount, before it reads anything)
    assert cost("user/b.md", "/workspace/runbooks/b.md") == one
    assert cost("/workspace/runbooks/b.md", "/workspace/runbooks/c.md") == one
    assert cost("/workspace/runbooks/c.md", "conversation/c.md") == one
    # And a session show or write of a root's file reads its row in that same batch too, as the
    # conversation's own door does
    who = Who(desk.owner.token or "", "")
    url = f"/executions/{desk.ex}/files"
    CACHE.clear()
    with aws_calls() as seen:
        shown = api.post(f"{url}/show", who, {"file": {"path": "conversation/c.md"}})
    assert shown.status_code == 200, shown.text
    assert dict(seen) == {"dynamodb:BatchGetItem": 1, "s3:GetObject": 1}
    pair = {"expected_public_id": shown.json()["file"]["public_id"], "expected_lock_version": 0}
    with aws_calls() as seen:
        wrote = api.post(url + "/write", who, {"file": {"path": "conversation/c.md", "content": "y", **pair}})
    assert wrote.status_code == 201, wrote.text
    assert dict(seen) == {"dynamodb:BatchGetItem": 1, "s3:PutObject": 1, "dynamodb:TransactWriteItems": 1}
    # And so does a write into a mounted Memory: its row and the file's ride in that batch
    new = {"expected_public_id": None, "expected_lock_version": None}
    with aws_calls() as seen:
        wrote = api.post(url + "/write", who, {"file": {"path": "/workspace/runbooks/d.md", "content": "z", **new}})
    assert wrote.status_code == 201, wrote.text
    assert dict(seen) == {"dynamodb:BatchGetItem": 1, "s3:PutObject": 1, "dynamodb:TransactWriteItems": 1}
