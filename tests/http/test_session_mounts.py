"""Sessions with mounts (issue 14): every rule of the memory capability's configuration, the mount set an
execution captures when it begins (configured and server-managed), its manifest, its files by absolute
path with their modes, and the memory map's view of a Memory a live session mounts.

A refused configuration must create nothing: the table's execution rows (and mount index rows) are counted
before and after, and the same configuration without its bad mount is then accepted.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import requests
from agent_memory.core.settings import settings
from agent_memory.edges.services import reset_services

from ..gitrepos import bare, commit, url_of
from ..support import AGENT, CONV, USER, Api, Who, bindings, code
from .orgmem import Files, ro, rw
from .runs import Run, make_run
from .world import scan_table

pytestmark = pytest.mark.http

NO_MEMORY = "mem_" + "0" * 32
NO_UUID = "01990000-0000-7000-8000-0000000000ff"
TTL_SECONDS = 2


# ---- the world and its helpers ----------------------------------------------------------------------------


class Desk:
    """make_run's room (Ada owns it and stewards `alpha`, which answers `conv`; Bob is a member, Vic a
    viewer) with the files door of the account's Memories, and `notes`: an open native Memory with a file."""

    def __init__(self, api: Api) -> None:
        self.run: Run = make_run(api)
        self.api = api
        self.mems = Files(api)
        self.notes = self.memory("notes", files=[{"path": "guide/a.md", "content": "alpha\n"}])

    @property
    def ada(self) -> Who:
        return self.run.ada

    @property
    def alpha(self) -> Who:
        return self.run.alpha

    def memory(self, name: str, **fields: Any) -> str:
        return str(self.mems.made(self.ada, name, **fields)["memory_id"])

    def human_conversation(self) -> str:
        """A conversation a person answers: its executions bind no agent/ and mount no agent's Memories."""
        return self.api.conversation(self.ada, self.run.ws)

    def start(
        self, who: Who | None = None, mounts: Any = None, conv: str | None = None, **fields: Any
    ) -> requests.Response:
        if mounts is not None:
            fields["capabilities"] = [{"ref": "memory", "config": {"mounts": mounts}}]
        return self.run.start(who or self.ada, conv, **fields)

    def started(self, who: Who | None = None, mounts: Any = None, conv: str | None = None, **fields: Any) -> str:
        r = self.start(who, mounts, conv, **fields)
        assert r.status_code == 201, r.text
        return str(r.json()["execution"]["public_id"])

    def manifest(self, ex: str, who: Who | None = None) -> list[dict[str, Any]]:
        r = self.api.get(f"/executions/{ex}/mounts", who or self.ada)
        assert r.status_code == 200, r.text
        assert set(r.json()) == {"mounts"}
        rows: list[dict[str, Any]] = r.json()["mounts"]
        return rows

    def paths(self, ex: str, who: Who | None = None) -> list[str]:
        return [m["path"] for m in self.manifest(ex, who)]

    def verb(self, ex: str, verb: str, who: Who | None = None, **file: Any) -> requests.Response:
        return self.api.post(f"/executions/{ex}/files/{verb}", who or self.ada, {"file": file})

    def listed(self, ex: str, path: str, who: Who | None = None) -> list[str]:
        r = self.verb(ex, "list", who, path=path)
        assert r.status_code == 200, r.text
        return [f["path"] for f in r.json()["files"]]

    def shown(self, ex: str, path: str, who: Who | None = None) -> dict[str, Any]:
        r = self.verb(ex, "show", who, path=path)
        assert r.status_code == 200, r.text
        out: dict[str, Any] = r.json()["file"]
        return out

    def graph(self) -> dict[str, Any]:
        r = self.api.get("/memory_map", self.ada)
        assert r.status_code == 200, r.text
        out: dict[str, Any] = r.json()
        return out


@pytest.fixture
def desk(api: Api) -> Desk:
    return Desk(api)


@pytest.fixture
def short_lived(api: Api) -> Iterator[Api]:
    """Executions that live TTL_SECONDS (as tests/http/test_authorization.py makes them)."""
    os.environ["AGENT_MEMORY_EXECUTION_TTL_SECONDS"] = str(TTL_SECONDS)
    settings.cache_clear()
    reset_services()
    yield api
    os.environ.pop("AGENT_MEMORY_EXECUTION_TTL_SECONDS")
    settings.cache_clear()
    reset_services()


def wait_past_expiry() -> None:
    time.sleep(TTL_SECONDS + 1.1)


def executions() -> set[str]:
    """Every execution row the table holds."""
    return {str(it["pk"]) for it in scan_table() if str(it["pk"]).startswith("EXEC#")}


def mount_index() -> list[dict[str, Any]]:
    """Every session-mount index row: (account, Memory, execution) with the execution's expiry."""
    return [it for it in scan_table() if str(it["sk"]).startswith("MEMMOUNT#")]


def expect(f: dict[str, Any]) -> dict[str, Any]:
    return {"expected_public_id": f["public_id"], "expected_lock_version": f["lock_version"]}


NEW = {"expected_public_id": None, "expected_lock_version": None}


def refused(r: requests.Response, status: int, code_: str, *fragments: str) -> str:
    """A refusal's status and code, and a message naming each fragment (the mount's index and field)."""
    assert (r.status_code, r.json()["error"]["code"]) == (status, code_), r.text
    message = str(r.json()["error"]["message"])
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    return message


def mount(mem: str, path: str, mode: str | None = None) -> dict[str, Any]:
    return {"memory": mem, "path": path} | ({} if mode is None else {"mode": mode})


