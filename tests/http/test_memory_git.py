"""Git-synced Memories: import a repository's folder, re-sync as versions by the sync, read-only to everyone."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from ..gitrepos import bare, commit, url_of
from ..support import Api
from .orgmem import Memories
from .test_anthropic_memory_tool import aws_hook
from .test_rate_limit import BUDGET, metered
from .world import aws_calls

pytestmark = pytest.mark.http


@pytest.fixture
def mems(api: Api) -> Memories:
    return Memories(api)


def test_import_a_folder_then_sync_changes_as_versions_by_the_sync(api: Api, mems: Memories, tmp_path: Path) -> None:
    ada = api.account()
    repo = bare(tmp_path, "trunk")
    first = commit(
        repo,
        {"docs/deploy.md": b"# Deploy\n", "docs/ops/pager.md": b"call bob\n", "README.md": b"root\n"},
        branch="trunk",
    )
    made = mems.made(ada, "handbook", source={"git": {"url": url_of(repo), "path": "docs"}})
    assert made["source"] == "git"
    assert made["git"] == {"url": url_of(repo), "ref": "trunk", "path": "docs", "commit": first}
    assert made["file_count"] == 2
    mem = made["memory_id"]
    files = {f["path"]: f for f in mems.files(ada, mem).json()["files"]}
    assert set(files) == {"deploy.md", "ops/pager.md"}
    assert files["deploy.md"]["written_by"] == {"kind": "sync", "name": "git", "commit": first}

    second = commit(repo, {"docs/deploy.md": b"# Deploy\nship it\n", "docs/new.md": b"new\n"}, branch="trunk")
    r = api.post(f"/memories/{mem}/sync", ada)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["sync"] == {"commit": second, "changed": ["deploy.md", "new.md"], "removed": ["ops/pager.md"]}
    assert body["memory"]["git"]["commit"] == second and body["memory"]["file_count"] == 2
    versions = mems.verb(ada, mem, "versions", path="deploy.md").json()["versions"]
    assert [v["lock_version"] for v in versions] == [1, 0]
    assert [v["author"]["commit"] for v in versions] == [second, first]
    assert mems.show_file(ada, mem, "ops/pager.md").json()["error"]["code"] == "memory_not_found"
    assert mems.show_file(ada, mem, "deploy.md").json()["file"]["content"] == "# Deploy\nship it\n"

    # A sync with nothing new changes nothing.
    again = api.post(f"/memories/{mem}/sync", ada).json()["sync"]
    assert again == {"commit": second, "changed": [], "removed": []}


def test_a_git_memory_is_read_only_to_everyone_whatever_the_mode(api: Api, mems: Memories, tmp_path: Path) -> None:
    ada = api.account()
    repo = bare(tmp_path)
    commit(repo, {"a.md": b"alpha\n"})
    mem = mems.made(ada, "synced", source={"git": {"url": url_of(repo)}})["memory_id"]
    f = mems.show_file(ada, mem, "a.md").json()["file"]
    r = mems.write(ada, mem, "a.md", "changed", (f["public_id"], f["lock_version"]))
    assert r.status_code == 403 and r.json()["error"]["code"] == "memory_read_only"
    r = mems.write(ada, mem, "b.md", "new")
    assert r.status_code == 403 and r.json()["error"]["code"] == "memory_read_only"

    helper = api.agent(ada, "helper")
    attached = mems.attach(ada, helper.public_id, [{"memory_id": mem, "mode": "readwrite"}])
    assert attached.status_code == 200, attached.text
    (row,) = mems.effective(ada, helper.public_id)
    assert row["mode"] == "readonly" and row["via"] == "attachment"
    assert mems.show_file(helper, mem, "a.md").status_code == 200
    r = mems.write(helper, mem, "a.md", "changed", (f["public_id"], f["lock_version"]))
    assert r.status_code == 403 and r.json()["error"]["code"] == "memory_read_only"
    assert mems.show_file(ada, mem, "a.md").json()["file"]["content"] == "alpha\n"


@pytest.mark.parametrize(
    "url",
    ["http://example.com/repo.git", "ssh://git@example.com/repo.git", "git://example.com/r", "/srv/repo", "ftp://x/y"],
)
def test_a_source_that_is_not_https_or_file_is_refused_and_creates_nothing(api: Api, mems: Memories, url: str) -> None:
    ada = api.account()
    r = mems.create(ada, "synced", source={"git": {"url": url}})
    assert r.status_code == 422 and r.json()["error"]["code"] == "memory_source_unavailable", r.text
    assert api.get("/memories", ada).json()["memories"] == []
    # The name was never claimed.
    assert mems.create(ada, "synced").status_code == 201


def test_an_unreadable_repository_or_ref_is_refused_and_creates_nothing(
    api: Api, mems: Memories, tmp_path: Path
) -> None:
    ada = api.account()
    repo = bare(tmp_path)
    commit(repo, {"a.md": b"alpha\n"})
    for source in (
        {"url": (tmp_path / "nothing-here").as_uri()},
        {"url": url_of(repo), "ref": "no-such-branch"},
        {"url": url_of(repo), "path": "no/such/folder"},
    ):
        r = mems.create(ada, "synced", source={"git": source})
        assert r.status_code == 422 and r.json()["error"]["code"] == "memory_source_unavailable", (source, r.text)
    assert api.get("/memories", ada).json()["memories"] == []


def test_a_sync_that_cannot_read_changes_nothing(api: Api, mems: Memories, tmp_path: Path) -> None:
    ada = api.account()
    repo = bare(tmp_path)
    commit(repo, {"a.md": b"alpha\n"})
    made = mems.made(ada, "synced", source={"git": {"url": url_of(repo)}})
    mem = made["memory_id"]
    for child in sorted(Path(repo.path).rglob("*"), reverse=True):
        if child.is_file():
            child.unlink()
    r = api.post(f"/memories/{mem}/sync", ada)
    assert r.status_code == 422 and r.json()["error"]["code"] == "memory_source_unavailable", r.text
    after = mems.show(ada, mem).json()["memory"]
    assert after["git"]["commit"] == made["git"]["commit"] and after["file_count"] == 1


def test_a_native_memory_has_nothing_to_sync(api: Api, mems: Memories) -> None:
    ada = api.account()
    mem = mems.made(ada)["memory_id"]
    r = api.post(f"/memories/{mem}/sync", ada)
    assert r.status_code == 422 and r.json()["error"]["code"] == "validation_failed"


# ---- what a sync commits, and what it answers ----------------------------------------------------------


def _synced(api: Api, mems: Memories, tmp_path: Path, files: dict[str, bytes]) -> tuple[Any, Any, str]:
    ada = api.account()
    repo = bare(tmp_path)
    commit(repo, files)
    return ada, repo, mems.made(ada, "synced", source={"git": {"url": url_of(repo)}})["memory_id"]


def _as_listed(detail: dict[str, Any]) -> dict[str, Any]:
    """A Memory's detail without what only the detail adds (the agents it reaches)."""
    return {k: v for k, v in detail.items() if k != "referenced_by"}


