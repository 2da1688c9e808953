"""A world for the session tests: the tool world of runs.py, and Memories the answering agent mounts.

Ada stewards the program agent `alpha`, which answers the room's conversation. She creates two Memories
and attaches both to alpha: `runbooks` readwrite (so read first, and mounted /memory/runbooks readwrite)
and `reference` readonly (not read first: offered on demand at /memory/reference). Alpha's session also
configures both under /workspace: runbooks readwrite, reference readonly (configured mounts are never read
first). The server adds /memory/agent, alpha's own agent/ root.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import requests

from ..support import Who
from .orgmem import Memories, ro, rw
from .runs import Run, make_run

RUNBOOKS = "/workspace/runbooks"
REFERENCE = "/workspace/reference"


@dataclass
class Mounted:
    run: Run
    mems: Memories
    runbooks: str
    reference: str

    @property
    def alpha(self) -> Who:
        return self.run.alpha

    def session(self, mounts: Any = None) -> dict[str, Any]:
        """An execution alpha starts in its conversation, with the configured mounts (default: both)."""
        if mounts is None:
            mounts = [
                {"memory": self.runbooks, "path": RUNBOOKS, "mode": "readwrite"},
                {"memory": self.reference, "path": REFERENCE},
            ]
        return self.run.execution(capabilities=[{"ref": "memory", "config": {"mounts": mounts}}])

    def files(self, ex: dict[str, Any], verb: str, **body: Any) -> requests.Response:
        """The session's files API, as a file-tool runtime calls it."""
        return self.run.api.post(f"/executions/{ex['public_id']}/files/{verb}", self.alpha, {"file": body})

    def listed(self, ex: dict[str, Any], path: str) -> list[dict[str, Any]]:
        r = self.files(ex, "list", path=path)
        assert r.status_code == 200, r.text
        rows: list[dict[str, Any]] = r.json()["files"]
        return rows

    def file(self, mem: str, path: str) -> dict[str, Any]:
        """A Memory's file as Ada (a person, through the Memory's own door) sees it."""
        r = self.mems.show_file(self.run.ada, mem, path)
        assert r.status_code == 200, r.text
        out: dict[str, Any] = r.json()["file"]
        return out

    def paths(self, mem: str) -> list[str]:
        r = self.mems.files(self.run.ada, mem)
        assert r.status_code == 200, r.text
        return [f["path"] for f in r.json()["files"]]

    def manifest(self, ex: dict[str, Any]) -> list[dict[str, Any]]:
        return self.manifest_of(ex, self.alpha)

    def manifest_of(self, ex: dict[str, Any], who: Who | None = None) -> list[dict[str, Any]]:
        r = self.run.api.get(f"/executions/{ex['public_id']}/mounts", who or self.run.principal(ex))
        assert r.status_code == 200, r.text
        rows: list[dict[str, Any]] = r.json()["mounts"]
        return rows


def make_mounted(api: Any, *, runbooks: dict[str, str] | None = None, description: str = "house knowledge") -> Mounted:
    run = make_run(api)
    mems = Memories(api)
    files = runbooks if runbooks is not None else {"deploy.md": "# Deploy\nship on fridays\n"}
    made = mems.made(run.ada, "runbooks", files=[{"path": p, "content": c} for p, c in files.items()])
    reference = mems.made(
        run.ada, "reference", description=description, files=[{"path": "glossary.md", "content": "SLO: a target\n"}]
    )
    r = mems.attach(run.ada, run.alpha.public_id, [rw(made["memory_id"]), ro(reference["memory_id"])])
    assert r.status_code == 200, r.text
    return Mounted(run, mems, made["memory_id"], reference["memory_id"])