# ---- an empty configuration ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"capabilities": None},
        {"capabilities": []},
        {"capabilities": [{"ref": "memory"}]},
        {"capabilities": [{"ref": "memory", "config": None}]},
        {"capabilities": [{"ref": "memory", "config": {}}]},
        {"capabilities": [{"ref": "memory", "config": {"mounts": []}}]},
        {"capabilities": [{"ref": "memory", "config": {"mounts": None}}]},
    ],
)
def test_no_capabilities_or_an_empty_config_mounts_nothing(desk: Desk, fields: dict[str, Any]) -> None:
    # In a conversation a person answers, nothing at all is mounted
    ex = desk.started(conv=desk.human_conversation(), **fields)
    assert desk.manifest(ex) == []
    # ...so '/' lists nothing, and every absolute path lies outside the session's mounts
    assert desk.listed(ex, "/") == []
    refused(desk.verb(ex, "show", path="/workspace/a.md"), 422, "memory_scope_unavailable", "/workspace/a.md")
    # Where alpha answers, only the server's own mount of its agent/ documents is there
    ex = desk.started(desk.alpha, **fields)
    assert desk.manifest(ex, desk.alpha) == [
        {"path": "/memory/agent", "kind": "agent", "mode": "readwrite", "source": "native"}
    ]
    assert mount_index() == []


# ---- every rule of the configuration, refused with nothing created ------------------------------------------

GOOD = "/workspace/good"


def _bad(value: Any, field: str) -> Any:
    """mounts[1] with `field` set to `value` (a key deleted when value is ...)."""

    def make(mem: str) -> list[dict[str, Any]]:
        second = mount(mem, "/workspace/second")
        if value is ...:
            del second[field]
        else:
            second[field] = value
        return [mount(mem, GOOD), second]

    return make


SHAPE_RULES = [
    # memory: mem_ and 32 lowercase hex digits
    pytest.param(_bad("mem_" + "A" * 32, "memory"), "mounts[1].memory", id="memory-uppercase"),
    pytest.param(_bad("mem_" + "0" * 31, "memory"), "mounts[1].memory", id="memory-short"),
    pytest.param(_bad("mem_" + "0" * 33, "memory"), "mounts[1].memory", id="memory-long"),
    pytest.param(_bad("mem_" + "0" * 31 + "g", "memory"), "mounts[1].memory", id="memory-not-hex"),
    pytest.param(_bad("runbooks", "memory"), "mounts[1].memory", id="memory-a-name"),
    pytest.param(_bad("mem_" + "0" * 32 + "\n", "memory"), "mounts[1].memory", id="memory-newline"),
    pytest.param(_bad(7, "memory"), "mounts[1].memory", id="memory-number"),
    pytest.param(_bad(None, "memory"), "mounts[1].memory", id="memory-null"),
    pytest.param(_bad(..., "memory"), "mounts[1].memory", id="memory-missing"),
    # path: absolute, normalised, under /workspace but not /workspace itself, nothing under /memory
    pytest.param(_bad("workspace/a", "path"), "mounts[1].path", id="path-relative"),
    pytest.param(_bad("/workspace//a", "path"), "mounts[1].path", id="path-double-slash"),
    pytest.param(_bad("/workspace/a/", "path"), "mounts[1].path", id="path-trailing-slash"),
    pytest.param(_bad("/workspace/./a", "path"), "mounts[1].path", id="path-dot"),
    pytest.param(_bad("/workspace/../etc", "path"), "mounts[1].path", id="path-dot-dot"),
    pytest.param(_bad("/workspace/a/..", "path"), "mounts[1].path", id="path-trailing-dot-dot"),
    pytest.param(_bad("/workspace", "path"), "mounts[1].path", id="path-workspace-itself"),
    pytest.param(_bad("/workspace/", "path"), "mounts[1].path", id="path-workspace-slash"),
    pytest.param(_bad("/tmp/x", "path"), "mounts[1].path", id="path-outside"),
    pytest.param(_bad("/workspacex/a", "path"), "mounts[1].path", id="path-workspace-prefix"),
    pytest.param(_bad("/", "path"), "mounts[1].path", id="path-root"),
    pytest.param(_bad("/memory/x", "path"), "mounts[1].path", id="path-under-memory"),
    pytest.param(_bad("/memory", "path"), "mounts[1].path", id="path-memory-itself"),
    pytest.param(_bad("/memory/agent", "path"), "mounts[1].path", id="path-memory-agent"),
    pytest.param(_bad("", "path"), "mounts[1].path", id="path-empty"),
    pytest.param(_bad(5, "path"), "mounts[1].path", id="path-number"),
    pytest.param(_bad(..., "path"), "mounts[1].path", id="path-missing"),
    pytest.param(_bad("/workspace/a\x00b", "path"), "mounts[1].path", id="path-nul"),
    pytest.param(_bad("/workspace/" + "a" * 600, "path"), "mounts[1].path", id="path-too-long"),
    # mode: exactly readonly or readwrite
    pytest.param(_bad("ReadOnly", "mode"), "mounts[1].mode", id="mode-ReadOnly"),
    pytest.param(_bad("READWRITE", "mode"), "mounts[1].mode", id="mode-upper"),
    pytest.param(_bad("rw", "mode"), "mounts[1].mode", id="mode-rw"),
    pytest.param(_bad(1, "mode"), "mounts[1].mode", id="mode-number"),
    pytest.param(_bad(True, "mode"), "mounts[1].mode", id="mode-bool"),
    pytest.param(_bad("", "mode"), "mounts[1].mode", id="mode-empty"),
    # no two mounts at one path, and none inside another (either order)
    pytest.param(lambda m: [mount(m, GOOD), mount(m, GOOD)], "mounts[1].path", id="same-path"),
    pytest.param(
        lambda m: [mount(m, "/workspace/data"), mount(m, "/workspace/data/inner")],
        "mounts[1].path",
        id="parent-first",
    ),
    pytest.param(
        lambda m: [mount(m, "/workspace/data/inner"), mount(m, "/workspace/data")],
        "mounts[1].path",
        id="parent-second",
    ),
    pytest.param(
        lambda m: [mount(m, "/workspace/data"), mount(m, "/workspace/x"), mount(m, "/workspace/data/a/b")],
        "mounts[2].path",
        id="grandparent",
    ),
    # the shapes around the mounts: nothing but memory, path and mode (a misspelt mode is no default)
    pytest.param(lambda m: [mount(m, GOOD), "/workspace/x"], "mounts[1]", id="mount-not-an-object"),
    pytest.param(_bad("readwrite", "Mode"), "mounts[1]", id="mount-unknown-field"),
    pytest.param(lambda m: {"memory": m, "path": GOOD}, "mounts", id="mounts-not-a-list"),
]


