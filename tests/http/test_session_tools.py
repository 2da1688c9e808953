"""The model's tools on a session's absolute paths: the same tree the session's files API serves."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from ..support import CONV, Api, bindings
from .mounted import REFERENCE, RUNBOOKS, Mounted, make_mounted
from .runs import create, version
from .safe_content import INJECTION
from .world import aws_calls

pytestmark = pytest.mark.http


@pytest.fixture
def m(api: Api) -> Mounted:
    return make_mounted(api)


def pair_of(f: dict[str, Any]) -> tuple[str, int]:
    return f["public_id"], f["lock_version"]


def test_read_write_edit_delete_and_history_by_absolute_path(m: Mounted) -> None:
    run, ex = m.run, m.session()
    # When the model reads a mounted file by its absolute path
    read = run.ok(ex, "memory_read", path=f"{RUNBOOKS}/deploy.md")
    # Then the answer names it by that path, with the version to change it
    assert read["content"].startswith(f"{RUNBOOKS}/deploy.md (")
    assert read["content"].endswith("\n\n# Deploy\nship on fridays\n")
    assert read["data"]["path"] == f"{RUNBOOKS}/deploy.md"
    assert pair_of(read["data"]) == pair_of(m.file(m.runbooks, "deploy.md"))

    # When it creates a file (the null pair), replaces it and edits it, each under the pair it last saw
    wrote = run.ok(ex, "memory_write", **create(f"{RUNBOOKS}/oncall.md", "page ada"))
    assert wrote["content"].startswith(f"Created {RUNBOOKS}/oncall.md (8 bytes).")
    assert wrote["data"]["path"] == f"{RUNBOOKS}/oncall.md"
    replaced = run.ok(ex, "memory_write", path=f"{RUNBOOKS}/oncall.md", content="page bob", **version(wrote))
    assert replaced["content"].startswith(f"Replaced {RUNBOOKS}/oncall.md")
    edited = run.ok(
        ex, "memory_edit", path=f"{RUNBOOKS}/oncall.md", old_text="bob", new_text="vic", **version(replaced)
    )
    assert edited["content"].startswith(f"Edited {RUNBOOKS}/oncall.md")
    assert edited["data"]["lock_version"] == 2
    # Then the Memory holds the change, written by the agent in this run
    f = m.file(m.runbooks, "oncall.md")
    assert (f["content"], f["lock_version"]) == ("page vic", 2)
    assert f["written_by"]["kind"] == "agent" and f["written_by"]["public_id"] == m.alpha.public_id
    assert f["written_by"]["execution_public_id"] == ex["public_id"]

    # And the history names the file by the model's path, newest first
    hist = run.ok(ex, "memory_history", path=f"{RUNBOOKS}/oncall.md")
    assert hist["content"].startswith(f"{RUNBOOKS}/oncall.md: 3 versions, newest first.")
    assert [v["lock_version"] for v in hist["data"]["versions"]] == [2, 1, 0]
    assert {v["path"] for v in hist["data"]["versions"]} == {f"{RUNBOOKS}/oncall.md"}
    assert [v["operation"] for v in hist["data"]["versions"]] == ["edit", "write", "write"]

    # And the same Memory through its other mount is the same file
    again = run.ok(ex, "memory_read", path="/memory/runbooks/oncall.md")
    assert again["data"]["path"] == "/memory/runbooks/oncall.md"
    assert pair_of(again["data"]) == pair_of(edited["data"])

    # When it deletes the file under its pair
    gone = run.ok(ex, "memory_delete", path=f"{RUNBOOKS}/oncall.md", **version(edited))
    # Then it is gone from the Memory
    assert gone["content"].startswith(f"Deleted {RUNBOOKS}/oncall.md.")
    assert gone["data"] == {"path": f"{RUNBOOKS}/oncall.md"}
    assert m.paths(m.runbooks) == ["deploy.md"]


def test_the_agent_root_mount_is_the_agent_root(m: Mounted) -> None:
    run, ex = m.run, m.session()
    # When the model writes under /memory/agent
    wrote = run.ok(ex, "memory_write", **create("/memory/agent/notes.md", "likes tea"))
    assert wrote["data"]["path"] == "/memory/agent/notes.md"
    # Then it is the agent/ root's document, read back by either spelling
    rel = run.ok(ex, "memory_read", path="agent/notes.md")
    assert (rel["data"]["path"], rel["data"]["content"]) == ("agent/notes.md", "likes tea")
    assert pair_of(rel["data"]) == pair_of(wrote["data"])
    hist = run.ok(ex, "memory_history", path="/memory/agent/notes.md")
    assert hist["content"].startswith("/memory/agent/notes.md: 1 version, newest first.")
    # And an edit through the mount is the root's next version
    edited = run.ok(
        ex, "memory_edit", path="/memory/agent/notes.md", old_text="tea", new_text="coffee", **version(wrote)
    )
    assert run.ok(ex, "memory_read", path="agent/notes.md")["data"]["lock_version"] == edited["data"]["lock_version"]


def test_ls_without_a_path_lists_the_roots_and_the_mounts(m: Mounted) -> None:
    run, ex = m.run, m.session()
    run.ok(ex, "memory_write", **create("conversation/plan.md", "ship"))
    ls = run.ok(ex, "memory_ls")
    # Then the roots are as they always were, and every mount is listed with its path, kind, mode and name
    assert [r["root"] for r in ls["data"]["roots"]] == ["conversation/", "workspace/", "agent/"]
    assert ls["data"]["mounts"] == m.manifest(ex)
    assert [(x["path"], x["kind"], x["mode"], x.get("name")) for x in ls["data"]["mounts"]] == [
        (RUNBOOKS, "memory", "readwrite", "runbooks"),
        (REFERENCE, "memory", "readonly", "reference"),
        ("/memory/agent", "agent", "readwrite", None),
        ("/memory/runbooks", "memory", "readwrite", "runbooks"),
        ("/memory/reference", "memory", "readonly", "reference"),
    ]
    lines = ls["content"].split("\n")
    assert lines[0] == "Roots: conversation/ (read_write), workspace/ (read_write), agent/ (read_write)"
    assert lines[1] == (
        "Mounts (list one with memory_ls and its path): "
        f"{RUNBOOKS} (Memory runbooks, readwrite), {REFERENCE} (Memory reference, readonly), "
        "/memory/agent (the agent/ root, readwrite), /memory/runbooks (Memory runbooks, readwrite), "
        "/memory/reference (Memory reference, readonly)"
    )
    # And the documents are the roots' (a mount's files are listed by its path)
    assert [d["path"] for d in ls["data"]["memory"]] == ["conversation/plan.md"]


def test_an_execution_without_mounts_lists_as_it_always_did(m: Mounted) -> None:
    # Given a conversation answered by an agent with no Memories, bound to its conversation/ root only
    run = m.run
    beta = run.api.agent(run.ada, "beta")
    run.api.member(run.ada, run.ws, beta)
    ex = run.execution(run.ada, conv=run.conversation(beta, bindings(CONV)))
    assert m.manifest_of(ex) == []
    # When the model lists with no path
    ls = run.ok(ex, "memory_ls")
    # Then the answer is today's, word for word, with an empty list of mounts beside the roots
    assert ls["content"] == "Roots: conversation/ (read_write)\nNo documents yet."
    assert ls["data"] == {
        "memory": [],
        "roots": [{"root": "conversation/", "scope": "conversation", "access": "read_write"}],
        "mounts": [],
    }


def test_ls_at_a_folder_is_the_files_api_listing(m: Mounted) -> None:
    run, ex = m.run, m.session()
    run.ok(ex, "memory_write", **create(f"{RUNBOOKS}/db/restore.md", "from the snapshot"))
    run.ok(ex, "memory_write", **create("/memory/agent/notes.md", "likes tea"))
    for folder in (RUNBOOKS, f"{RUNBOOKS}/db", "/memory", "/workspace", "/", "/memory/agent"):
        # When the model lists a folder, and a file-tool runtime lists the same folder
        ls = run.ok(ex, "memory_ls", path=folder)
        files = m.listed(ex, folder)
        # Then both see one tree: the same files, by the same absolute paths, at the same versions
        seen = [(d["path"], d["public_id"], d["lock_version"], d["bytesize"]) for d in ls["data"]["memory"]]
        assert seen == [(f["path"], f["public_id"], f["lock_version"], f["bytesize"]) for f in files], folder
        for d in ls["data"]["memory"]:
            assert f"- {d['path']} ({d['bytesize']} bytes, public_id {d['public_id']}," in ls["content"]
    every = [d["path"] for d in run.ok(ex, "memory_ls", path="/")["data"]["memory"]]
    assert every == [
        "/memory/agent/notes.md",
        "/memory/reference/glossary.md",
        "/memory/runbooks/db/restore.md",
        "/memory/runbooks/deploy.md",
        f"{REFERENCE}/glossary.md",
        f"{RUNBOOKS}/db/restore.md",
        f"{RUNBOOKS}/deploy.md",
    ]
    assert [d["path"] for d in run.ok(ex, "memory_ls", path=f"{RUNBOOKS}/db/")["data"]["memory"]] == [
        f"{RUNBOOKS}/db/restore.md"
    ]
    empty = run.ok(ex, "memory_ls", path=f"{RUNBOOKS}/nothing")
    assert empty["data"]["memory"] == [] and f"No documents under {RUNBOOKS}/nothing yet." in empty["content"]


def test_a_readonly_mount_refuses_every_change_and_nothing_changes(m: Mounted) -> None:
    run, ex = m.run, m.session()
    before = m.file(m.reference, "glossary.md")
    read = run.ok(ex, "memory_read", path=f"{REFERENCE}/glossary.md")
    # When the model writes, creates, edits or deletes under a readonly mount (either of the Memory's)
    for root in (REFERENCE, "/memory/reference"):
        p = f"{root}/glossary.md"
        assert run.refused(ex, "memory_write", path=p, content="x", **version(read)) == "memory_read_only"
        assert run.refused(ex, "memory_write", **create(f"{root}/new.md", "x")) == "memory_read_only"
        assert run.refused(ex, "memory_edit", path=p, old_text="SLO", new_text="x", **version(read)) == (
            "memory_read_only"
        )
        assert run.refused(ex, "memory_delete", path=p, **version(read)) == "memory_read_only"
    # Then the refusal says which mount, the files API refuses the same change 403 with the same code
    out = run.tool(ex, "memory_write", **create(f"{REFERENCE}/new.md", "x"))
    assert f"The mount {REFERENCE} is readonly" in out["content"]
    r = m.files(
        ex, "write", path=f"{REFERENCE}/new.md", content="x", expected_public_id=None, expected_lock_version=None
    )
    assert r.status_code == 403 and r.json()["error"]["code"] == "memory_read_only"
    assert f"The mount {REFERENCE} is readonly" in r.json()["error"]["message"]
    # And nothing changed
    assert m.file(m.reference, "glossary.md") == before
    assert m.paths(m.reference) == ["glossary.md"]


def test_a_path_outside_every_mount_is_unavailable_and_nothing_changes(m: Mounted) -> None:
    run, ex = m.run, m.session()
    listed = m.listed(ex, "/")
    some = {"expected_public_id": listed[0]["public_id"], "expected_lock_version": 0}
    # When the model names a path outside every mount, with every tool
    for tool, inp in (
        ("memory_read", {"path": "/etc/passwd"}),
        ("memory_write", create("/workspace/other/a.md", "x")),
        ("memory_write", create("/memory/user/a.md", "x")),
        ("memory_edit", {"path": "/workspace/a.md", "old_text": "a", "new_text": "b", **some}),
        ("memory_delete", {"path": "/memory/nobody/a.md", **some}),
        ("memory_history", {"path": "/workspace/runbooksx/deploy.md"}),
        ("memory_ls", {"path": "/tmp"}),
    ):
        out = run.tool(ex, tool, **inp)
        # Then it is refused memory_scope_unavailable, pointing at memory_ls
        assert (out["is_error"], out["code"]) == (True, "memory_scope_unavailable"), (tool, out)
        assert "memory_ls lists the roots and mounts" in out["content"]
    # And a mount itself is no file
    assert run.refused(ex, "memory_read", path=RUNBOOKS) == "memory_path_invalid"
    # And nothing changed anywhere in the tree
    assert m.listed(ex, "/") == listed


def test_a_quarantined_file_stays_hidden_from_the_model(m: Mounted) -> None:
    run, ex = m.run, m.session()
    r = m.mems.write(run.ada, m.runbooks, "pasted.md", INJECTION)
    assert r.status_code == 201, r.text
    before = m.file(m.runbooks, "pasted.md")
    # When the model reads or edits it by its absolute path
    assert run.refused(ex, "memory_read", path=f"{RUNBOOKS}/pasted.md") == "memory_quarantined"
    out = run.tool(
        ex, "memory_edit", path=f"{RUNBOOKS}/pasted.md", old_text="a", new_text="b", **version({"data": before})
    )
    # Then it is refused with none of the text
    assert (out["is_error"], out["code"]) == (True, "memory_quarantined")
    assert INJECTION not in json.dumps(out)
    # And a listing names it, marked, without its text
    ls = run.ok(ex, "memory_ls", path=RUNBOOKS)
    assert f"- {RUNBOOKS}/pasted.md (" in ls["content"] and "[quarantined:" in ls["content"]
    assert INJECTION not in json.dumps(ls)
    # And nothing changed
    assert m.file(m.runbooks, "pasted.md") == before


def test_skills_under_the_agent_mount_stay_peoples_to_write(m: Mounted) -> None:
    run, ex = m.run, m.session()
    # When the model writes a skill through /memory/agent
    assert run.refused(ex, "memory_write", **create("/memory/agent/skills/deploy", "# Steps")) == (
        "memory_reserved_prefix"
    )
    # Then nothing was written, and a Memory's own skills/ folder is only a folder
    assert m.listed(ex, "/memory/agent") == []
    run.ok(ex, "memory_write", **create(f"{RUNBOOKS}/skills/deploy.md", "# Steps"))
    assert "skills/deploy.md" in m.paths(m.runbooks)


def test_a_stale_pair_on_an_absolute_path_is_refused_and_nothing_changes(m: Mounted) -> None:
    run, ex = m.run, m.session()
    read = run.ok(ex, "memory_read", path=f"{RUNBOOKS}/deploy.md")
    run.ok(ex, "memory_write", path=f"{RUNBOOKS}/deploy.md", content="v2", **version(read))
    before = m.file(m.runbooks, "deploy.md")
    # When the model writes with the pair it read before the change, or creates a file that exists
    assert run.refused(ex, "memory_write", path=f"{RUNBOOKS}/deploy.md", content="v3", **version(read)) == (
        "stale_object"
    )
    assert run.refused(ex, "memory_write", **create(f"{RUNBOOKS}/deploy.md", "v3")) == "stale_object"
    # Then the file is the newer one still
    assert m.file(m.runbooks, "deploy.md") == before


def test_under_a_provider_override_the_memories_stay_but_the_agent_root_goes_to_the_provider(m: Mounted) -> None:
    run, ex = m.run, m.session()
    run.ok(ex, "memory_write", **create("/memory/agent/notes.md", "likes tea"))
    r = run.api.call(
        "PATCH", f"/workspaces/{run.ws}", run.ada, {"workspace": {"tool_provider_overrides": {"nexus.memory": "acme"}}}
    )
    assert r.status_code == 200, r.text
    # Then the workspace's roots are the provider's, through either spelling, as the files API says
    assert run.refused(ex, "memory_read", path="/memory/agent/notes.md") == "memory_overridden"
    assert run.refused(ex, "memory_ls", path="/memory/agent") == "memory_overridden"
    shown = m.files(ex, "show", path="/memory/agent/notes.md")
    assert (shown.status_code, shown.json()["error"]["code"]) == (409, "memory_overridden")
    listed = m.files(ex, "list", path="/memory/agent")
    assert (listed.status_code, listed.json()["error"]["code"]) == (409, "memory_overridden")
    # While a Memory, the account's, is served, and a listing above the mounts leaves the agent root out
    assert run.ok(ex, "memory_read", path=f"{RUNBOOKS}/deploy.md")["data"]["content"] == "# Deploy\nship on fridays\n"
    every = [d["path"] for d in run.ok(ex, "memory_ls", path="/")["data"]["memory"]]
    assert "/memory/agent/notes.md" not in every and f"{RUNBOOKS}/deploy.md" in every
    assert [f["path"] for f in m.listed(ex, "/")] == every


def test_the_schemas_tell_the_model_both_path_forms() -> None:
    from agent_memory.edges.tools.dispatch import tool_schemas

    for fmt, key in (("anthropic", "input_schema"), ("openai", "parameters")):
        for t in tool_schemas(fmt):
            spec = t if fmt == "anthropic" else t["function"]
            props = spec[key]["properties"]
            if "path" not in props:
                continue
            described = props["path"]["description"]
            # Both forms, named the way the model will type them
            assert "/workspace/runbooks" in described, (fmt, spec["name"])
            assert "workspace/" in described.replace("/workspace/runbooks", ""), (fmt, spec["name"])
            if spec["name"] != "memory_ls":
                assert "/memory/agent/notes.md" in described
        ls = next(t for t in tool_schemas(fmt) if (t if fmt == "anthropic" else t["function"])["name"] == "memory_ls")
        assert "mounts" in (ls if fmt == "anthropic" else ls["function"])["description"]


def test_a_keyed_write_by_absolute_path_replays_its_first_answer(m: Mounted) -> None:
    run, ex = m.run, m.session()
    url = f"/executions/{ex['public_id']}/tools/memory_write"
    body = {"input": create(f"{RUNBOOKS}/once.md", "only once")}
    headers = {"Idempotency-Key": str(uuid.uuid4())}
    # When a runtime resends a keyed write it never saw the answer of
    first = run.api.post(url, m.alpha, body, headers=headers)
    again = run.api.post(url, m.alpha, body, headers=headers)
    # Then the resend answers the first answer, by the model's absolute path, and the file has one version
    assert first.status_code == 200 and first.json()["is_error"] is False, first.text
    assert again.json() == first.json()
    assert first.json()["content"].startswith(f"Created {RUNBOOKS}/once.md (9 bytes).")
    assert m.file(m.runbooks, "once.md")["lock_version"] == 0


def test_a_tool_call_on_a_mounted_file_reads_everything_in_one_batch(m: Mounted) -> None:
    # Given a session the warm function has seen once (its execution row kept: it never changes)
    run, ex = m.run, m.session()
    read = run.ok(ex, "memory_read", path=f"{RUNBOOKS}/deploy.md")
    # When the model writes a mounted file, counting every AWS request
    with aws_calls() as seen:
        run.ok(ex, "memory_write", path=f"{RUNBOOKS}/deploy.md", content="ship on mondays", **version(read))
    # Then the token, the principal's standing, the Memory's row and the file's came in ONE batch read:
    # the execution names the mount, so every key is known before the first read
    assert dict(seen) == {"dynamodb:BatchGetItem": 1, "s3:PutObject": 1, "dynamodb:TransactWriteItems": 1}
    assert m.file(m.runbooks, "deploy.md")["content"] == "ship on mondays"