def test_a_sync_answers_the_memory_as_it_stands_after_one_transaction(api: Api, mems: Memories, tmp_path: Path) -> None:
    ada, repo, mem = _synced(api, mems, tmp_path, {"keep.md": b"kept\n", "edit.md": b"one\n", "gone.md": b"bye\n"})
    commit(repo, {"keep.md": b"kept\n", "edit.md": b"one\ntwo\n", "new.md": b"fresh\n"})
    with aws_calls() as seen:
        r = api.post(f"/memories/{mem}/sync", ada)
    assert r.status_code == 200, r.text
    assert r.json()["sync"]["changed"] == ["edit.md", "new.md"] and r.json()["sync"]["removed"] == ["gone.md"]
    # The files and the Memory's row (its commit and revision) land in one transaction, and the answer is
    # the counter row that transaction left, without reading it back.
    assert seen["dynamodb:TransactWriteItems"] == 1, seen
    assert seen["dynamodb:BatchGetItem"] == 1, seen
    answered = r.json()["memory"]
    assert answered == _as_listed(mems.detail(ada, mem))
    assert answered["file_count"] == 3 and answered["bytesize"] == len(b"kept\none\ntwo\nfresh\n")


def test_a_sync_of_more_files_than_one_transaction_holds_lands_them_all(
    api: Api, mems: Memories, tmp_path: Path
) -> None:
    ada, repo, mem = _synced(api, mems, tmp_path, {f"f{i:02d}.md": b"v0\n" for i in range(40)})
    commit(repo, {f"f{i:02d}.md": b"v1\n" for i in range(40)})
    with aws_calls() as seen:
        r = api.post(f"/memories/{mem}/sync", ada)
    assert r.status_code == 200, r.text
    assert len(r.json()["sync"]["changed"]) == 40
    assert seen["dynamodb:TransactWriteItems"] == 2, seen
    assert r.json()["memory"] == _as_listed(mems.detail(ada, mem))
    assert {f["path"]: f["lock_version"] for f in mems.files(ada, mem).json()["files"]} == {
        f"f{i:02d}.md": 1 for i in range(40)
    }