@pytest.mark.parametrize(("mounts", "names"), SHAPE_RULES)
def test_each_configuration_rule_is_validation_failed_naming_the_mount_and_nothing_is_created(
    desk: Desk, mounts: Any, names: str
) -> None:
    before = executions()
    r = desk.start(mounts=mounts(desk.notes))
    refused(r, 422, "validation_failed", names)
    assert executions() == before
    assert mount_index() == []
    # The same configuration with only its good mount is accepted
    ex = desk.started(mounts=[mount(desk.notes, GOOD)])
    assert desk.paths(ex)[0] == GOOD
    assert executions() == before | {f"EXEC#{ex}"}


@pytest.mark.parametrize(
    "capabilities",
    [
        pytest.param("memory", id="not-a-list"),
        pytest.param([["memory"]], id="capability-not-an-object"),
        pytest.param([{"ref": "files", "config": {}}], id="unknown-ref"),
        pytest.param([{"config": {"mounts": []}}], id="no-ref"),
        pytest.param([{"ref": "memory", "config": []}], id="config-not-an-object"),
        pytest.param([{"ref": "memory", "config": {"mount": []}}], id="config-unknown-field"),
        pytest.param([{"ref": "memory", "config": {}, "mode": "readwrite"}], id="capability-unknown-field"),
        pytest.param([{"ref": "memory"}] * 9, id="too-many"),
    ],
)
def test_a_malformed_capability_list_is_refused(desk: Desk, capabilities: Any) -> None:
    before = executions()
    r = desk.start(capabilities=capabilities)
    assert code(r) == (422, "validation_failed"), r.text
    assert "capabilities" in r.json()["error"]["message"]
    assert executions() == before


def test_two_memory_capabilities_cannot_slip_a_second_mount_at_the_same_path(desk: Desk) -> None:
    # The rules hold across the whole list: a second memory capability is refused rather than let it mount
    # over the first one's mounts with indexes of its own
    caps = [{"ref": "memory", "config": {"mounts": [mount(desk.notes, GOOD)]}}] * 2
    before = executions()
    refused(desk.start(capabilities=caps), 422, "validation_failed", "capabilities[1]")
    assert executions() == before


def test_at_most_32_mounts(desk: Desk) -> None:
    many = [mount(desk.notes, f"/workspace/m{i}") for i in range(33)]
    before = executions()
    refused(desk.start(mounts=many), 422, "validation_failed", "32")
    assert executions() == before
    # 32 distinct paths of one Memory are fine, and index the Memory once for the session
    ex = desk.started(mounts=many[:32])
    assert len(desk.manifest(ex)) == 32 + 1  # and alpha's agent/ documents
    assert [r["sk"] for r in mount_index()] == [f"MEMMOUNT#{desk.notes}#{ex}"]


def test_sibling_paths_that_share_a_prefix_do_not_overlap(desk: Desk) -> None:
    ex = desk.started(mounts=[mount(desk.notes, "/workspace/data"), mount(desk.notes, "/workspace/database")])
    assert desk.paths(ex)[:2] == ["/workspace/data", "/workspace/database"]
    assert desk.listed(ex, "/workspace/data") == ["/workspace/data/guide/a.md"]
    assert desk.listed(ex, "/workspace/database") == ["/workspace/database/guide/a.md"]


# ---- the Memory a mount names must be one the principal reads, and not archived -------------------------


def test_an_unknown_or_invisible_memory_is_memory_scope_unavailable(desk: Desk) -> None:
    other = desk.api.account("other", "olga")
    foreign = Files(desk.api).made(other, "theirs")["memory_id"]
    hidden = desk.memory("hidden", access={"humans": [], "workspaces": []})
    bob = desk.run.bob
    before = executions()
    cases: list[tuple[Who, str]] = [
        (desk.ada, NO_MEMORY),  # no such Memory
        (desk.ada, foreign),  # another account's
        (bob, hidden),  # outside its Access panel
    ]
    for who, mem in cases:
        r = desk.start(who, [mount(desk.notes, GOOD), mount(mem, "/workspace/x")])
        message = refused(r, 422, "memory_scope_unavailable", "mounts[1].memory", mem)
        assert "hidden" not in message and "theirs" not in message  # no name of what one cannot see
    # A deleted Memory is no Memory
    gone = desk.memory("gone")
    assert desk.mems.delete(desk.ada, gone).status_code in (200, 204)
    refused(desk.start(mounts=[mount(gone, GOOD)]), 422, "memory_scope_unavailable", "mounts[0].memory")
    # An agent reads only what its attachments and defaults give it
    r = desk.start(desk.alpha, [mount(desk.notes, GOOD)])
    refused(r, 422, "memory_scope_unavailable", "mounts[0].memory", desk.notes)
    assert executions() == before
    # Ada, who created the hidden Memory, mounts it; Bob mounts the open one
    assert desk.paths(desk.started(mounts=[mount(hidden, "/workspace/x")]))[0] == "/workspace/x"
    assert desk.paths(desk.started(bob, [mount(desk.notes, "/workspace/x")]), bob) == ["/workspace/x"]


