"""Sessions with mounts: the memory capability's configuration, the captured mount set, and the session's
files by absolute path."""

from __future__ import annotations

from typing import Any

import pytest

from ..support import Api, Who
from .orgmem import Memories

pytestmark = pytest.mark.http


def start(api: Api, who: Who, ws: str, conv: str, mounts: Any = None, **fields: Any) -> Any:
    body: dict[str, Any] = dict(fields)
    if mounts is not None:
        body["capabilities"] = [{"ref": "memory", "config": {"mounts": mounts}}]
    return api.post(f"/workspaces/{ws}/conversations/{conv}/executions", who, {"execution": body})


def started(api: Api, who: Who, ws: str, conv: str, mounts: Any = None, **fields: Any) -> str:
    r = start(api, who, ws, conv, mounts, **fields)
    assert r.status_code == 201, r.text
    return str(r.json()["execution"]["public_id"])


def manifest(api: Api, who: Who, ex: str) -> list[dict[str, Any]]:
    r = api.get(f"/executions/{ex}/mounts", who)
    assert r.status_code == 200, r.text
    rows: list[dict[str, Any]] = r.json()["mounts"]
    return rows


def test_a_configured_mount_is_captured_and_its_files_are_reachable_by_absolute_path(api: Api) -> None:
    ada, ws, conv = api.room()
    mems = Memories(api)
    mem = mems.made(ada, "runbooks", files=[{"path": "deploy.md", "content": "# Deploy\n"}])["memory_id"]
    ex = started(api, ada, ws, conv, [{"memory": mem, "path": "/workspace/runbooks", "mode": "readwrite"}])
    rows = manifest(api, ada, ex)
    assert {
        "path": "/workspace/runbooks",
        "kind": "memory",
        "memory_id": mem,
        "name": "runbooks",
        "mode": "readwrite",
        "source": "native",
    } in rows
    # The default bindings hold no user/ root, so the server mounts no /memory/user.
    assert [r["path"] for r in rows] == ["/workspace/runbooks"]
    shown = api.post(f"/executions/{ex}/files/show", ada, {"file": {"path": "/workspace/runbooks/deploy.md"}})
    assert shown.status_code == 200, shown.text
    f = shown.json()["file"]
    assert f["path"] == "/workspace/runbooks/deploy.md" and f["content"] == "# Deploy\n"
    w = api.post(
        f"/executions/{ex}/files/write",
        ada,
        {
            "file": {
                "path": "/workspace/runbooks/deploy.md",
                "content": "# Deploy\nship\n",
                "expected_public_id": f["public_id"],
                "expected_lock_version": f["lock_version"],
            }
        },
    )
    assert w.status_code == 201, w.text
    assert mems.show_file(ada, mem, "deploy.md").json()["file"]["content"] == "# Deploy\nship\n"
    listed = api.post(f"/executions/{ex}/files/list", ada, {"file": {"path": "/"}})
    assert listed.status_code == 200, listed.text
    assert [x["path"] for x in listed.json()["files"]] == ["/workspace/runbooks/deploy.md"]
    outside = api.post(f"/executions/{ex}/files/show", ada, {"file": {"path": "/etc/passwd"}})
    assert outside.status_code == 422 and outside.json()["error"]["code"] == "memory_scope_unavailable"
