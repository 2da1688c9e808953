"""`agent-memory mount` and `agent-memory sync`, end to end: a session's mounts as real files in a temporary
directory, pushed and pulled through the local gateway with the principal's token."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from agent_memory_sdk.client import MemoryClient
from agent_memory_sdk.local import mount as module
from agent_memory_sdk.local.mount import STATE_DIR, STATE_FILE, mount, sync, watch
from agent_memory_sdk.local.runtime import LocalService

from ..gitrepos import bare, commit, url_of
from ..support import Api, Who
from .orgmem import Files, pair, ro, rw
from .test_sessions import manifest, started

pytestmark = pytest.mark.http

DEPLOY = "/workspace/runbooks/deploy.md"


@dataclass
class Session:
    api: Api
    files: Files
    ada: Who
    helper: Who
    mem: str
    handbook: str
    ex: str
    client: MemoryClient
    dir: Path

    def server(self, path: str, who: Who | None = None) -> dict[str, Any] | None:
        """A file of the session as the service has it now (None when absent)."""
        r = self.api.post(f"/executions/{self.ex}/files/show", who or self.helper, {"file": {"path": path}})
        if r.status_code == 404:
            return None
        assert r.status_code == 200, r.text
        out: dict[str, Any] = r.json()["file"]
        return out

    def disk(self, path: str) -> Path:
        return self.dir / path.lstrip("/")


@pytest.fixture
def s(api: Api, fresh: LocalService, tmp_path: Path) -> Session:
    """The agent `helper` answers in Ada's room, with runbooks (read-write) and handbook (read-only)
    attached and mounted under /workspace, and its own agent/ documents at /memory/agent."""
    ada, ws, _ = api.room()
    helper = api.agent(ada, "helper")
    api.member(ada, ws, helper)
    conv = api.conversation(ada, ws, answering_agent_public_id=helper.public_id)
    files = Files(api)
    mem = files.made(
        ada,
        "runbooks",
        files=[{"path": "deploy.md", "content": "# Deploy\n"}, {"path": "ops/pager.md", "content": "call bob\n"}],
    )["memory_id"]
    handbook = files.made(ada, "handbook", files=[{"path": "guide.md", "content": "be kind\n"}])["memory_id"]
    attached = files.attach(ada, helper.public_id, [rw(mem), ro(handbook)])
    assert attached.status_code == 200, attached.text
    ex = started(
        api,
        helper,
        ws,
        conv,
        [
            {"memory": mem, "path": "/workspace/runbooks", "mode": "readwrite"},
            {"memory": handbook, "path": "/workspace/handbook"},
        ],
    )
    return Session(api, files, ada, helper, mem, handbook, ex, MemoryClient(fresh.url, helper.token), tmp_path / "m")


def mounted(s: Session) -> None:
    report = mount(s.client, s.ex, s.dir)
    assert report.mount_status == 0, report.as_json()


def synced(s: Session, status: int = 0, keep_local: str | None = None) -> dict[str, Any]:
    report = sync(s.client, s.dir, keep_local=keep_local)
    assert report.status == status, report.as_json()
    return report.as_json()


def writable(path: Path) -> bool:
    return bool(path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def force(path: Path, text: str | None) -> None:
    """A change made on purpose despite the missing write bits (a root runtime needs no chmod at all)."""
    path.parent.chmod(0o755)
    if text is None:
        path.unlink()
    else:
        if path.exists():
            path.chmod(0o644)
        path.write_text(text)


def test_mount_materialises_every_mount_and_keeps_its_state(s: Session) -> None:
    mounted(s)
    assert s.disk(DEPLOY).read_text() == "# Deploy\n"
    assert s.disk("/workspace/runbooks/ops/pager.md").read_text() == "call bob\n"
    assert s.disk("/workspace/handbook/guide.md").read_text() == "be kind\n"
    # The attachments are mounted by the server too, and the agent's own documents (none yet) have a folder.
    assert s.disk("/memory/runbooks/deploy.md").read_text() == "# Deploy\n"
    assert s.disk("/memory/handbook/guide.md").read_text() == "be kind\n"
    assert s.disk("/memory/agent").is_dir()

    # A read-only mount's files and folders have no write bit; a read-write one's do.
    for path in ("/workspace/handbook/guide.md", "/workspace/handbook", "/memory/handbook/guide.md"):
        assert not writable(s.disk(path)), path
    assert writable(s.disk(DEPLOY)) and writable(s.disk("/workspace/runbooks/ops"))

    state = json.loads((s.dir / STATE_DIR / STATE_FILE).read_text())
    assert state["execution_id"] == s.ex
    assert state["mounts"] == manifest(s.api, s.helper, s.ex)
    files = {f["path"]: f for f in state["files"]}
    shown = s.server(DEPLOY)
    assert shown is not None
    assert files[DEPLOY] == {
        "path": DEPLOY,
        "public_id": shown["public_id"],
        "lock_version": shown["lock_version"],
        "sha256": shown["content_sha256"],
    }
    assert set(files) == {
        DEPLOY,
        "/workspace/runbooks/ops/pager.md",
        "/workspace/handbook/guide.md",
        "/memory/runbooks/deploy.md",
        "/memory/runbooks/ops/pager.md",
        "/memory/handbook/guide.md",
    }
    # Nothing changed anywhere: a sync is in sync.
    assert synced(s)["pulled"] == [] and synced(s)["pushed"] == []

    # Mounting again into the same directory, or over files mount did not pull, is refused.
    assert mount(s.client, s.ex, s.dir).mount_status == 2
    other = s.dir.parent / "other"
    (other / "workspace" / "runbooks").mkdir(parents=True)
    (other / "workspace" / "runbooks" / "mine.md").write_text("mine")
    refused = mount(s.client, s.ex, other)
    assert refused.mount_status == 2 and not (other / STATE_DIR).exists()
    assert (other / "workspace" / "runbooks" / "mine.md").read_text() == "mine"


def test_an_edit_a_new_file_and_a_deletion_are_pushed_as_the_agent(s: Session) -> None:
    mounted(s)
    s.disk(DEPLOY).write_text("# Deploy\nship it\n")
    s.disk("/workspace/runbooks/rollback.md").write_text("# Rollback\n")
    s.disk("/workspace/runbooks/ops/pager.md").unlink()
    s.disk("/memory/agent/notes.md").write_text("remember the deploy\n")

    report = synced(s)
    assert sorted((p["path"], p["operation"]) for p in report["pushed"]) == [
        ("/memory/agent/notes.md", "create"),
        (DEPLOY, "write"),
        ("/workspace/runbooks/ops/pager.md", "delete"),
        ("/workspace/runbooks/rollback.md", "create"),
    ]
    shown = s.files.file(s.ada, s.mem, "deploy.md")
    assert shown["content"] == "# Deploy\nship it\n" and shown["lock_version"] == 1
    assert shown["written_by"]["kind"] == "agent" and shown["written_by"]["public_id"] == s.helper.public_id
    assert shown["written_by"]["execution_public_id"] == s.ex
    created = s.files.file(s.ada, s.mem, "rollback.md")
    assert created["content"] == "# Rollback\n" and created["lock_version"] == 0
    assert s.files.show_file(s.ada, s.mem, "ops/pager.md").status_code == 404
    notes = s.server("/memory/agent/notes.md")
    assert notes is not None and notes["content"] == "remember the deploy\n"

    # The same Memory's other mount (/memory/runbooks, by attachment) follows in the same sync.
    assert s.disk("/memory/runbooks/deploy.md").read_text() == "# Deploy\nship it\n"
    assert s.disk("/memory/runbooks/rollback.md").read_text() == "# Rollback\n"
    assert not s.disk("/memory/runbooks/ops").exists()
    assert sorted(p["path"] for p in report["pulled"]) == [
        "/memory/runbooks/deploy.md",
        "/memory/runbooks/ops/pager.md",
        "/memory/runbooks/rollback.md",
    ]
    again = synced(s)
    assert again["pushed"] == [] and again["pulled"] == []

    # Pulled versions are the base of the next edit: a second edit is a write on lock_version 1.
    s.disk(DEPLOY).write_text("# Deploy\nship it twice\n")
    (pushed,) = synced(s)["pushed"]
    assert pushed == {"path": DEPLOY, "operation": "write", "lock_version": 2}


def test_what_others_changed_is_pulled_and_a_deletion_there_removes_the_file_here(s: Session) -> None:
    mounted(s)
    pager = s.files.file(s.ada, s.mem, "ops/pager.md")
    assert s.files.delete_file(s.ada, s.mem, "ops/pager.md", pair(pager)).status_code == 204
    deploy = s.files.file(s.ada, s.mem, "deploy.md")
    s.files.written(s.files.write(s.ada, s.mem, "deploy.md", "# Deploy v2\n", pair(deploy)))
    s.files.written(s.files.write(s.ada, s.mem, "new/hello.md", "hello\n"))
    s.files.written(
        s.files.write(s.ada, s.handbook, "guide.md", "be kinder\n", pair(s.files.file(s.ada, s.handbook, "guide.md")))
    )

    report = synced(s)
    assert report["pushed"] == []
    assert not s.disk("/workspace/runbooks/ops/pager.md").exists()
    assert not s.disk("/workspace/runbooks/ops").exists()  # the folder the deletion emptied goes too
    assert s.disk(DEPLOY).read_text() == "# Deploy v2\n"
    assert s.disk("/workspace/runbooks/new/hello.md").read_text() == "hello\n"
    # A read-only mount is pulled too, and stays read-only.
    guide = s.disk("/workspace/handbook/guide.md")
    assert guide.read_text() == "be kinder\n" and not writable(guide) and not writable(guide.parent)
    assert ("/workspace/runbooks/ops/pager.md", "delete") in [(p["path"], p["operation"]) for p in report["pulled"]]


def test_a_conflict_keeps_both_sides_and_keep_local_settles_it(s: Session) -> None:
    mounted(s)
    # Between the pull and the sync, Ada changes the file through the API, and the agent changes it here.
    theirs = s.files.written(
        s.files.write(s.ada, s.mem, "deploy.md", "# Deploy\nAda's way\n", pair(s.files.file(s.ada, s.mem, "deploy.md")))
    )
    s.disk(DEPLOY).write_text("# Deploy\nthe agent's way\n")

    report = synced(s, 1)
    assert report["conflicts"] == [
        {
            "path": DEPLOY,
            "local": "workspace/runbooks/deploy.md",
            "remote": "workspace/runbooks/deploy.md.remote",
            "reason": "changed here and on the service: --keep-local PATH keeps this side",
        }
    ]
    assert report["pushed"] == []
    # No lost write: Ada's version is the service's, the agent's is on disk, and the service's is beside it.
    assert s.disk(DEPLOY).read_text() == "# Deploy\nthe agent's way\n"
    assert s.disk(DEPLOY + ".remote").read_text() == "# Deploy\nAda's way\n"
    assert s.files.file(s.ada, s.mem, "deploy.md")["content"] == "# Deploy\nAda's way\n"
    # The other mount of the same file changed only on the service: it is simply pulled.
    assert s.disk("/memory/runbooks/deploy.md").read_text() == "# Deploy\nAda's way\n"
    # Unsettled, it stays a conflict, and the .remote file is never pushed.
    assert synced(s, 1)["conflicts"][0]["path"] == DEPLOY
    assert s.files.show_file(s.ada, s.mem, "deploy.md.remote").status_code == 404

    settled = synced(s, 0, keep_local="workspace/runbooks/deploy.md")
    assert settled["pushed"] == [
        {"path": DEPLOY, "operation": "write", "lock_version": 2, "overwrote_concurrent_edit": True}
    ]
    assert not s.disk(DEPLOY + ".remote").exists()
    shown = s.files.file(s.ada, s.mem, "deploy.md")
    assert shown["content"] == "# Deploy\nthe agent's way\n"
    history = s.files.history(s.ada, s.mem, "deploy.md")
    assert [(v["lock_version"], v["overwrote_concurrent_edit"]) for v in history] == [(2, True), (1, False), (0, False)]
    assert history[1]["public_id"] == theirs["public_id"] and history[1]["author"]["public_id"] == s.ada.public_id
    assert history[0]["author"]["public_id"] == s.helper.public_id
    ada_version = s.files.version_show(s.ada, s.mem, "deploy.md", 1).json()["version"]
    assert ada_version["content"] == "# Deploy\nAda's way\n"
    assert synced(s)["conflicts"] == []


def test_a_conflict_is_caught_by_the_write_itself(s: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    """The service's version moves after the listing: the conditional write is refused (stale_object) and the
    refusal is handled as any conflict."""
    mounted(s)
    s.disk(DEPLOY).write_text("mine\n")

    listing = module._Run.listing

    def moved_after_listing(run: Any) -> Any:
        rows = listing(run)
        if not getattr(run, "moved", False):
            run.moved = True
            shown = s.files.file(s.ada, s.mem, "deploy.md")
            s.files.written(s.files.write(s.ada, s.mem, "deploy.md", "theirs\n", pair(shown)))
        return rows

    monkeypatch.setattr(module._Run, "listing", moved_after_listing)
    report = synced(s, 1)
    assert [c["path"] for c in report["conflicts"]] == [DEPLOY]
    assert s.disk(DEPLOY).read_text() == "mine\n" and s.disk(DEPLOY + ".remote").read_text() == "theirs\n"
    assert s.files.file(s.ada, s.mem, "deploy.md")["content"] == "theirs\n"


def test_a_conflict_settles_itself_when_both_sides_agree(s: Session) -> None:
    mounted(s)
    s.files.written(s.files.write(s.ada, s.mem, "deploy.md", "agreed\n", pair(s.files.file(s.ada, s.mem, "deploy.md"))))
    s.disk(DEPLOY).write_text("mine\n")
    synced(s, 1)
    # The agent takes the service's side by copying it over: nothing to push, the .remote file goes.
    s.disk(DEPLOY).write_text(s.disk(DEPLOY + ".remote").read_text())
    report = synced(s)
    assert report["pushed"] == [] and not s.disk(DEPLOY + ".remote").exists()


def test_a_file_changed_here_and_deleted_there_is_kept_until_keep_local_writes_it_back(s: Session) -> None:
    mounted(s)
    pager = s.files.file(s.ada, s.mem, "ops/pager.md")
    assert s.files.delete_file(s.ada, s.mem, "ops/pager.md", pair(pager)).status_code == 204
    s.disk("/workspace/runbooks/ops/pager.md").write_text("call carol\n")
    (c,) = synced(s, 1)["conflicts"]
    assert c["path"] == "/workspace/runbooks/ops/pager.md" and c["remote"] is None
    assert s.disk("/workspace/runbooks/ops/pager.md").read_text() == "call carol\n"
    synced(s, 0, keep_local=str(s.disk("/workspace/runbooks/ops/pager.md")))  # an absolute PATH works too
    assert s.files.file(s.ada, s.mem, "ops/pager.md")["content"] == "call carol\n"


def test_a_file_deleted_here_and_changed_there_comes_back(s: Session) -> None:
    mounted(s)
    s.files.written(s.files.write(s.ada, s.mem, "deploy.md", "newer\n", pair(s.files.file(s.ada, s.mem, "deploy.md"))))
    s.disk(DEPLOY).unlink()
    (c,) = synced(s, 1)["conflicts"]
    assert c["path"] == DEPLOY
    assert s.disk(DEPLOY).read_text() == "newer\n"
    assert s.files.file(s.ada, s.mem, "deploy.md")["content"] == "newer\n"
    synced(s)


def test_readonly_files_are_not_writable_and_a_forced_change_is_reported_never_pushed(s: Session) -> None:
    mounted(s)
    guide = s.disk("/workspace/handbook/guide.md")
    assert stat.S_IMODE(guide.stat().st_mode) == 0o444
    assert stat.S_IMODE(guide.parent.stat().st_mode) == 0o555
    force(guide, "be unkind\n")
    force(s.disk("/workspace/handbook/extra.md"), "extra\n")
    force(s.disk("/memory/handbook/guide.md"), None)

    report = synced(s, 1)
    assert sorted((c["path"], c["change"]) for c in report["readonly_changes"]) == [
        ("/memory/handbook/guide.md", "deleted"),
        ("/workspace/handbook/extra.md", "created"),
        ("/workspace/handbook/guide.md", "modified"),
    ]
    assert report["pushed"] == []
    assert s.files.file(s.ada, s.handbook, "guide.md")["lock_version"] == 0
    assert s.files.show_file(s.ada, s.handbook, "extra.md").status_code == 404
    # The forced change is kept (nothing local is clobbered); the deleted file loses nothing and comes back;
    # and the mount is read-only again.
    assert guide.read_text() == "be unkind\n" and not writable(guide) and not writable(guide.parent)
    assert s.disk("/memory/handbook/guide.md").read_text() == "be kind\n"
    # Still unpushed on the next sync.
    assert {c["path"] for c in synced(s, 1)["readonly_changes"]} == {
        "/workspace/handbook/extra.md",
        "/workspace/handbook/guide.md",
    }


def test_a_git_synced_memory_mounted_readwrite_is_still_read_only(
    api: Api, fresh: LocalService, tmp_path: Path
) -> None:
    ada, ws, conv = api.room()
    repo = bare(tmp_path)
    commit(repo, {"a.md": b"alpha\n"})
    files = Files(api)
    mem = files.made(ada, "synced", source={"git": {"url": url_of(repo)}})["memory_id"]
    native = files.made(ada, "notes", files=[{"path": "n.md", "content": "n\n"}])["memory_id"]
    ex = started(
        api,
        ada,
        ws,
        conv,
        [
            {"memory": mem, "path": "/workspace/synced", "mode": "readwrite"},
            {"memory": native, "path": "/workspace/notes", "mode": "readwrite"},
        ],
    )
    row = manifest(api, ada, ex)[0]
    assert row["mode"] == "readonly" and row["source"] == "git"
    client = MemoryClient(fresh.url, ada.token)
    where = tmp_path / "m"
    assert mount(client, ex, where).mount_status == 0
    a = where / "workspace" / "synced" / "a.md"
    assert a.read_text() == "alpha\n" and not writable(a)
    force(a, "changed\n")
    (where / "workspace" / "notes" / "n.md").write_text("by ada\n")
    report = sync(client, where)
    assert report.status == 1
    assert report.readonly_changes == [{"path": "/workspace/synced/a.md", "change": "modified"}]
    assert [p["path"] for p in report.pushed] == ["/workspace/notes/n.md"]
    assert files.content(ada, mem, "a.md") == "alpha\n"
    # A Human's session pushes as that Human.
    written = files.file(ada, native, "n.md")
    assert written["content"] == "by ada\n" and written["written_by"]["kind"] == "human"
    assert written["written_by"]["public_id"] == ada.public_id


def test_remote_files_the_state_and_unpushable_files_are_never_pushed(s: Session) -> None:
    mounted(s)
    s.disk("/workspace/runbooks/notes.md.remote").write_text("not mine to push\n")
    (s.dir / STATE_DIR / "extra.md").write_text("nor this\n")
    s.disk("/workspace/runbooks/logo.md").write_bytes(b"\xff\xfe not text")
    s.disk("/workspace/runbooks/big.md").write_text("x" * (1024 * 1024 + 1))
    secret = s.dir.parent / "secret.md"
    secret.write_text("outside the mount\n")
    os.symlink(secret, s.disk("/workspace/runbooks/link.md"))

    report = synced(s, 1)
    assert report["pushed"] == [] and report["errors"] == []
    assert sorted(k["path"] for k in report["skipped"]) == [
        "/workspace/runbooks/big.md",
        "/workspace/runbooks/link.md",
        "/workspace/runbooks/logo.md",
    ]
    listed = {f["path"] for f in s.files.file_listing(s.ada, s.mem)}
    assert listed == {"deploy.md", "ops/pager.md"}
    # With the unpushable files gone, the .remote file alone leaves the tree in sync.
    for name in ("logo.md", "big.md", "link.md"):
        s.disk(f"/workspace/runbooks/{name}").unlink()
    synced(s)
    # A .remote file is not something to keep: --keep-local names the file itself.
    assert sync(s.client, s.dir, keep_local="workspace/runbooks/notes.md.remote").status == 2
    assert s.files.show_file(s.ada, s.mem, "notes.md.remote").status_code == 404


def test_a_lease_held_by_someone_else_leaves_the_file_unpushed(s: Session) -> None:
    mounted(s)
    assert s.files.lease(s.ada, s.mem, "deploy.md", 3).status_code == 200
    s.disk(DEPLOY).write_text("mine\n")
    (skipped,) = synced(s, 1)["skipped"]
    assert skipped["path"] == DEPLOY and "leased" in skipped["reason"]
    time.sleep(3.2)
    assert synced(s)["pushed"][0]["path"] == DEPLOY


def test_the_push_holds_a_lease_on_the_memory_file(s: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    mounted(s)
    s.disk(DEPLOY).write_text("mine\n")
    seen: list[Any] = []

    write = module._Run.write

    def while_writing(run: Any, path: str, *args: Any, **kw: Any) -> Any:
        # Another principal's write while ours is in flight is refused by the lease.
        shown = s.files.file(s.ada, s.mem, "deploy.md")
        seen.append(s.files.write(s.ada, s.mem, "deploy.md", "theirs\n", pair(shown)).json())
        return write(run, path, *args, **kw)

    monkeypatch.setattr(module._Run, "write", while_writing)
    synced(s)
    assert seen[0]["error"]["code"] == "memory_leased"
    assert s.files.file(s.ada, s.mem, "deploy.md")["content"] == "mine\n"


def test_watch_syncs_until_stopped(s: Session) -> None:
    mounted(s)
    stop = threading.Event()
    reports: list[dict[str, Any]] = []
    t = threading.Thread(
        target=watch,
        args=(s.client, s.dir),
        kwargs={"interval": 0.1, "stop": stop, "on_report": lambda r: reports.append(r.as_json())},
    )
    t.start()
    try:
        s.disk(DEPLOY).write_text("watched\n")
        deadline = time.monotonic() + 20
        while s.files.file(s.ada, s.mem, "deploy.md")["content"] != "watched\n":
            assert time.monotonic() < deadline, reports
            time.sleep(0.1)
    finally:
        stop.set()
        t.join(10)
    assert not t.is_alive()
    assert any(r["pushed"] for r in reports)


def test_the_cli_mounts_and_syncs_with_url_and_token(s: Session, fresh: LocalService) -> None:
    def cli(*args: str) -> tuple[int, dict[str, Any]]:
        done = subprocess.run(
            [sys.executable, "-m", "agent_memory_sdk.local.cli", *args, "--url", fresh.url, "--token", s.helper.token],
            capture_output=True,
            text=True,
            timeout=60,
            env={k: v for k, v in os.environ.items() if not k.startswith("AGENT_MEMORY_")},
        )
        return done.returncode, json.loads(done.stdout.splitlines()[-1])

    code, report = cli("mount", "--execution", s.ex, "--dir", str(s.dir))
    assert code == 0, report
    assert {p["path"] for p in report["pulled"]} >= {DEPLOY, "/workspace/handbook/guide.md"}
    s.disk(DEPLOY).write_text("from the cli\n")
    code, report = cli("sync", "--dir", str(s.dir))
    assert code == 0 and [p["path"] for p in report["pushed"]] == [DEPLOY], report
    assert set(report) == {"execution_id", "pulled", "pushed", "conflicts", "readonly_changes", "skipped", "errors"}
    assert s.files.file(s.ada, s.mem, "deploy.md")["content"] == "from the cli\n"
    code, report = cli("sync", "--dir", str(s.dir.parent / "nowhere"))
    assert code == 2 and report["errors"]


def test_a_read_write_mount_whose_folder_is_gone_deletes_nothing(s: Session) -> None:
    mounted(s)
    shutil.rmtree(s.disk("/workspace/runbooks"))
    report = synced(s, 2)
    assert report["errors"][0]["path"] == "/workspace/runbooks" and report["pushed"] == []
    assert {f["path"] for f in s.files.file_listing(s.ada, s.mem)} == {"deploy.md", "ops/pager.md"}
    # Created again (empty, on purpose), its files are deletions to push like any other.
    s.disk("/workspace/runbooks").mkdir()
    assert {p["operation"] for p in synced(s)["pushed"]} == {"delete"}
    assert s.files.file_listing(s.ada, s.mem) == []


def test_the_cli_watch_syncs_until_sigterm(s: Session, fresh: LocalService) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_MEMORY_")}
    env |= {"AGENT_MEMORY_URL": fresh.url, "AGENT_MEMORY_TOKEN": s.helper.token}
    args = ["mount", "--execution", s.ex, "--dir", str(s.dir), "--watch", "--interval", "0.2"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent_memory_sdk.local.cli", *args], stdout=subprocess.PIPE, text=True, env=env
    )
    # Should a line never come, the kill ends the blocked reads and the test fails instead of hanging.
    guard = threading.Timer(60, proc.kill)
    guard.start()
    try:
        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline())
        assert first["errors"] == [] and s.disk(DEPLOY).read_text() == "# Deploy\n"
        s.disk(DEPLOY).write_text("watched\n")
        line = json.loads(proc.stdout.readline())
        assert [p["path"] for p in line["pushed"]] == [DEPLOY], line
        assert s.files.file(s.ada, s.mem, "deploy.md")["content"] == "watched\n"
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(20)
        guard.cancel()
    assert code == 0