def test_an_archived_memory_is_memory_scope_unavailable(desk: Desk) -> None:
    assert desk.mems.archive(desk.ada, desk.notes).status_code == 200
    before = executions()
    refused(
        desk.start(mounts=[mount(desk.notes, GOOD)]), 422, "memory_scope_unavailable", "mounts[0].memory", "archived"
    )
    assert executions() == before


def test_a_human_reads_and_writes_a_memory_as_its_access_panel_says(desk: Desk) -> None:
    # Given a Memory whose panel names a team room where Bob is only a viewer (he is a member of the main
    # room, so he may start executions there)
    team = desk.api.workspace(desk.ada, "team")
    desk.api.member(desk.ada, team, desk.run.bob, role="viewer")
    panel = desk.memory("panel", access={"humans": [], "workspaces": [team]})
    bob = desk.run.bob
    before = executions()
    # Then he mounts it read-only, and a readwrite mount needs write access
    refused(desk.start(bob, [mount(panel, GOOD, "readwrite")]), 403, "not_authorized", "mounts[0]", "write access")
    assert executions() == before
    ex = desk.started(bob, [mount(panel, GOOD, "readonly")])
    assert desk.manifest(ex, bob)[0]["mode"] == "readonly"
    # A member of the team room writes it
    desk.api.member(desk.ada, team, bob, role="member")
    ex = desk.started(bob, [mount(panel, GOOD, "readwrite")])
    assert desk.manifest(ex, bob)[0]["mode"] == "readwrite"


def test_an_agent_mounts_what_its_attachments_and_defaults_give_it_with_their_write_access(desk: Desk) -> None:
    alpha = desk.alpha.public_id
    shared = desk.memory("shared")
    house = desk.memory("house", default={"reach": "account", "mode": "readonly"})
    assert desk.mems.attach(desk.ada, alpha, [ro(desk.notes), rw(shared)]).status_code == 200
    before = executions()
    # A readonly attachment or default reads only: a readwrite mount of it is not_authorized
    for i, mem in ((0, desk.notes), (1, house)):
        mounts = [mount(shared, "/workspace/shared", "readwrite"), mount(mem, GOOD, "readwrite")]
        mounts = mounts if i else mounts[1:]
        refused(desk.start(desk.alpha, mounts), 403, "not_authorized", f"mounts[{i}]")
    assert executions() == before
    # ...while readonly mounts of them, and a readwrite mount of the readwrite attachment, are accepted
    ex = desk.started(
        desk.alpha,
        [mount(desk.notes, GOOD), mount(house, "/workspace/house"), mount(shared, "/workspace/shared", "readwrite")],
    )
    rows = desk.manifest(ex, desk.alpha)
    assert [(r["path"], r["mode"]) for r in rows if r["path"].startswith("/workspace/")] == [
        (GOOD, "readonly"),
        ("/workspace/house", "readonly"),
        ("/workspace/shared", "readwrite"),
    ]


def test_mode_defaults_to_readonly_and_a_readonly_mount_refuses_every_change(desk: Desk) -> None:
    ex = desk.started(mounts=[mount(desk.notes, GOOD)])
    (row, *_) = desk.manifest(ex)
    assert row == {
        "path": GOOD,
        "kind": "memory",
        "memory_id": desk.notes,
        "name": "notes",
        "mode": "readonly",
        "source": "native",
    }
    before = desk.mems.state(desk.ada, desk.notes)
    f = desk.shown(ex, f"{GOOD}/guide/a.md")
    attempts = [
        desk.verb(ex, "write", path=f"{GOOD}/guide/a.md", content="changed", **expect(f)),
        desk.verb(ex, "write", path=f"{GOOD}/new.md", content="new", **NEW),
        desk.verb(ex, "edit", path=f"{GOOD}/guide/a.md", old_text="alpha", new_text="beta", **expect(f)),
        desk.verb(ex, "delete", path=f"{GOOD}/guide/a.md", **expect(f)),
    ]
    for r in attempts:
        assert code(r) == (403, "memory_read_only"), r.text
    assert desk.mems.state(desk.ada, desk.notes) == before


def test_a_git_synced_memory_mounted_readwrite_is_downgraded_to_readonly(desk: Desk, tmp_path: Path) -> None:
    repo = bare(tmp_path)
    sha = commit(repo, {"a.md": b"synced\n"})
    synced = desk.memory("synced", source={"git": {"url": url_of(repo)}})
    ex = desk.started(mounts=[mount(synced, "/workspace/synced", "readwrite")])
    assert desk.manifest(ex)[0] == {
        "path": "/workspace/synced",
        "kind": "memory",
        "memory_id": synced,
        "name": "synced",
        "mode": "readonly",
        "source": "git",
    }
    f = desk.shown(ex, "/workspace/synced/a.md")
    assert f["content"] == "synced\n" and f["written_by"] == {"kind": "sync", "name": "git", "commit": sha}
    r = desk.verb(ex, "write", path="/workspace/synced/a.md", content="mine", **expect(f))
    assert code(r) == (403, "memory_read_only")
    assert desk.mems.content(desk.ada, synced, "a.md") == "synced\n"
    # A viewer of it, who could not mount it readwrite were it native, is downgraded the same way
    team = desk.api.workspace(desk.ada, "team")
    desk.api.member(desk.ada, team, desk.run.bob, role="viewer")
    assert desk.mems.patch(desk.ada, synced, access={"humans": [], "workspaces": [team]}).status_code == 200
    ex = desk.started(desk.run.bob, [mount(synced, "/workspace/synced", "readwrite")])
    assert desk.manifest(ex, desk.run.bob)[0]["mode"] == "readonly"


