"""Git-synced Memories: import a repository's folder, re-sync as versions by the sync, read-only to everyone."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..gitrepos import bare, commit, url_of
from ..support import Api
from .orgmem import Memories

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