def test_a_sync_whose_memory_changed_under_it_lands_none_of_its_files(api: Api, mems: Memories, tmp_path: Path) -> None:
    ada, repo, mem = _synced(api, mems, tmp_path, {"a.md": b"alpha\n"})
    before = mems.detail(ada, mem)
    commit(repo, {"a.md": b"alpha\nbeta\n", "b.md": b"new\n"})
    fired = threading.Event()

    def meanwhile(event_name: str, **_: Any) -> None:
        # Just before the sync commits, someone changes the Memory's description (a new revision).
        if event_name.endswith("TransactWriteItems") and not fired.is_set():
            fired.set()
            assert mems.patch(ada, mem, description="changed meanwhile").status_code == 200

    with aws_hook(meanwhile):
        r = api.post(f"/memories/{mem}/sync", ada)
    assert fired.is_set()
    assert r.status_code == 409 and r.json()["error"]["code"] == "stale_object", r.text
    after = mems.detail(ada, mem)
    assert after["git"] == before["git"] and after["file_count"] == 1
    assert mems.content(ada, mem, "a.md") == "alpha\n"
    assert [f["path"] for f in mems.files(ada, mem).json()["files"]] == ["a.md"]
    # The next sync lands the change
    again = api.post(f"/memories/{mem}/sync", ada)
    assert again.status_code == 200 and again.json()["sync"]["changed"] == ["a.md", "b.md"], again.text


def test_a_sync_past_its_callers_budget_is_refused_before_it_fetches_anything(
    api: Api, mems: Memories, tmp_path: Path
) -> None:
    ada, repo, mem = _synced(api, mems, tmp_path, {"a.md": b"alpha\n"})
    before = mems.detail(ada, mem)
    with metered("AGENT_MEMORY_WRITES_PER_MINUTE"):
        # Given a caller that has spent its budget on syncs (each counts, changed or not)
        for _ in range(BUDGET):
            assert api.post(f"/memories/{mem}/sync", ada).status_code == 200
        # and a repository that can no longer be read (a fetch would answer memory_source_unavailable)
        for child in sorted(Path(repo.path).rglob("*"), reverse=True):
            if child.is_file():
                child.unlink()
        # When it syncs again, Then the meter refuses it first: no fetch, nothing changed
        r = api.post(f"/memories/{mem}/sync", ada)
    assert r.status_code == 429 and r.json()["error"]["code"] == "rate_limited", r.text
    after = mems.detail(ada, mem)
    assert after["git"] == before["git"] and after["file_count"] == 1