# ---- what a session captures ---------------------------------------------------------------------------------


def test_the_manifest_names_configured_then_server_mounts(desk: Desk) -> None:
    # Given alpha answering a conversation that binds conversation/, user/ and agent/, two attachments, an
    # account-wide default and a default that an attachment overrides
    alpha = desk.alpha.public_id
    wiki = desk.memory("wiki")
    house = desk.memory("house", default={"reach": "account", "mode": "readonly", "read_first": True})
    prod = desk.memory("prod", default={"reach": "deployment", "deployment": "prod", "mode": "readwrite"})
    covered = desk.memory("covered", default={"reach": "account", "mode": "readwrite"})
    attached = desk.mems.attach(desk.ada, alpha, [rw(wiki, read_first=False), ro(covered)])
    assert attached.status_code == 200, attached.text
    conv = desk.run.conversation(memory_context=bindings(CONV, USER, AGENT))
    # When Ada, who stewards alpha, starts an execution there with two configured mounts
    ex = desk.started(conv=conv, mounts=[mount(desk.notes, "/workspace/notes", "readwrite"), mount(wiki, GOOD)])
    # Then the manifest lists the configured mounts, then agent/ and user/, then alpha's Memories
    # (attachments, then the defaults that reach it and no attachment overrides: not prod's deployment)
    assert desk.manifest(ex) == [
        {
            "path": "/workspace/notes",
            "kind": "memory",
            "memory_id": desk.notes,
            "name": "notes",
            "mode": "readwrite",
            "source": "native",
        },
        {"path": GOOD, "kind": "memory", "memory_id": wiki, "name": "wiki", "mode": "readonly", "source": "native"},
        {"path": "/memory/agent", "kind": "agent", "mode": "readwrite", "source": "native"},
        {"path": "/memory/user", "kind": "user", "mode": "readwrite", "source": "native"},
        {
            "path": "/memory/wiki",
            "kind": "memory",
            "memory_id": wiki,
            "name": "wiki",
            "mode": "readwrite",
            "source": "native",
            "read_first": False,
        },
        {
            "path": "/memory/covered",
            "kind": "memory",
            "memory_id": covered,
            "name": "covered",
            "mode": "readonly",
            "source": "native",
            "read_first": False,
        },
        {
            "path": "/memory/house",
            "kind": "memory",
            "memory_id": house,
            "name": "house",
            "mode": "readonly",
            "source": "native",
            "read_first": True,
        },
    ]
    assert prod not in {m.get("memory_id") for m in desk.manifest(ex)}
    # alpha's own execution there has no user/ (no Human is its principal), so no /memory/user
    alphas = desk.started(desk.alpha, conv=conv)
    assert [r["path"] for r in desk.manifest(alphas, desk.alpha)][:3] == [
        "/memory/agent",
        "/memory/wiki",
        "/memory/covered",
    ]
    # A read-only binding mounts its root read-only; an unbound one is not mounted at all
    conv = desk.run.conversation(memory_context=bindings(CONV, {**USER, "access": "read"}))
    ex = desk.started(conv=conv)
    rows = {r["path"]: r for r in desk.manifest(ex)}
    assert rows["/memory/user"] == {"path": "/memory/user", "kind": "user", "mode": "readonly", "source": "native"}
    assert "/memory/agent" not in rows


def test_the_manifest_is_the_principals_own(desk: Desk) -> None:
    ex = desk.started(mounts=[mount(desk.notes, GOOD)])
    assert code(desk.api.get(f"/executions/{ex}/mounts", desk.run.bob)) == (404, "not_found")
    assert code(desk.api.get(f"/executions/{ex}/mounts")) == (401, "not_authenticated")
    assert code(desk.verb(ex, "list", desk.run.bob, path="/")) == (404, "not_found")
    missing = "01990000-0000-7000-8000-0000000000ff"
    assert code(desk.api.get(f"/executions/{missing}/mounts", desk.ada)) == (404, "not_found")


def test_a_human_starting_a_session_gets_only_the_agents_memories_it_may_read(desk: Desk) -> None:
    # Given alpha attached to an open Memory and to one whose panel names only Ada
    alpha = desk.alpha.public_id
    private = desk.memory("private", access={"humans": [], "workspaces": []})
    assert desk.mems.attach(desk.ada, alpha, [rw(desk.notes), rw(private)]).status_code == 200
    # When Bob, a member who cannot read the private one, starts an execution alpha answers
    bob = desk.run.bob
    ex = desk.started(bob)
    # Then the agent's Memories are mounted for him only as far as he reaches them himself
    assert desk.paths(ex, bob) == ["/memory/notes"]
    refused(desk.verb(ex, "list", bob, path="/memory/private"), 422, "memory_scope_unavailable")
    # While Ada's execution mounts both
    assert desk.paths(desk.started()) == ["/memory/agent", "/memory/notes", "/memory/private"]


