"""file:// Git sources only under AGENT_MEMORY_GIT_FILE_ROOTS (issue 26, item 3).

Any account holder may name a repository URL, so a local one is read only when its real path (symbolic
links, '..' and /proc/self/... resolved) lies under a folder the operator named. Everything else is 422
`memory_source_unavailable` with a sentence naming the setting, and creates no Memory; with the setting
empty no file:// URL is read at all. `agent-memory serve` names <data>/git and creates it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from agent_memory.core.settings import settings
from agent_memory.edges.services import reset_services
from agent_memory_sdk.local.runtime import Storage

from ..gitrepos import bare, commit, url_of
from ..support import Api, code
from .orgmem import Memories

pytestmark = pytest.mark.http

SETTING = "AGENT_MEMORY_GIT_FILE_ROOTS"


@contextmanager
def roots(*folders: Path | str) -> Iterator[None]:
    """The in-process gateway reads file:// sources only under `folders` while the block runs."""
    old = os.environ.get(SETTING)
    os.environ[SETTING] = os.pathsep.join(str(f) for f in folders)
    settings.cache_clear()
    reset_services()
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(SETTING, None)
        else:
            os.environ[SETTING] = old
        settings.cache_clear()
        reset_services()


def create(api: Api, who: object, name: str, url: str) -> tuple[int, str | None, str]:
    r = Memories(api).create(who, name, source={"git": {"url": url}})  # type: ignore[arg-type]
    status, error = code(r)
    return status, error, r.json().get("error", {}).get("message", "") if r.status_code >= 400 else ""


def refused(api: Api, url: str) -> None:
    ada = api.account(f"acct-{os.urandom(4).hex()}", "ada")
    status, error, message = create(api, ada, "imported", url)
    assert (status, error) == (422, "memory_source_unavailable"), (url, message)
    assert SETTING in message, message
    assert Memories(api).listed(ada) == []


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path, str]:
    """A root with a repository in it, a repository outside it: (root, outside, inside_url)."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    inside = bare(root)
    commit(inside, {"a.md": b"inside\n"})
    out = bare(outside)
    commit(out, {"a.md": b"the host's secret\n"})
    return root, outside, url_of(inside)


def test_a_repository_under_a_root_is_read(api: Api, layout: tuple[Path, Path, str]) -> None:
    root, _, inside = layout
    with roots(root):
        ada = api.account()
        made = Memories(api).made(ada, "imported", source={"git": {"url": inside}})
        assert made["file_count"] == 1
        assert Memories(api).content(ada, made["memory_id"], "a.md") == "inside\n"


def test_a_repository_outside_every_root_is_refused(api: Api, layout: tuple[Path, Path, str]) -> None:
    root, outside, _ = layout
    other = outside.parent / "root-sibling"
    other.mkdir()
    with roots(root, other):
        refused(api, (outside / "origin.git").as_uri())
        refused(api, f"file://{root}/../outside/origin.git")
        refused(api, "file:///etc")


def test_a_symbolic_link_from_a_root_to_elsewhere_is_refused(api: Api, layout: tuple[Path, Path, str]) -> None:
    root, outside, _ = layout
    (root / "escape.git").symlink_to(outside / "origin.git")
    (root / "folder").symlink_to(outside)
    with roots(root):
        refused(api, f"file://{root}/escape.git")
        refused(api, f"file://{root}/folder/origin.git")


def test_the_servers_own_checkout_through_proc_self_is_refused(api: Api, layout: tuple[Path, Path, str]) -> None:
    root, _, _ = layout
    with roots(root):
        for url in ("file:///proc/self/cwd", "file:///proc/self/root/proc/self/cwd", "file:///proc/1/cwd"):
            refused(api, url)


def test_with_no_root_named_no_file_url_is_read(api: Api, layout: tuple[Path, Path, str]) -> None:
    _, _, inside = layout
    with roots():
        refused(api, inside)
        refused(api, "file:///proc/self/cwd")


def test_a_sync_is_held_to_the_roots_of_its_own_time(api: Api, layout: tuple[Path, Path, str]) -> None:
    """A Memory imported while its folder was a root is not synced once the operator drops that root."""
    root, outside, inside = layout
    with roots(root):
        ada = api.account()
        mem = Memories(api).made(ada, "imported", source={"git": {"url": inside}})["memory_id"]
    with roots(outside):
        r = api.post(f"/memories/{mem}/sync", ada)
        assert code(r) == (422, "memory_source_unavailable")
        assert SETTING in r.json()["error"]["message"]


def test_serve_names_one_folder_inside_the_data_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`agent-memory serve` (make run) reads file:// sources from <data>/git only, and creates it."""
    from agent_memory_sdk.local import runtime

    monkeypatch.delenv(SETTING, raising=False)
    data = tmp_path / "data"
    storage = Storage(data_dir=data)
    runtime.name_git_root(storage)
    assert os.environ[SETTING] == str(data / "git")
    assert (data / "git").is_dir()
    # An operator's own choice wins over the default
    monkeypatch.setenv(SETTING, "/srv/repos")
    runtime.name_git_root(storage)
    assert os.environ[SETTING] == "/srv/repos"