def test_later_changes_move_only_new_sessions(desk: Desk) -> None:
    # Given alpha with four Memories: attached, attached and soon archived, attached and soon detached, and
    # a tenant default soon changed; and a running session that mounts the soon-archived one too
    alpha = desk.alpha.public_id
    kept = desk.memory("kept", files=[{"path": "k.md", "content": "kept\n"}])
    doomed = desk.memory("doomed", files=[{"path": "d.md", "content": "doomed\n"}])
    dropped = desk.memory("dropped")
    house = desk.memory("house", default={"reach": "account", "mode": "readonly"})
    assert desk.mems.attach(desk.ada, alpha, [rw(kept), rw(doomed), rw(dropped)]).status_code == 200
    running = desk.started(desk.alpha, [mount(doomed, "/workspace/doomed")])
    before = desk.manifest(running, desk.alpha)
    assert [r["path"] for r in before] == [
        "/workspace/doomed",
        "/memory/agent",
        "/memory/kept",
        "/memory/doomed",
        "/memory/dropped",
        "/memory/house",
    ]
    # When one is archived, one described anew, one detached and the default made readwrite
    assert desk.mems.archive(desk.ada, doomed).status_code == 200
    assert desk.mems.patch(desk.ada, kept, description="renamed").status_code == 200
    assert desk.mems.attach(desk.ada, alpha, [rw(kept), rw(doomed)]).status_code == 200
    changed = desk.mems.patch(desk.ada, house, default={"reach": "account", "mode": "readwrite", "read_first": True})
    assert changed.status_code == 200, changed.text
    # Then the running session's manifest has not moved, and it still reads what it mounted
    assert desk.manifest(running, desk.alpha) == before
    assert desk.shown(running, "/workspace/doomed/d.md", desk.alpha)["content"] == "doomed\n"
    assert desk.shown(running, "/memory/kept/k.md", desk.alpha)["content"] == "kept\n"
    # And a new session sees the changes: no archived Memory, nothing detached, the default's new mode
    fresh = desk.started(desk.alpha)
    rows = {r["path"]: r for r in desk.manifest(fresh, desk.alpha)}
    assert list(rows) == ["/memory/agent", "/memory/kept", "/memory/house"]
    assert (rows["/memory/house"]["mode"], rows["/memory/house"]["read_first"]) == ("readwrite", True)
    # ...and mounting the archived Memory is refused
    refused(desk.start(desk.alpha, [mount(doomed, "/workspace/doomed")]), 422, "memory_scope_unavailable")


# ---- files by absolute path -----------------------------------------------------------------------------------


def test_listing_at_the_root_a_mount_and_a_folder_inside(desk: Desk) -> None:
    alpha = desk.alpha
    wiki = desk.memory("wiki", files=[{"path": "w.md", "content": "w\n"}, {"path": "deep/er/x.md", "content": "x\n"}])
    assert desk.mems.attach(desk.ada, alpha.public_id, [rw(desk.notes)]).status_code == 200
    # (a tenant default gives alpha the wiki, which it then mounts where it likes)
    wiki_default = {"reach": "account", "mode": "readwrite", "read_first": False}
    assert desk.mems.patch(desk.ada, wiki, default=wiki_default).status_code == 200
    ex = desk.started(alpha, [mount(wiki, "/workspace/wiki", "readwrite")])
    r = desk.verb(ex, "write", alpha, path="/memory/agent/todo.md", content="t", **NEW)
    assert r.status_code == 201, r.text
    server = ["/memory/agent/todo.md", "/memory/notes/guide/a.md", "/memory/wiki/deep/er/x.md", "/memory/wiki/w.md"]
    configured = ["/workspace/wiki/deep/er/x.md", "/workspace/wiki/w.md"]
    assert desk.listed(ex, "/", alpha) == server + configured
    assert desk.listed(ex, "/workspace", alpha) == configured
    assert desk.listed(ex, "/memory", alpha) == server
    assert desk.listed(ex, "/workspace/wiki", alpha) == configured
    assert desk.listed(ex, "/workspace/wiki/", alpha) == configured
    assert desk.listed(ex, "/workspace/wiki/deep", alpha) == ["/workspace/wiki/deep/er/x.md"]
    assert desk.listed(ex, "/workspace/wiki/deep/er", alpha) == ["/workspace/wiki/deep/er/x.md"]
    assert desk.listed(ex, "/workspace/wiki/nothing", alpha) == []
    assert desk.listed(ex, "/memory/agent", alpha) == ["/memory/agent/todo.md"]
    assert desk.listed(ex, "/memory/notes/guide", alpha) == ["/memory/notes/guide/a.md"]
    # Each row is the file's summary under its absolute path
    r = desk.verb(ex, "list", alpha, path="/workspace/wiki")
    (row, _) = r.json()["files"]
    assert set(row) == {"path", "public_id", "lock_version", "bytesize", "written_at", "written_by", "content_sha256"}
    # A folder outside every mount is refused; a relative path names the execution's own roots
    refused(desk.verb(ex, "list", alpha, path="/etc"), 422, "memory_scope_unavailable")
    refused(desk.verb(ex, "list", alpha, path="/workspace/other"), 422, "memory_scope_unavailable")
    assert desk.listed(ex, "workspace/wiki", alpha) == []


def test_show_write_edit_delete_through_a_readwrite_mount_meet_the_condition_pair(desk: Desk) -> None:
    alpha = desk.alpha
    assert desk.mems.attach(desk.ada, alpha.public_id, [rw(desk.notes)]).status_code == 200
    ex = desk.started(alpha, [mount(desk.notes, "/workspace/notes", "readwrite")])
    path = "/workspace/notes/guide/a.md"
    f = desk.shown(ex, path, alpha)
    assert (f["path"], f["content"], f["lock_version"]) == (path, "alpha\n", 0)
    # A create of a path that exists, and a write on a stale pair, are stale_object
    assert code(desk.verb(ex, "write", alpha, path=path, content="x", **NEW)) == (409, "stale_object")
    stale = {"expected_public_id": f["public_id"], "expected_lock_version": 7}
    assert code(desk.verb(ex, "write", alpha, path=path, content="x", **stale)) == (409, "stale_object")
    # A write on the read pair lands, as alpha in this execution
    w = desk.verb(ex, "write", alpha, path=path, content="alpha\nbeta\n", **expect(f))
    assert w.status_code == 201, w.text
    written = w.json()["file"]
    assert (written["path"], written["lock_version"]) == (path, 1)
    author = {"kind": "agent", "public_id": alpha.public_id, "name": "alpha", "execution_public_id": ex}
    assert written["written_by"] == author
    # The Memory's own files door shows the new version with alpha as its writer
    door = desk.mems.file(desk.ada, desk.notes, "guide/a.md")
    assert door["content"] == "alpha\nbeta\n" and door["written_by"] == author
    # ...and the same through the other mount of the same Memory, /memory/notes
    assert desk.shown(ex, "/memory/notes/guide/a.md", alpha)["lock_version"] == 1
    # Edit: the old pair is stale, a missing pair is 400 parameter_missing, the read pair lands
    edit = {"path": path, "old_text": "beta", "new_text": "gamma"}
    assert code(desk.verb(ex, "edit", alpha, **edit, **expect(f))) == (409, "stale_object")
    assert code(desk.verb(ex, "edit", alpha, **edit)) == (400, "parameter_missing")
    half = {"expected_public_id": written["public_id"]}
    assert code(desk.verb(ex, "edit", alpha, **edit, **half)) == (400, "parameter_missing")
    assert code(desk.verb(ex, "delete", alpha, path=path)) == (400, "parameter_missing")
    assert desk.mems.file(desk.ada, desk.notes, "guide/a.md")["lock_version"] == 1
    e = desk.verb(ex, "edit", alpha, **edit, **expect(written))
    assert e.status_code == 200, e.text
    edited = e.json()["file"]
    assert (edited["path"], edited["content"], edited["lock_version"]) == (path, "alpha\ngamma\n", 2)
    # A new file is created with the null pair
    c = desk.verb(ex, "write", alpha, path="/workspace/notes/new/b.md", content="b\n", **NEW)
    assert c.status_code == 201, c.text
    assert desk.mems.content(desk.ada, desk.notes, "new/b.md") == "b\n"
    # Delete: a stale pair is refused, the current one answers 204 and the file is gone
    assert code(desk.verb(ex, "delete", alpha, path=path, **expect(written))) == (409, "stale_object")
    assert desk.verb(ex, "delete", alpha, path=path, **expect(edited)).status_code == 204
    assert code(desk.mems.show_file(desk.ada, desk.notes, "guide/a.md")) == (404, "memory_not_found")
    assert code(desk.verb(ex, "show", alpha, path=path)) == (404, "memory_not_found")
    assert desk.listed(ex, "/workspace/notes", alpha) == ["/workspace/notes/new/b.md"]


def test_paths_outside_every_mount_or_naming_a_mount_are_refused_and_change_nothing(desk: Desk) -> None:
    ex = desk.started(mounts=[mount(desk.notes, "/workspace/notes", "readwrite")])
    before = desk.mems.state(desk.ada, desk.notes)
    for path in ("/etc/passwd", "/workspace/other/a.md", "/workspace/notesx/a.md", "/memory/user/a.md", "/a.md"):
        for verb, body in (
            ("show", {}),
            ("write", {"content": "x", **NEW}),
            ("edit", {"old_text": "a", "new_text": "b", "expected_public_id": NO_UUID, "expected_lock_version": 0}),
            ("delete", {"expected_public_id": NO_UUID, "expected_lock_version": 0}),
        ):
            r = desk.verb(ex, verb, path=path, **body)
            refused(r, 422, "memory_scope_unavailable", path)
    # The mount itself is no file, and a relative path is a root's document, not the mount's file
    assert code(desk.verb(ex, "show", path="/workspace/notes")) == (422, "memory_path_invalid")
    assert code(desk.verb(ex, "write", path="/workspace/notes", content="x", **NEW)) == (422, "memory_path_invalid")
    assert code(desk.verb(ex, "show", path="workspace/notes/guide/a.md")) == (404, "memory_not_found")
    assert code(desk.verb(ex, "show", path=7)) == (422, "memory_path_invalid")
    assert desk.mems.state(desk.ada, desk.notes) == before


def test_a_write_through_memory_agent_lands_in_the_agents_own_documents(desk: Desk) -> None:
    alpha = desk.alpha
    ex = desk.started(alpha)
    r = desk.verb(ex, "write", alpha, path="/memory/agent/notes.md", content="remember the milk", **NEW)
    assert r.status_code == 201, r.text
    assert r.json()["file"]["path"] == "/memory/agent/notes.md"
    # The profile door (alpha's own) and the conversation door both show it as agent/notes.md
    shown = desk.api.show(alpha, "/profile/memory", "agent/notes.md")
    assert shown.status_code == 200, shown.text
    assert shown.json()["memory"]["content"] == "remember the milk"
    via_conv = desk.api.show(alpha, desk.run.base, "agent/notes.md")
    assert via_conv.json()["memory"]["content"] == "remember the milk"
    # And a document written through the door is a file of the mount
    assert desk.api.write(alpha, "/profile/memory", "agent/more/x.md", "x").status_code == 201
    assert desk.listed(ex, "/memory/agent", alpha) == ["/memory/agent/more/x.md", "/memory/agent/notes.md"]
    e = desk.verb(
        ex,
        "edit",
        alpha,
        path="/memory/agent/notes.md",
        old_text="milk",
        new_text="bread",
        **expect(r.json()["file"]),
    )
    assert e.status_code == 200, e.text
    assert desk.api.show(alpha, "/profile/memory", "agent/notes.md").json()["memory"]["content"] == (
        "remember the bread"
    )


def test_a_write_through_memory_user_lands_in_the_humans_user_documents(desk: Desk) -> None:
    conv = desk.api.conversation(desk.ada, desk.run.ws, memory_context=bindings(CONV, USER))
    ex = desk.started(conv=conv)
    assert desk.paths(ex) == ["/memory/user"]
    r = desk.verb(ex, "write", path="/memory/user/prefs.md", content="tea", **NEW)
    assert r.status_code == 201, r.text
    assert desk.api.show(desk.ada, "/profile/memory", "user/prefs.md").json()["memory"]["content"] == "tea"
    # A read-only binding of user/ mounts it read-only
    conv = desk.api.conversation(desk.ada, desk.run.ws, memory_context=bindings(CONV, {**USER, "access": "read"}))
    ro_ex = desk.started(conv=conv)
    assert desk.shown(ro_ex, "/memory/user/prefs.md")["content"] == "tea"
    f = r.json()["file"]
    assert code(desk.verb(ro_ex, "write", path="/memory/user/prefs.md", content="x", **expect(f))) == (
        403,
        "memory_read_only",
    )


def test_an_agents_readonly_memory_refuses_writes_through_its_server_mount(desk: Desk) -> None:
    alpha = desk.alpha
    shared = desk.memory("shared")
    assert desk.mems.attach(desk.ada, alpha.public_id, [ro(desk.notes), rw(shared)]).status_code == 200
    ex = desk.started(alpha)
    before = desk.mems.state(desk.ada, desk.notes)
    f = desk.shown(ex, "/memory/notes/guide/a.md", alpha)
    r = desk.verb(ex, "write", alpha, path="/memory/notes/guide/a.md", content="x", **expect(f))
    assert code(r) == (403, "memory_read_only")
    assert code(desk.verb(ex, "write", alpha, path="/memory/notes/b.md", content="x", **NEW)) == (
        403,
        "memory_read_only",
    )
    assert desk.mems.state(desk.ada, desk.notes) == before
    w = desk.verb(ex, "write", alpha, path="/memory/shared/s.md", content="s", **NEW)
    assert w.status_code == 201, w.text
    assert desk.mems.file(desk.ada, shared, "s.md")["written_by"]["public_id"] == alpha.public_id


def test_the_files_of_an_expired_session_are_refused(short_lived: Api) -> None:
    desk = Desk(short_lived)
    ex = desk.started(mounts=[mount(desk.notes, GOOD)])
    assert desk.listed(ex, "/") == [f"{GOOD}/guide/a.md"]
    wait_past_expiry()
    assert code(desk.verb(ex, "list", path="/")) == (409, "execution_expired")
    assert code(desk.api.get(f"/executions/{ex}/mounts", desk.ada)) == (409, "execution_expired")


# ---- the memory map ---------------------------------------------------------------------------------------


def test_a_memory_mounted_by_a_live_session_is_no_orphan(short_lived: Api) -> None:
    desk = Desk(short_lived)
    # Given an orphan Memory: nothing attaches or defaults it
    assert desk.graph()["orphans"] == [desk.notes]
    # When a session mounts it (twice: the Memory is indexed once for the session)
    ex = desk.started(mounts=[mount(desk.notes, "/workspace/a"), mount(desk.notes, "/workspace/b")])
    (row,) = mount_index()
    (account,) = [it["pk"] for it in scan_table() if it["sk"] == "ACCOUNT"]
    assert (row["pk"], row["sk"]) == (account, f"MEMMOUNT#{desk.notes}#{ex}")
    # Then it is no orphan while the session lives
    assert desk.graph()["orphans"] == []
    # A session that mounts nothing keeps nothing off the list
    desk.started(conv=desk.human_conversation())
    # And once the session expired, it is an orphan again
    wait_past_expiry()
    assert desk.graph()["orphans"] == [desk.notes]


def test_a_memory_detached_from_a_running_sessions_agent_is_no_orphan_until_the_session_ends(
    short_lived: Api,
) -> None:
    desk = Desk(short_lived)
    alpha = desk.alpha.public_id
    assert desk.mems.attach(desk.ada, alpha, [rw(desk.notes)]).status_code == 200
    assert desk.graph()["orphans"] == []
    # Given a session that mounts alpha's attachment as /memory/notes
    ex = desk.started(desk.alpha)
    assert "/memory/notes" in desk.paths(ex, desk.alpha)
    # When the attachment goes, the session still mounts it: no orphan
    assert desk.mems.attach(desk.ada, alpha, []).status_code == 200
    assert desk.graph()["orphans"] == []
    # Once it expired, nothing reaches the Memory
    wait_past_expiry()
    assert desk.graph()["orphans"] == [desk.notes]


def test_the_mount_index_carries_the_executions_expiry(desk: Desk) -> None:
    other = desk.memory("other")
    house = desk.memory("house", default={"reach": "account", "mode": "readonly"})
    r = desk.start(desk.alpha, [mount(house, "/workspace/h")])
    assert r.status_code == 201, r.text
    ex = r.json()["execution"]
    rows = mount_index()
    # The configured mount and the server mount of the same default are one row; `other` is not mounted
    assert [(row["sk"], int(row["expires_at"])) for row in rows] == [
        (f"MEMMOUNT#{house}#{ex['public_id']}", epoch(ex["expires_at"]))
    ]
    assert other not in str(rows)


def epoch(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp())


@pytest.mark.parametrize(("old", "new"), [("readWrite", "readwrite"), ("readOnly", "readonly")])
def test_a_camelcase_mount_mode_is_refused_naming_the_one_spelling(desk: Desk, old: str, new: str) -> None:
    before = executions()
    r = desk.start(mounts=[mount(desk.notes, GOOD, old)])
    refused(r, 400, "parameter_invalid", f'mounts[0].mode is spelled "{new}", not "{old}"')
    assert executions() == before
